//! Environment episodes: a loop that steps an environment (`env.step`)
//! ends with the episode, at a different step on each worker, so training
//! steps taken once per environment step would not pair up across workers.
//! For the loop-steps pass and the Keras refusals.

use rustpython_parser::ast::{self, Expr, Stmt};

use super::loop_steps::STEPS_DIFFER_PER_WORKER;
use crate::analysis::walk::{dotted_name, is_environment_step, walk_statement_expressions};
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
/// step budget that does and leaves at a `break` (`if done: break`), when
/// the test that stops it reads a value the loop computes (a counter it
/// only adds a constant to does not count: such episodes last alike).
pub fn ends_with_an_episode(loop_statement: &Stmt) -> bool {
    let leaves_on_its_own_values = |body: &[Stmt]| {
        crate::analysis::walk::loop_breaks(body)
            .into_iter()
            .any(|(_, test)| !test.is_some_and(|test| reads_only_outer_values(body, test)))
    };
    match loop_statement {
        Stmt::While(while_loop) => {
            steps_an_environment(while_loop)
                && (!reads_only_outer_values(&while_loop.body, &while_loop.test)
                    || leaves_on_its_own_values(&while_loop.body))
        }
        Stmt::For(for_loop) => {
            body_steps_an_environment(&for_loop.body) && leaves_on_its_own_values(&for_loop.body)
        }
        _ => false,
    }
}

/// An episode of fixed length: a `for` over a step budget or a `while` that
/// steps an environment and leaves, if at all, only on a test of its own
/// counter and values set outside it (`if j == MAX_EP_STEPS - 1: break`). Every
/// worker's episodes last as long: the episodes around it are the work.
fn is_fixed_length_episode(loop_statement: &Stmt) -> bool {
    let steps = match loop_statement {
        Stmt::For(for_loop) => body_steps_an_environment(&for_loop.body),
        Stmt::While(while_loop) => steps_an_environment(while_loop),
        _ => false,
    };
    steps && !ends_with_an_episode(loop_statement)
}

/// Whether a test reads no name the loop's body binds, but for counters it
/// only adds a constant to (`t += 1`): its value is the same on every worker
/// at the same pass (the loop's counter, a constant).
fn reads_only_outer_values(body: &[Stmt], test: &Expr) -> bool {
    let mut bound: Vec<&str> = Vec::new();
    crate::analysis::walk::for_each_statement(body, false, &mut |statement| match statement {
        Stmt::Assign(assign) => bound.extend(
            assign
                .targets
                .iter()
                .flat_map(crate::analysis::walk::target_names),
        ),
        Stmt::AugAssign(assign) if !matches!(assign.value.as_ref(), Expr::Constant(_)) => {
            bound.extend(crate::analysis::walk::target_names(&assign.target))
        }
        Stmt::AnnAssign(assign) => {
            bound.extend(crate::analysis::walk::target_names(&assign.target))
        }
        Stmt::For(inner) => bound.extend(crate::analysis::walk::target_names(&inner.target)),
        _ => {}
    });
    let mut reads_bound = false;
    crate::analysis::walk::walk_expression(test, &mut |inner| {
        if let Expr::Name(name) = inner {
            reads_bound |= bound.contains(&name.id.as_str());
        }
    });
    !reads_bound
}

/// The loop whose passes take the training step at `statement`, from the
/// loops around it, innermost last: the innermost, unless it plays one
/// episode and the step runs as the episode ends (`if done: update(); break`),
/// then the loop around the episodes (an episode's length is no work bound).
/// `Err` with the episode loop when the step runs once per environment step
/// of an episode, which ends at a different step on each worker.
pub fn loop_taking_steps<'a>(
    loops: &[&'a Stmt],
    statement: &Stmt,
) -> Option<Result<&'a Stmt, &'a Stmt>> {
    let innermost = *loops.last()?;
    for (place, &loop_statement) in loops.iter().enumerate().rev() {
        // Steps per environment step of fixed-length episodes: the loop
        // over the episodes, when there is one, holds the work.
        if is_fixed_length_episode(loop_statement) && place > 0 {
            continue;
        }
        if !ends_with_an_episode(loop_statement) {
            return Some(Ok(loop_statement));
        }
        if crate::analysis::walk::runs_as_the_loop_ends(loop_statement, statement) {
            continue;
        }
        // `if done: episodes += 1; update(...)` in a loop that goes on to
        // the next episode: one step per episode, and the loop counts them.
        return if runs_when_the_episode_ends(loop_statement, statement) {
            Some(Ok(loop_statement))
        } else {
            Some(Err(loop_statement))
        };
    }
    // One step per episode and no loop around the episodes: as written.
    Some(Ok(innermost))
}

/// Whether a loop steps an environment anywhere in it, nested loops
/// included: the data it gathers differs per worker.
pub fn steps_an_environment_within(loop_statement: &Stmt) -> bool {
    statements_step_an_environment(std::slice::from_ref(loop_statement))
}

/// Whether statements step an environment anywhere in them.
pub fn statements_step_an_environment(statements: &[Stmt]) -> bool {
    crate::analysis::walk::environment_step_in(statements).is_some()
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

/// Whether `statement` sits in an `if` of the loop's own body that tests
/// the flag its environment step says the episode ended with (`_, _, done, _
/// = env.step(a)`, then `if done:`).
fn runs_when_the_episode_ends(loop_statement: &Stmt, statement: &Stmt) -> bool {
    let body = match loop_statement {
        Stmt::While(node) => &node.body,
        Stmt::For(node) => &node.body,
        _ => return false,
    };
    let mut flags: Vec<String> = Vec::new();
    crate::analysis::walk::for_each_statement(body, false, &mut |own| {
        if let Stmt::Assign(assign) = own
            && matches!(assign.value.as_ref(), Expr::Call(call) if is_environment_step(call))
            && let [Expr::Tuple(ast::ExprTuple { elts, .. })] = assign.targets.as_slice()
        {
            // Gym's `obs, reward, done, info`, or `terminated, truncated` of five.
            let positions: &[usize] = if elts.len() == 5 { &[2, 3] } else { &[2] };
            flags.extend(
                positions
                    .iter()
                    .filter_map(|&position| elts.get(position).and_then(dotted_name)),
            );
        }
    });
    let at = span(statement);
    body.iter().any(|own| {
        let Stmt::If(choice) = own else {
            return false;
        };
        let mut tests_flag = false;
        crate::analysis::walk::walk_expression(&choice.test, &mut |inner| {
            tests_flag |= dotted_name(inner).is_some_and(|name| flags.contains(&name));
        });
        tests_flag
            && choice.body.iter().any(|inner| {
                let range = span(inner);
                range.start <= at.start && at.end <= range.end
            })
    })
}

pub use crate::analysis::walk::runs_as_the_loop_ends;
