//! Every diagnostic code, gathered from where each is declared: the rules
//! shared by all patterns, the shared passes, the assumption warnings, and
//! each registered pattern.

use super::{assumptions, passes, patterns};
use crate::diagnostics::Code;

pub fn codes() -> Vec<Code> {
    let mut codes: Vec<Code> = super::CODES.to_vec();
    codes.extend(passes::codes());
    codes.extend_from_slice(assumptions::CODES);
    for plugin in patterns::REGISTRY {
        codes.extend_from_slice(plugin.codes());
    }
    codes.extend(crate::checker::codes());
    codes
}
