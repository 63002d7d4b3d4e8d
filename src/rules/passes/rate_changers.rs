//! Callbacks that set the learning rate to absolute values undo its scaling:
//! `LearningRateScheduler(lambda epoch: 0.01 * 0.9 ** epoch)` would put every
//! worker back on the single-GPU rate from the first epoch. A schedule of the
//! epoch alone gets its result multiplied by the number of workers; one that
//! also takes the current rate (`def step_decay(epoch, lr)`) is usually
//! relative to it and is left as written.
//!
//! A callback class of the module that sets the rate itself (a one-cycle
//! policy: `K.set_value(self.model.optimizer.lr, rate)`) gets the rates it
//! sets multiplied too, unless its method reads the current rate (then it is
//! relative to it).
//!
//! Input: every call of every scope, the module's classes. Output: the
//! scaled schedules and rate settings with DST124.

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
    "A `LearningRateScheduler` whose schedule gives absolute rates from the epoch alone, or a callback class of the module that sets absolute rates itself (a one-cycle policy), gets those rates multiplied by the number of workers, as the optimizer's rate is.",
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
    for stmt in &module.module.body {
        if let Stmt::ClassDef(class) = stmt
            && is_keras_callback(rewrite, class)
        {
            scale_rates_set_by_callback(rewrite, class);
        }
    }
}

fn is_keras_callback(rewrite: &ModuleRewrite, class: &ast::StmtClassDef) -> bool {
    let top_level = &rewrite.module.scopes[0];
    class.bases.iter().any(|base| {
        rewrite.callee(top_level, base).is_some_and(|name| {
            let name = library::canonical_name(&name);
            name == "tensorflow.keras.callbacks.Callback" || name == "keras.callbacks.Callback"
        })
    })
}

/// Whether an expression names an optimizer's rate (`self.model.optimizer.lr`).
fn names_learning_rate(rewrite: &ModuleRewrite, target: &Expr) -> bool {
    let text = rewrite.expression_text(target);
    text.contains("optimizer") && (text.ends_with(".lr") || text.ends_with(".learning_rate"))
}

/// The values a callback's method sets the optimizer's rate to:
/// `set_value(<rate>, value)`, `<rate>.assign(value)`, `<rate> = value`.
fn rates_set<'a>(rewrite: &ModuleRewrite, body: &'a [Stmt]) -> Vec<&'a Expr> {
    let mut values = Vec::new();
    crate::analysis::walk::for_each_statement(body, false, &mut |stmt| {
        if let Stmt::Assign(assign) = stmt
            && assign
                .targets
                .iter()
                .any(|target| names_learning_rate(rewrite, target))
        {
            values.push(assign.value.as_ref());
        }
        for call in crate::analysis::walk::calls_in_statement(stmt) {
            let Expr::Attribute(attribute) = call.func.as_ref() else {
                if let (Expr::Name(name), [target, value]) = (call.func.as_ref(), &call.args[..])
                    && name.id.as_str() == "set_value"
                    && names_learning_rate(rewrite, target)
                {
                    values.push(value);
                }
                continue;
            };
            match (attribute.attr.as_str(), &call.args[..]) {
                ("set_value", [target, value]) if names_learning_rate(rewrite, target) => {
                    values.push(value);
                }
                ("assign", [value]) if names_learning_rate(rewrite, &attribute.value) => {
                    values.push(value);
                }
                _ => {}
            }
        }
    });
    values
}

/// Multiplies the absolute rates a callback class sets by the number of
/// workers, method by method; a method that also reads the current rate
/// (`get_value`, or naming the rate more often than it sets it) is left.
fn scale_rates_set_by_callback(rewrite: &mut ModuleRewrite, class: &ast::StmtClassDef) {
    let size = rewrite.horovod_call("size");
    for stmt in &class.body {
        let Stmt::FunctionDef(method) = stmt else {
            continue;
        };
        let values = rates_set(rewrite, &method.body);
        if values.is_empty() {
            continue;
        }
        let text = rewrite.source(span(stmt));
        let mentions =
            text.matches("optimizer.lr").count() + text.matches("optimizer.learning_rate").count();
        if text.contains("get_value") || mentions > values.len() {
            continue;
        }
        for value in values {
            if rewrite.uses_worker_count(value) {
                continue;
            }
            let scaled = format!("({}) * {size}", rewrite.expression_text(value));
            rewrite.diagnose(
                Diagnostic::new(
                    RATE_CHANGER_SCALED,
                    span(value),
                    format!("this callback sets the learning rate to absolute values, which would undo the scaled rate: they are multiplied by {size}"),
                )
                .with_fix(vec![Edit::replacement(span(value), scaled)]),
            );
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
