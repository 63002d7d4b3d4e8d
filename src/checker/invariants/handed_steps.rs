//! Part of invariant 8 (collectives aligned, DST308): a function that takes
//! training steps, run from where the checker does not look: handed to
//! another call as a value (`datavis.animate(training_step, 10001)`, a
//! thread's `target=`), or called only by another module of the package (a
//! driver script's loop calling `agent.learn()`). What runs it decides how
//! often the steps run; the checker cannot show that every rank issues as
//! many allreduces as the others.

use std::collections::HashSet;

use crate::checker::{Decision, Program, Verdict};
use crate::python::parse::span;

use super::collectives_aligned::COLLECTIVES_ALIGNED;

/// An open obligation for each step function of the module handed away.
pub(super) fn steps_run_elsewhere(
    program: &Program,
    train_ops: &[String],
    step_functions: &HashSet<&str>,
) -> Vec<Decision> {
    let mut names: Vec<&str> = step_functions.iter().copied().collect();
    names.sort_unstable();
    let mut decisions = Vec::new();
    for name in &names {
        if !program.module.calls_named(name).is_empty()
            || !takes_one_step_per_call(program, train_ops, name)
        {
            continue;
        }
        // A caller that trains too is rewritten and judged with this module
        // (a loop calling another module's step function): only a caller
        // the tool leaves alone is out of sight.
        let calls = crate::analysis::train_ops::calls_from_importers(
            program.analysis,
            program.module,
            name,
        );
        if let Some((other, _, site)) = calls.iter().find(|(other, _, _)| other.sites.is_empty()) {
            let Some(at) = program
                .module
                .scopes
                .iter()
                .find(|scope| scope.name() == *name)
                .and_then(|scope| scope.range())
            else {
                continue;
            };
            let source = &other.module.source;
            decisions.push(
                Decision::new(
                    COLLECTIVES_ALIGNED,
                    Verdict::Unknown,
                    at,
                    format!("`{name}` takes training steps, and only {} calls it ({}): the checker does not judge that module's loops with this one, so it cannot show that every rank calls it as many times", source.relative_path, source.line_label(span(site.call).start)),
                )
                .with_suggestion("check by hand that the loop calling it runs the same number of times on every worker (a fixed count, not an episode's end)"),
            );
        }
    }
    for name in names {
        let is_function = program
            .module
            .scopes
            .iter()
            .any(|scope| scope.function.is_some() && scope.name() == name);
        if !is_function {
            continue;
        }
        for (scope_index, site) in crate::analysis::train_ops::calls_handed(program.module, name) {
            if !crate::analysis::train_ops::runs_it_unseen(
                program.analysis,
                program.module,
                scope_index,
                site.call,
            ) {
                continue;
            }
            let receiver = crate::analysis::walk::dotted_name(&site.call.func)
                .unwrap_or_else(|| "a call".to_string());
            let line = program.line(span(site.call).start);
            decisions.push(
                Decision::new(
                    COLLECTIVES_ALIGNED,
                    Verdict::Unknown,
                    span(site.call),
                    format!("the step function `{name}` is handed to `{receiver}` at line {line}, which decides how often it runs: the checker cannot show that every rank runs it as many times, so every allreduce has its partner"),
                )
                .with_suggestion(format!("call `{name}` from a loop of your own with a fixed count, or check by hand that `{receiver}` runs it the same number of times on every worker")),
            );
        }
    }
    decisions
}

/// Whether a function of the module takes one optimizer step per call: its
/// session run of a train op or its step call is in no loop of its own, and
/// it holds no training site (a Keras `fit` is a whole loop).
fn takes_one_step_per_call(program: &Program, train_ops: &[String], name: &str) -> bool {
    let steps = HashSet::new();
    program
        .module
        .scopes
        .iter()
        .enumerate()
        .filter(|(_, scope)| scope.function.is_some() && scope.name() == name)
        .any(|(index, scope)| {
            !program.module.sites.iter().any(|site| site.scope == index)
                && scope.facts.calls.iter().any(|site| {
                    site.enclosing_loops.is_empty()
                        && super::collectives_aligned::takes_a_step(site.call, train_ops, &steps)
                })
        })
}
