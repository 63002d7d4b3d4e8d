//! Environment episodes: a loop that steps an environment (`env.step`)
//! ends with the episode, at a different step on each worker, so training
//! steps taken once per environment step would not pair up across workers.
//! For the loop-steps pass and the Keras refusals.

use rustpython_parser::ast::{self, Expr, Stmt};

use super::loop_steps::STEPS_DIFFER_PER_WORKER;
use crate::analysis::walk::{dotted_name, walk_statement_expressions};
use crate::diagnostics::Diagnostic;
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

/// Whether a `while` loop steps an environment (`env.step(action)`) in its
/// own body, not in a loop nested in it: it ends with the episode. A loop
/// whose episodes run in a nested loop trains once per episode instead.
pub fn steps_an_environment(while_loop: &ast::StmtWhile) -> bool {
    body_steps_an_environment(&while_loop.body)
}

/// Whether a loop ends with the episode of an environment it steps: a
/// `while` loop that steps one in its own body, or a `for` loop over a
/// step budget that does and leaves at a `break` (`if done: break`).
pub fn ends_with_an_episode(loop_statement: &Stmt) -> bool {
    match loop_statement {
        Stmt::While(while_loop) => steps_an_environment(while_loop),
        Stmt::For(for_loop) => {
            body_steps_an_environment(&for_loop.body)
                && !crate::analysis::walk::loop_breaks(&for_loop.body).is_empty()
        }
        _ => false,
    }
}

/// Whether a loop steps an environment anywhere in it, nested loops
/// included: the data it gathers differs per worker.
pub fn steps_an_environment_within(loop_statement: &Stmt) -> bool {
    statements_step_an_environment(std::slice::from_ref(loop_statement))
}

/// Whether statements step an environment anywhere in them.
pub fn statements_step_an_environment(statements: &[Stmt]) -> bool {
    let mut found = false;
    crate::analysis::walk::for_each_statement(statements, false, &mut |stmt| {
        found |= crate::analysis::walk::calls_in_statement(stmt)
            .into_iter()
            .any(is_environment_step);
    });
    found
}

fn body_steps_an_environment(body: &[Stmt]) -> bool {
    fn steps(body: &[Stmt]) -> bool {
        body.iter().any(|stmt| {
            let mut found = false;
            walk_statement_expressions(stmt, &mut |expr| {
                found |= matches!(expr, Expr::Call(call) if is_environment_step(call));
            });
            found
                || match stmt {
                    Stmt::If(node) => steps(&node.body) || steps(&node.orelse),
                    Stmt::With(node) => steps(&node.body),
                    Stmt::Try(node) => {
                        steps(&node.body)
                            || steps(&node.orelse)
                            || steps(&node.finalbody)
                            || node.handlers.iter().any(|handler| {
                                let ast::ExceptHandler::ExceptHandler(handler) = handler;
                                steps(&handler.body)
                            })
                    }
                    _ => false,
                }
        })
    }
    steps(body)
}

/// DST126 for training steps inside an environment's episode loop.
pub fn steps_differ_per_worker(rewrite: &ModuleRewrite, episode: &Stmt) -> Diagnostic {
    let (header, at) = match episode {
        Stmt::For(for_loop) => (
            format!(
                "for {} in {}:",
                rewrite.expression_text(&for_loop.target),
                rewrite.expression_text(&for_loop.iter)
            ),
            span(for_loop.iter.as_ref()),
        ),
        Stmt::While(while_loop) => (
            format!("while {}:", rewrite.expression_text(&while_loop.test)),
            span(while_loop.test.as_ref()),
        ),
        other => (String::from("the loop"), span(other)),
    };
    Diagnostic::new(
        STEPS_DIFFER_PER_WORKER,
        at,
        format!("training steps run once per environment step in `{header}`, which ends with the episode: each worker's episodes last differently, so a gradient allreduce per step would pair steps of different episodes and the worker that finishes first would leave the others waiting; this module was left as written"),
    )
    .with_suggestion("train a fixed number of steps per episode or per iteration (from a replay buffer, outside the environment loop), which the tool can divide, then run the tool again")
}

/// `env.step(action)`: a call of `step` on a receiver named as an environment.
fn is_environment_step(call: &ast::ExprCall) -> bool {
    matches!(call.func.as_ref(), Expr::Attribute(attribute)
        if attribute.attr.as_str() == "step"
            && dotted_name(&attribute.value)
                .is_some_and(|receiver| receiver.to_lowercase().contains("env")))
}

pub use crate::analysis::walk::runs_as_the_loop_ends;
