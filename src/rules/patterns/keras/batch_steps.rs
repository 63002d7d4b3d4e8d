//! Loops of `model.train_on_batch(...)`: GANs, reinforcement-learning
//! agents, hand-made schedules.
//!
//! What it does: wraps the optimizer each trained model is compiled with,
//! broadcasts every trained model's variables and its optimizer's from rank 0
//! once, right after the last batch step of the first iteration, and divides
//! the steps of the loop that runs them.
//!
//! Why: there is no `fit` to take Horovod's callbacks, so the broadcast
//! callback's work is done by hand, as for a GradientTape loop; the
//! optimizer's variables exist only after its first step.
//!
//! Example: `d_loss = disc.train_on_batch(x, y)` in `for step in range(n):`
//! -> `range(max(1, n // hvd.size()))` and, after the step,
//! `if not broadcast_done: hvd_tf.broadcast_variables(disc.variables, root_rank=0) ...`.
//!
//! Assumptions (reported when broken): the loop that runs the steps is in
//! this module (the step's own function, or one calling it by name).

use std::collections::HashSet;
use std::ops::Range;

use rustpython_parser::ast::{Expr, Stmt};

use crate::analysis::training::{Scope, TrainingSite, find_call};
use crate::analysis::walk::{dotted_name, is_loop, path_to};
use crate::diagnostics::Diagnostic;
use crate::python::edit::Edit;
use crate::python::parse::span;
use crate::rules::passes::broadcast::{BroadcastTargets, FlagHome, calls_by_name, place_broadcast};
use crate::rules::passes::loop_steps::{DATASET_NOT_SHARDED, divide_loop_steps};
use crate::rules::rewrite::ModuleRewrite;

/// One `receiver.train_on_batch(...)` call: its statement and receiver.
struct BatchStep<'a> {
    statement: &'a Stmt,
    receiver: String,
    range: Range<usize>,
}

/// Whether a Keras site is a batch step rather than a `fit`.
pub(super) fn is_batch_step(rewrite: &ModuleRewrite, site: &TrainingSite) -> bool {
    let scope = &rewrite.module.scopes[site.scope];
    find_call(scope, &site.range).is_some_and(|(_, call)| {
        matches!(call.func.as_ref(), Expr::Attribute(attribute)
            if attribute.attr.as_str() == crate::analysis::library::KERAS_BATCH_STEP)
    })
}

/// Rewrites the batch-step sites of one scope; `compiled` are the compiles
/// already wrapped.
pub(super) fn rewrite_batch_steps(
    rewrite: &mut ModuleRewrite,
    scope_index: usize,
    sites: &[&TrainingSite],
    compiled: &mut HashSet<Range<usize>>,
) {
    let module = rewrite.module;
    let scope = &module.scopes[scope_index];
    let steps: Vec<BatchStep> = sites
        .iter()
        .filter_map(|site| {
            let (statement, call) = find_call(scope, &site.range)?;
            let Expr::Attribute(attribute) = call.func.as_ref() else {
                return None;
            };
            Some(BatchStep {
                statement,
                receiver: dotted_name(&attribute.value)?,
                range: site.range.clone(),
            })
        })
        .collect();
    for step in &steps {
        super::wrap_optimizer_compiled_for(
            rewrite,
            scope_index,
            &step.receiver,
            &step.range,
            compiled,
        );
    }
    if rewrite.calls_method("broadcast_variables") {
        // An earlier run (or the author) broadcast the variables and split the loop.
        return;
    }
    // Steps under different outermost loops are different training loops.
    let mut groups: Vec<(Option<&Stmt>, Vec<&BatchStep>)> = Vec::new();
    for step in &steps {
        let outermost = path_to(scope.body, &span(step.statement))
            .and_then(|path| path.into_iter().find(|stmt| is_loop(stmt)));
        match groups
            .iter_mut()
            .find(|(home, _)| home.map(span) == outermost.map(span))
        {
            Some((_, members)) => members.push(step),
            None => groups.push((outermost, vec![step])),
        }
    }
    for (outermost, members) in groups {
        rewrite_training_loop(rewrite, scope, outermost, &members);
    }
}

