//! The rules' diagnostic codes, gathered from where each is declared: the
//! rules shared by all patterns, the shared passes, the assumption warnings,
//! and each registered pattern (`crate::registry` adds the checker's).

use super::{assumptions, passes, patterns};
use crate::diagnostics::Code;

pub fn codes() -> Vec<Code> {
    let mut codes: Vec<Code> = super::CODES.to_vec();
    codes.extend(passes::codes());
    codes.extend_from_slice(assumptions::CODES);
    for plugin in patterns::REGISTRY {
        codes.extend_from_slice(plugin.codes());
    }
    codes
}
