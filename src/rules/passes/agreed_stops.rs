//! A training loop that stops on a metric each worker computes for itself
//! (`if kl > 1.5 * target_kl: break`, `if running_reward > 195: break`):
//! the workers would stop at different iterations, and those still running
//! would wait forever in their next gradient allreduce. The metric is
//! averaged across the workers where the loop tests it
//! (`hvd.allreduce(tf.cast(kl, tf.float32)) > 1.5 * target_kl`), so every
//! worker takes the same decision at the same iteration; each issues that
//! one allreduce per test, the same count on every worker.
//!
//! Input: the eager training loops of a TensorFlow 2 module (a tape's or a
//! Keras batch step's), the `break`s of their bodies. Output: the averaged
//! names and one DST136 per test. A TF1 session loop is left to the
//! checker: an allreduce there is a graph op, not a value.

use std::collections::HashSet;

use rustpython_parser::ast::{Expr, Stmt};

use crate::analysis::index::CallSite;
use crate::analysis::training::TrainingPattern;
use crate::analysis::walk::{for_each_statement, loop_breaks, target_names, walk_expression};
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::edit::Edit;
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

pub const STOP_AVERAGED: Code = Code::new(
    "DST136",
    "stop-metric-averaged",
    Severity::Info,
    "A training loop stops on a metric each worker computes for itself: the metric is averaged across the workers where the loop tests it, so all stop at the same iteration instead of leaving the others waiting in an allreduce.",
);

pub const CODES: &[Code] = &[STOP_AVERAGED];

pub fn run(rewrite: &mut ModuleRewrite) {
    let eager = matches!(
        rewrite.pattern,
        TrainingPattern::GradientTape | TrainingPattern::Keras
    );
    if rewrite.had_horovod || !eager || !binds_tensorflow(rewrite) {
        return;
    }
    let module = rewrite.module;
    let step_functions: Vec<&str> = module
        .sites
        .iter()
        .filter(|site| site.scope != 0)
        .map(|site| module.scopes[site.scope].name())
        .collect();
    let mut averaged: HashSet<std::ops::Range<usize>> = HashSet::new();
    for scope in &module.scopes {
        for site in &scope.facts.calls {
            if !takes_a_step(site, &step_functions) {
                continue;
            }
            for loop_statement in &site.enclosing_loops {
                average_stops(rewrite, loop_statement, &mut averaged);
            }
        }
    }
}

/// The module names TensorFlow as the rewrite does (`tf`): the cast needs it.
fn binds_tensorflow(rewrite: &ModuleRewrite) -> bool {
    rewrite
        .module
        .module
        .bindings
        .get(&rewrite.tf)
        .is_some_and(|binding| binding.qualified == "tensorflow")
}

/// An optimizer step, a Keras batch step, or a call of a function of the
/// module that holds a training site (a tape's step function).
fn takes_a_step(site: &CallSite, step_functions: &[&str]) -> bool {
    match site.call.func.as_ref() {
        Expr::Attribute(attribute) => {
            matches!(
                attribute.attr.as_str(),
                "apply_gradients" | "train_on_batch" | "minimize"
            ) || step_functions.contains(&attribute.attr.as_str())
        }
        Expr::Name(name) => step_functions.contains(&name.id.as_str()),
        _ => false,
    }
}

fn average_stops(
    rewrite: &mut ModuleRewrite,
    loop_statement: &Stmt,
    averaged: &mut HashSet<std::ops::Range<usize>>,
) {
    let body: &[Stmt] = match loop_statement {
        Stmt::For(node) => &node.body,
        Stmt::While(node) => &node.body,
        _ => return,
    };
    let per_rank = computed_per_rank(loop_statement);
    for (_, test) in loop_breaks(body) {
        // A comparison, or several joined (`score >= goal and episode >= 100`).
        let Some(test @ (Expr::Compare(_) | Expr::BoolOp(_))) = test else {
            continue;
        };
        if !averaged.insert(span(test)) {
            continue;
        }
        let metrics = per_rank_names(test, &per_rank);
        if metrics.is_empty() {
            continue;
        }
        let (hvd, tf) = (rewrite.hvd.clone(), rewrite.tf.clone());
        let mut edits = Vec::new();
        for metric in &metrics {
            let name = rewrite.expression_text(metric).to_string();
            edits.push(Edit::replacement(
                span(*metric),
                format!("{hvd}.allreduce({tf}.cast({name}, {tf}.float32))"),
            ));
        }
        let line = rewrite
            .module
            .module
            .source
            .line_label(span(loop_statement).start);
        let names: Vec<String> = metrics
            .iter()
            .map(|metric| format!("`{}`", rewrite.expression_text(metric)))
            .collect();
        rewrite.diagnose(
            Diagnostic::new(
                STOP_AVERAGED,
                span(test),
                format!("the training loop ({line}) stops when `{}` holds, on {} each worker computes for itself: averaged across the workers where it is tested, so all stop at the same iteration", rewrite.expression_text(test), names.join(", ")),
            )
            .with_fix(edits),
        );
    }
}

/// The names in a test (not receivers of attributes or called functions)
/// that the loop computes on each worker for itself.
fn per_rank_names<'t>(test: &'t Expr, per_rank: &HashSet<String>) -> Vec<&'t Expr> {
    let mut skipped = Vec::new();
    walk_expression(test, &mut |inner| match inner {
        Expr::Attribute(attribute) => skipped.push(span(attribute.value.as_ref())),
        Expr::Call(call) => skipped.push(span(call.func.as_ref())),
        _ => {}
    });
    let mut found = Vec::new();
    walk_expression(test, &mut |inner| {
        if let Expr::Name(name) = inner
            && per_rank.contains(name.id.as_str())
            && !skipped.contains(&span(inner))
        {
            found.push(inner);
        }
    });
    found
}

/// The names a loop assigns from a call's result (a step's loss, an
/// environment's reward) or from arithmetic of such names
/// (`episode_reward += reward`). A counter advanced by a constant is the
/// same on every worker and stays out.
fn computed_per_rank(loop_statement: &Stmt) -> HashSet<String> {
    let mut updates: Vec<(Vec<String>, &Expr)> = Vec::new();
    for_each_statement(
        std::slice::from_ref(loop_statement),
        false,
        &mut |statement| match statement {
            Stmt::Assign(node) => {
                let names = node
                    .targets
                    .iter()
                    .flat_map(|target| target_names(target))
                    .map(String::from)
                    .collect();
                updates.push((names, node.value.as_ref()));
            }
            Stmt::AugAssign(node) => {
                if let Expr::Name(target) = node.target.as_ref() {
                    updates.push((vec![target.id.to_string()], node.value.as_ref()));
                }
            }
            _ => {}
        },
    );
    let mut per_rank: HashSet<String> = HashSet::new();
    loop {
        let before = per_rank.len();
        for (names, value) in &updates {
            let mut per_worker = false;
            walk_expression(value, &mut |inner| match inner {
                Expr::Call(call) => {
                    let conversion = matches!(call.func.as_ref(), Expr::Name(name)
                        if matches!(name.id.as_str(), "int" | "float" | "len" | "min" | "max" | "round" | "range" | "bool" | "str"));
                    per_worker |= !conversion;
                }
                Expr::Name(name) => per_worker |= per_rank.contains(name.id.as_str()),
                _ => {}
            });
            if per_worker {
                per_rank.extend(names.iter().cloned());
            }
        }
        if per_rank.len() == before {
            return per_rank;
        }
    }
}