/// One training loop of batch steps: broadcast after its last step, divide
/// the loop enclosing them all (or the caller's loop).
fn rewrite_training_loop(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    outermost: Option<&Stmt>,
    steps: &[&BatchStep],
) {
    let Some(horovod) = rewrite.horovod_tensorflow.clone() else {
        return;
    };
    let Some(last) = steps.iter().max_by_key(|step| span(step.statement).start) else {
        return;
    };
    let mut targets: Vec<BroadcastTargets> = Vec::new();
    let mut seen = HashSet::new();
    for step in steps {
        if seen.insert(step.receiver.clone()) {
            targets.push(BroadcastTargets {
                variables: format!("{}.variables", step.receiver),
                optimizer: format!("{}.optimizer", step.receiver),
            });
        }
    }
    match (outermost, scope.function) {
        (Some(outermost), _) => {
            place_broadcast(
                rewrite,
                &horovod,
                FlagHome::BeforeLoop(outermost),
                last.statement,
                &targets,
                None,
            );
            if let Some(innermost) = loop_enclosing_all(scope, steps) {
                divide_loop_steps(rewrite, innermost);
            }
        }
        (None, Some(function)) => {
            place_broadcast(
                rewrite,
                &horovod,
                FlagHome::Global(function),
                last.statement,
                &targets,
                None,
            );
            divide_caller_loop(rewrite, scope, last);
        }
        (None, None) => return report_no_loop(rewrite, last),
    }
    keep_return_after_broadcast(rewrite, last.statement);
}

/// `return model.train_on_batch(...)`: the broadcast must run before the
/// function returns, so the result is named, and returned after it.
fn keep_return_after_broadcast(rewrite: &mut ModuleRewrite, statement: &Stmt) {
    let Stmt::Return(returned) = statement else {
        return;
    };
    let Some(value) = returned.value.as_deref() else {
        return;
    };
    let name = rewrite.fresh(&["result", "step_result"]);
    rewrite.edit(Edit::replacement(
        span(statement).start..span(value).start,
        format!("{name} = "),
    ));
    // Inserted after the broadcast, which was placed after this statement first.
    rewrite.insert_after_statement(&span(statement), &[format!("return {name}")]);
}

/// The innermost loop around every step (a critic's inner loop of five
/// steps per generator step is part of one iteration, not the loop).
fn loop_enclosing_all<'a>(scope: &Scope<'a>, steps: &[&BatchStep]) -> Option<&'a Stmt> {
    let paths: Vec<Vec<&Stmt>> = steps
        .iter()
        .filter_map(|step| path_to(scope.body, &span(step.statement)))
        .collect();
    let first = paths.first()?;
    let common = first
        .iter()
        .enumerate()
        .take_while(|(depth, stmt)| {
            paths.iter().all(|path| {
                path.get(*depth)
                    .is_some_and(|other| span(*other) == span(**stmt))
            })
        })
        .count();
    first[..common]
        .iter()
        .rev()
        .find(|stmt| is_loop(stmt))
        .copied()
}

/// The step's function is called once per iteration of a loop elsewhere in
/// the module (an agent's `replay` per environment step): divide that loop.
fn divide_caller_loop(rewrite: &mut ModuleRewrite, scope: &Scope, step: &BatchStep) {
    let module = rewrite.module;
    let name = scope.name();
    let caller_loop = module.scopes.iter().find_map(|caller| {
        caller.facts.calls.iter().find_map(|site| {
            if !calls_by_name(site.call, name) || std::ptr::eq(caller, scope) {
                return None;
            }
            let path = path_to(caller.body, &span(site.statement))?;
            // A call as an episode ends (`if done: update(...); break`) is
            // one step per episode: the loop over episodes takes the steps.
            path.iter()
                .rev()
                .filter(|stmt| is_loop(stmt))
                .find(|stmt| {
                    !crate::rules::passes::episodes::runs_as_the_loop_ends(stmt, site.statement)
                })
                .copied()
        })
    });
    match caller_loop {
        Some(caller_loop) => {
            divide_loop_steps(rewrite, caller_loop);
        }
        None => {
            rewrite.learning_rates.leave_rates();
            rewrite.diagnose(Diagnostic::new(
                DATASET_NOT_SHARDED,
                step.range.clone(),
                format!("no loop of this module calls `{name}`, so the steps of the loop that does were not divided: every worker takes as many steps as one GPU did; the learning rate was left as written"),
            ).with_suggestion(format!("divide the number of iterations of the loop that calls `{name}` by `{}`", rewrite.horovod_call("size"))));
        }
    }
}

/// A batch step at module level outside any loop: one step, nothing to split.
fn report_no_loop(rewrite: &mut ModuleRewrite, step: &BatchStep) {
    rewrite.learning_rates.leave_rates();
    rewrite.diagnose(Diagnostic::new(
        DATASET_NOT_SHARDED,
        step.range.clone(),
        format!("`{}.train_on_batch` runs outside any loop, so there is no training loop to split or broadcast after", step.receiver),
    ).with_suggestion(format!("run it in a loop, broadcast `{}.variables` from rank 0 after the first step, and divide the loop's steps by `{}`", step.receiver, rewrite.horovod_call("size"))));
}
