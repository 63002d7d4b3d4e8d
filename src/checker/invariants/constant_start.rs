//! Part of invariant 3 (the initial state is shared, DST303): a custom loop
//! whose only trained variables start from constants (`W = tf.Variable(0.)`,
//! `self.b = tf.Variable(tf.zeros([10]))`) starts from the same state on
//! every rank, broadcast or not; averaged gradients keep it the same.

use rustpython_parser::ast::{Constant, Expr, UnaryOp};

use crate::analysis::training::Scope;
use crate::checker::program::ScopedCall;
use crate::checker::{Decision, Program, Verdict};

use super::state_broadcast::STATE_BROADCAST;

/// Fills of any shape that hold the same value on every rank.
const CONSTANT_FILLS: &[&str] = &[
    "tensorflow.zeros",
    "tensorflow.ones",
    "numpy.zeros",
    "numpy.ones",
];

/// Constructors whose value is their argument at `position`.
const CONSTANT_OF_ARGUMENT: &[(&str, usize)] = &[
    ("tensorflow.constant", 0),
    ("numpy.array", 0),
    ("tensorflow.fill", 1),
    ("numpy.full", 1),
];

/// Proven when every `gradient(loss, sources)` taken in the loop at
/// `loop_range` differentiates only variables made from constants.
pub(super) fn stepped_from_constants(
    program: &Program,
    calls: &[ScopedCall],
    scope: &Scope,
    loop_range: &std::ops::Range<usize>,
) -> Option<Decision> {
    let gradients: Vec<&ScopedCall> = calls
        .iter()
        .filter(|call| std::ptr::eq(call.scope, scope))
        .filter(|call| loop_range.contains(&call.range().start))
        .filter(|call| call.method() == Some("gradient"))
        .collect();
    let all_constant = !gradients.is_empty()
        && gradients.iter().all(|call| {
            call.site.call.args.get(1).is_some_and(|sources| {
                let sources = match sources {
                    Expr::List(list) => list.elts.iter().collect(),
                    Expr::Tuple(tuple) => tuple.elts.iter().collect(),
                    single => vec![single],
                };
                sources
                    .into_iter()
                    .all(|source| made_from_a_constant(program, scope, source, loop_range.start))
            })
        });
    all_constant.then(|| {
        Decision::new(
            STATE_BROADCAST,
            Verdict::Proven,
            loop_range.clone(),
            format!(
                "the loop at line {} trains only variables made from constants, which start the same on every worker",
                program.line(loop_range.start)
            ),
        )
    })
}

/// `W` last bound before `at` (in the scope or at the top level) to
/// `tf.Variable(constant)`, or `model.W` whose every assignment in the module
/// (`self.W = ...` in any scope) is one.
fn made_from_a_constant(program: &Program, scope: &Scope, source: &Expr, at: usize) -> bool {
    let top_level = &program.module.scopes[0];
    let assignments: Vec<(&Scope, &crate::analysis::index::Assignment)> = match source {
        Expr::Name(name) => [scope, top_level]
            .into_iter()
            .find_map(|scope| {
                scope
                    .facts
                    .last_assignment_before(name.id.as_str(), at)
                    .map(|assignment| (scope, assignment))
            })
            .into_iter()
            .collect(),
        Expr::Attribute(attribute) => {
            let wanted = format!(".{}", attribute.attr);
            program
                .module
                .scopes
                .iter()
                .flat_map(|scope| scope.facts.assignments.iter().map(move |a| (scope, a)))
                .filter(|(_, assignment)| assignment.name.ends_with(&wanted))
                .collect()
        }
        _ => return false,
    };
    !assignments.is_empty()
        && assignments.iter().all(|(scope, assignment)| {
            assignment.callee.as_deref() == Some("tensorflow.Variable")
                && matches!(assignment.value, Expr::Call(call)
                    if call.args.first().is_some_and(|initial| constant_value(scope, initial)))
        })
}

/// A literal number or list of them, a fill of zeros or ones, or a
/// constant made of such a value.
fn constant_value(scope: &Scope, value: &Expr) -> bool {
    match value {
        Expr::Constant(constant) => {
            matches!(constant.value, Constant::Int(_) | Constant::Float(_))
        }
        Expr::UnaryOp(unary) => {
            matches!(unary.op, UnaryOp::USub | UnaryOp::UAdd)
                && constant_value(scope, &unary.operand)
        }
        Expr::List(list) => list
            .elts
            .iter()
            .all(|element| constant_value(scope, element)),
        Expr::Tuple(tuple) => tuple
            .elts
            .iter()
            .all(|element| constant_value(scope, element)),
        Expr::Call(call) if matches!(call.func.as_ref(), Expr::Name(name) if name.id.as_str() == "float") => {
            call.args
                .first()
                .is_some_and(|argument| constant_value(scope, argument))
        }
        Expr::Call(call) => {
            let Some(callee) = scope.bindings.resolve(&call.func) else {
                return false;
            };
            let callee = crate::analysis::library::canonical_name(&callee);
            CONSTANT_FILLS.contains(&callee.as_str())
                || CONSTANT_OF_ARGUMENT.iter().any(|(constructor, position)| {
                    *constructor == callee
                        && call
                            .args
                            .get(*position)
                            .is_some_and(|argument| constant_value(scope, argument))
                })
        }
        _ => false,
    }
}
