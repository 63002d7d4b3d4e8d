//! Variables updated by hand with a gradient (`tf.assign_sub(w, rate *
//! gradient)`, `w.assign_sub(rate * grads[0])`): no optimizer or tape stands
//! between the gradient and the update, so nothing Horovod wraps averages
//! it, and each worker moves its weights by its own data's gradient.

use rustpython_parser::ast::Expr;

use super::decision;
use crate::analysis::training::Scope;
use crate::analysis::walk::walk_expression;
use crate::checker::program::ScopedCall;
use crate::checker::{Decision, Program, Verdict};
use crate::python::parse::span;

/// How many name bindings are followed back from an update's value.
const DEPTH: usize = 4;

/// What the value of an update is made from, as far as it matters here.
#[derive(Default)]
struct Origins {
    /// A gradient: `tf.gradients(...)`, `compute_gradients(...)`, or a name
    /// that says it holds one (`gradient`, `grad_w`), derived by hand.
    gradient: bool,
    /// A tape's `gradient(...)`: the tapes' own check judges it.
    tape: bool,
    /// `hvd.allreduce(...)` on the way.
    allreduced: bool,
}

pub(super) fn hand_written_updates(program: &Program, calls: &[ScopedCall]) -> Vec<Decision> {
    let mut decisions = Vec::new();
    for call in calls {
        let Some(value) = updated_value(call) else {
            continue;
        };
        if matches!(value, Expr::Constant(_)) {
            continue;
        }
        let mut origins = Origins::default();
        trace(program, call.scope, value, DEPTH, &mut origins);
        if !origins.gradient || origins.tape {
            continue;
        }
        let line = program.line(call.range().start);
        decisions.push(if origins.allreduced {
            decision(
                Verdict::Proven,
                call.range(),
                format!("the gradient of the update at line {line} is allreduced"),
            )
        } else {
            decision(
                Verdict::Violated,
                call.range(),
                format!("the variable updated by hand at line {line} moves by a gradient that nothing averages: no optimizer or tape Horovod wraps stands between the gradient and the update, so each worker's weights follow its own data"),
            )
            .with_suggestion("average the gradient with `hvd.allreduce(gradient)` before the update, or apply it with an optimizer wrapped in `hvd.DistributedOptimizer`")
        });
    }
    decisions
}

/// The value an assignment call moves a variable by or to: the second
/// argument of `tf.assign_sub(variable, value)`, the first of
/// `variable.assign_sub(value)`.
fn updated_value<'c>(call: &'c ScopedCall) -> Option<&'c Expr> {
    let method = call.method()?;
    if !matches!(method, "assign_sub" | "assign_add" | "assign") {
        return None;
    }
    let is_function = call
        .callee
        .as_deref()
        .is_some_and(|callee| callee.starts_with("tensorflow."));
    let index = usize::from(is_function);
    Program::argument(call.site.call, "value", index)
}

/// Follows the update's value back through the names it reads, each name
/// once, at most `depth` bindings deep.
fn trace(program: &Program, scope: &Scope, expr: &Expr, depth: usize, origins: &mut Origins) {
    let mut pending: Vec<(&Scope, &Expr, usize)> = vec![(scope, expr, depth)];
    let mut seen: Vec<String> = Vec::new();
    while let Some((scope, expr, depth)) = pending.pop() {
        let mut names = Vec::new();
        walk_expression(expr, &mut |inner| match inner {
            Expr::Call(call) => {
                let resolved = scope.bindings.resolve_raw(&call.func);
                let method = match call.func.as_ref() {
                    Expr::Attribute(attribute) => Some(attribute.attr.as_str()),
                    _ => None,
                };
                if resolved
                    .as_deref()
                    .is_some_and(|name| name.ends_with(".gradients"))
                    || method == Some("compute_gradients")
                {
                    origins.gradient = true;
                }
                if method == Some("gradient") {
                    origins.tape = true;
                }
                if program.calls_horovod_function(scope, inner, "allreduce") {
                    origins.allreduced = true;
                }
            }
            Expr::Name(name) => names.push((name.id.to_string(), span(inner).start)),
            _ => {}
        });
        for (name, at) in names {
            if name.to_lowercase().contains("grad") {
                origins.gradient = true;
            }
            if depth == 0 || seen.contains(&name) {
                continue;
            }
            seen.push(name.clone());
            if let Some((value, in_scope)) = program.last_binding(scope, &name, at)
                && !matches!(value, Expr::Constant(_))
            {
                pending.push((in_scope, value, depth - 1));
            }
        }
    }
}
