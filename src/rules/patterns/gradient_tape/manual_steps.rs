//! Tapes whose gradients the loop applies by hand (`W.assign_sub(rate *
//! dW)`), with no optimizer: the loop around the tape is split as a loop
//! around `apply_gradients` is, or said to be left whole with its reason (a
//! full batch every step), instead of being left whole in silence.

use rustpython_parser::ast::Expr;

use crate::analysis::training::{TrainingPattern, calls_in_scope};
use crate::analysis::walk::{is_loop, path_to};
use crate::python::parse::span;
use crate::rules::passes::loop_steps::divide_loop_steps;
use crate::rules::rewrite::ModuleRewrite;

/// Splits the innermost loop around each tape of scope `index` whose loop
/// updates variables by hand.
pub(super) fn split_manual_step_loops(rewrite: &mut ModuleRewrite, index: usize) {
    let module = rewrite.module;
    let scope = &module.scopes[index];
    let updates: Vec<std::ops::Range<usize>> = calls_in_scope(scope)
        .into_iter()
        .filter(|(_, call)| {
            matches!(call.func.as_ref(), Expr::Attribute(attribute)
                if matches!(attribute.attr.as_str(), "assign_sub" | "assign_add"))
        })
        .map(|(_, call)| span(call))
        .collect();
    let mut split = Vec::new();
    for site in module
        .sites
        .iter()
        .filter(|site| site.scope == index && site.pattern == TrainingPattern::GradientTape)
    {
        let Some(path) = path_to(scope.body, &site.range) else {
            continue;
        };
        let Some(innermost) = path.iter().rev().find(|stmt| is_loop(stmt)).copied() else {
            continue;
        };
        let around = span(innermost);
        let updated_in_loop = updates
            .iter()
            .any(|update| around.start <= update.start && update.end <= around.end);
        if updated_in_loop && !split.contains(&around) {
            split.push(around);
            divide_loop_steps(rewrite, innermost);
        }
    }
}
