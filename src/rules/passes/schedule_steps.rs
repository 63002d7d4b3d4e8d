//! Learning-rate schedules that count optimizer steps (the catalogue's
//! `counts-steps`: `CosineDecay(rate, decay_steps)`, the boundaries of
//! `PiecewiseConstantDecay`, TF1's `exponential_decay`): once the work is
//! split each worker takes 1/N of the steps, so the count is divided too,
//! or the decay would stop part-way (near its peak rate for a one-cycle
//! policy).
//!
//! Input: the module's calls and the catalogue; runs after the split is
//! known, and only when every training loop was split. Output: the divided
//! counts and one DST130 per schedule.

use rustpython_parser::ast::Expr;

use crate::analysis::catalogue::Effect;
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

pub const SCHEDULE_STEPS_DIVIDED: Code = Code::new(
    "DST130",
    "schedule-steps-divided",
    Severity::Info,
    "A learning-rate schedule counts optimizer steps: with the work split, each worker takes 1/N of them, so its step count is divided too.",
);

pub const CODES: &[Code] = &[SCHEDULE_STEPS_DIVIDED];

pub fn run(rewrite: &mut ModuleRewrite) {
    if rewrite.learning_rates.work_not_split() || rewrite.had_horovod {
        return;
    }
    let module = rewrite.module;
    for scope in &module.scopes {
        for site in &scope.facts.calls {
            let counted = rewrite
                .catalogued_effects(scope, site.call)
                .iter()
                .find_map(|effect| match effect {
                    Effect::CountsSteps { argument } => Some(argument.clone()),
                    _ => None,
                });
            let Some(argument) = counted else {
                continue;
            };
            // An exploration rate that decays is no learning rate.
            if super::learning_rate::is_schedule_of_something_else(rewrite, site) {
                continue;
            }
            let Some(count) = argument.of(site.call) else {
                continue;
            };
            if rewrite.uses_worker_count(count) {
                continue;
            }
            let is_list = argument.keyword.as_deref() == Some("boundaries");
            match count {
                Expr::List(list) => {
                    for element in &list.elts {
                        rewrite.divide_expression(element);
                    }
                }
                // A list the tool cannot see into is left as it is.
                _ if is_list => continue,
                other => rewrite.divide_expression(other),
            }
            let text = rewrite.expression_text(count).to_string();
            rewrite.diagnose(Diagnostic::new(
                SCHEDULE_STEPS_DIVIDED,
                span(count),
                format!("`{text}` counts optimizer steps of this schedule: each worker now takes 1/N of them, so it is divided by the number of workers"),
            ));
        }
    }
}
