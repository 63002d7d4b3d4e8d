//! Callbacks that set the learning rate to absolute values undo its scaling:
//! `LearningRateScheduler(lambda epoch: 0.01 * 0.9 ** epoch)` would put every
//! worker back on the single-GPU rate from the first epoch. A schedule of the
//! epoch alone gets its result multiplied by the number of workers; one that
//! also takes the current rate (`def step_decay(epoch, lr)`) is usually
//! relative to it and is left as written.
//!
//! Input: every call of every scope. Output: the scaled schedule with DST124.

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::analysis::library;
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::edit::Edit;
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

pub const RATE_CHANGER_SCALED: Code = Code::new(
    "DST124",
    "rate-changer-scaled",
    Severity::Info,
    "A `LearningRateScheduler` whose schedule gives absolute rates from the epoch alone gets its result multiplied by the number of workers, as the optimizer's rate is.",
);

pub const CODES: &[Code] = &[RATE_CHANGER_SCALED];

pub fn run(rewrite: &mut ModuleRewrite) {
    if rewrite.learning_rates.work_not_split || rewrite.had_horovod {
        return;
    }
    let module = rewrite.module;
    for scope in &module.scopes {
        for site in &scope.facts.calls {
            let call = site.call;
            let is_scheduler = rewrite.callee(scope, &call.func).is_some_and(|callee| {
                library::canonical_name(&callee)
                    == "tensorflow.keras.callbacks.LearningRateScheduler"
            });
            let schedule = call.args.first().or_else(|| {
                crate::analysis::walk::keyword(call, "schedule").map(|keyword| &keyword.value)
            });
            if let (true, Some(schedule)) = (is_scheduler, schedule) {
                scale_schedule(rewrite, schedule);
            }
        }
    }
}

fn scale_schedule(rewrite: &mut ModuleRewrite, schedule: &Expr) {
    let size = rewrite.horovod_call("size");
    let edit = match schedule {
        Expr::Lambda(lambda) if parameter_count(&lambda.args) == 1 => {
            if rewrite.uses_worker_count(&lambda.body) {
                return;
            }
            let body = rewrite.expression_text(&lambda.body).to_string();
            Edit::replacement(span(lambda.body.as_ref()), format!("({body}) * {size}"))
        }
        Expr::Name(name) if module_function_parameters(rewrite, name.id.as_str()) == Some(1) => {
            let parameter = rewrite.fresh(&["epoch"]);
            Edit::replacement(
                span(schedule),
                format!("lambda {parameter}: {}({parameter}) * {size}", name.id),
            )
        }
        _ => return,
    };
    rewrite.diagnose(
        Diagnostic::new(
            RATE_CHANGER_SCALED,
            span(schedule),
            format!("this schedule sets absolute rates from the epoch alone, which would undo the scaled rate: its result is multiplied by {size}"),
        )
        .with_fix(vec![edit]),
    );
}

fn parameter_count(arguments: &ast::Arguments) -> usize {
    arguments.posonlyargs.len() + arguments.args.len()
}

/// The number of positional parameters of a module-level `def name(...)`.
fn module_function_parameters(rewrite: &ModuleRewrite, name: &str) -> Option<usize> {
    match rewrite.module.module.definition(name)? {
        Stmt::FunctionDef(function) => Some(parameter_count(&function.args)),
        _ => None,
    }
}
