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
use crate::analysis::package::Symbol;
use crate::analysis::training::Scope;
use crate::analysis::walk::{expression_shape, walk_expression};
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

pub const RATE_CHANGER_ELSEWHERE: Code = Code::new(
    "DST127",
    "rate-changer-elsewhere",
    Severity::Warning,
    "A callback class defined in another module of the package sets absolute learning rates, which undo their scaling by the number of workers; that module is not rewritten.",
);

pub const HORIZON_DIVIDED: Code = Code::new(
    "DST133",
    "rate-horizon-divided",
    Severity::Info,
    "A callback class of the module that sets the learning rate is built with a count computed from the epochs of a fit whose epochs are divided among the workers (a one-cycle policy's total steps): the count is divided as the epochs are, so the schedule runs to its end.",
);

pub const HORIZON_UNKNOWN: Code = Code::new(
    "DST134",
    "rate-horizon-unknown",
    Severity::Warning,
    "A callback class of the module that sets the learning rate is built with counts that nothing ties to the epochs of a fit whose epochs are divided: if one is the length of training, its schedule stops part-way.",
);

pub const CODES: &[Code] = &[
    RATE_CHANGER_SCALED,
    RATE_CHANGER_ELSEWHERE,
    HORIZON_DIVIDED,
    HORIZON_UNKNOWN,
];

pub fn run(rewrite: &mut ModuleRewrite) {
    if rewrite.had_horovod {
        return;
    }
    // A schedule feeding only fits whose work is split is scaled with their
    // optimizers' rates, even where other fits of the module stay whole.
    let every_fit_split = !rewrite.learning_rates.work_not_split();
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
            if let (true, Some(schedule)) = (is_scheduler, schedule)
                && (every_fit_split || feeds_only_split_fits(rewrite, site))
            {
                scale_schedule(rewrite, schedule);
            }
        }
    }
    if !every_fit_split {
        return;
    }
    for stmt in &module.module.body {
        if let Stmt::ClassDef(class) = stmt
            && is_keras_callback(rewrite, class)
        {
            scale_rates_set_by_callback(rewrite, class);
            divide_horizons(rewrite, class);
        }
    }
    warn_rate_setting_callbacks_elsewhere(rewrite);
}

/// Whether a callback built by `site` (`lr_schedule = LearningRateScheduler(...)`)
/// is in the callbacks of some Keras fits, the name's binding they see, and
/// all of them have their work split.
fn feeds_only_split_fits(rewrite: &ModuleRewrite, site: &crate::analysis::index::CallSite) -> bool {
    let module = rewrite.module;
    let bound = match site.statement {
        Stmt::Assign(assign) if span(assign.value.as_ref()) == span(site.call) => {
            match assign.targets.as_slice() {
                [Expr::Name(name)] => Some(name.id.as_str()),
                _ => return false,
            }
        }
        _ => None,
    };
    let mut fits = Vec::new();
    for training in &module.sites {
        let scope = &module.scopes[training.scope];
        let Some((_, fit)) = crate::analysis::training::find_call(scope, &training.range) else {
            continue;
        };
        let Some(Expr::List(callbacks)) =
            crate::analysis::walk::keyword(fit, "callbacks").map(|keyword| &keyword.value)
        else {
            continue;
        };
        let feeds = callbacks
            .elts
            .iter()
            .any(|callback| match (callback, bound) {
                (Expr::Call(inline), _) => span(inline) == span(site.call),
                (Expr::Name(name), Some(bound)) if name.id.as_str() == bound => {
                    [scope, &module.scopes[0]]
                        .into_iter()
                        .find_map(|candidate| {
                            candidate.facts.assignment_before(bound, span(fit).start)
                        })
                        .is_some_and(|assignment| {
                            span(assignment.statement) == span(site.statement)
                        })
                }
                _ => false,
            });
        if feeds {
            fits.push(training.range.clone());
        }
    }
    !fits.is_empty() && !rewrite.learning_rates.rate_stays_for(Some(&fits))
}

/// A callback class that sets the rate, built with a count computed from
/// the epochs of a fit whose epochs were divided (a one-cycle policy's
/// total steps, `epochs * steps_per_epoch`, or the epochs themselves): each
/// worker trains 1/N of those epochs, so the count is divided as they were,
/// or its schedule would stop part-way, near its peak rate.
fn divide_horizons(rewrite: &mut ModuleRewrite, class: &ast::StmtClassDef) {
    if !sets_learning_rate(rewrite.text, class) {
        return;
    }
    if rewrite.learning_rates.fits_with_divided_epochs.is_empty() {
        return;
    }
    let epochs = divided_epochs(rewrite);
    let module = rewrite.module;
    for scope in &module.scopes {
        for site in &scope.facts.calls {
            if !matches!(site.call.func.as_ref(), Expr::Name(name) if name.id.as_str() == class.name.as_str())
            {
                continue;
            }
            let arguments: Vec<&Expr> = site
                .call
                .args
                .iter()
                .chain(site.call.keywords.iter().map(|keyword| &keyword.value))
                .collect();
            let counts: Vec<&Expr> = arguments
                .iter()
                .copied()
                .filter(|argument| counts_from_epochs(scope, argument, &epochs))
                .collect();
            for count in &counts {
                rewrite.divide_expression(count);
                rewrite.diagnose(Diagnostic::new(
                    HORIZON_DIVIDED,
                    span(*count),
                    format!("`{}` sets the learning rate over a count computed from the epochs of a fit whose epochs are divided among the workers: the count is divided too, so its schedule runs to its end", class.name),
                ));
            }
            if counts.is_empty() && !arguments.is_empty() {
                rewrite.diagnose(
                    Diagnostic::new(
                        HORIZON_UNKNOWN,
                        span(site.call),
                        format!("`{}` sets the learning rate, and the epochs of a fit in this module are divided among the workers: if a count it is given is the length of training (in steps or epochs), each worker stops 1/N of the way through its schedule", class.name),
                    )
                    .with_suggestion(format!("divide that count by {} as the epochs are", rewrite.horovod_call("size"))),
                );
            }
        }
    }
}

/// Whether a method of the class sets the optimizer's rate; `text` is the
/// source of its module.
pub fn sets_learning_rate(text: &str, class: &ast::StmtClassDef) -> bool {
    class.body.iter().any(|stmt| {
        matches!(stmt, Stmt::FunctionDef(method) if !rates_set(text, &method.body).is_empty())
    })
}

/// The shapes of the epochs of the module's fits whose epochs were divided.
fn divided_epochs(rewrite: &ModuleRewrite) -> Vec<String> {
    let fits = &rewrite.learning_rates.fits_with_divided_epochs;
    rewrite
        .module
        .scopes
        .iter()
        .flat_map(|scope| scope.facts.calls.iter())
        .filter(|site| fits.contains(&span(site.call)))
        .filter_map(|site| {
            crate::analysis::walk::keyword(site.call, "epochs")
                .map(|keyword| &keyword.value)
                .or_else(|| site.call.args.get(3))
        })
        .filter(|epochs| !matches!(epochs, Expr::Constant(_)))
        .map(expression_shape)
        .collect()
}

/// Whether an argument holds one of the epoch counts, written in it or in
/// the value of the name it is (`total_steps = epochs * steps_per_epoch`).
fn counts_from_epochs(scope: &Scope, argument: &Expr, epochs: &[String]) -> bool {
    let holds = |expr: &Expr| {
        let mut found = false;
        walk_expression(expr, &mut |inner| {
            found |= epochs.contains(&expression_shape(inner));
        });
        found
    };
    if holds(argument) {
        return true;
    }
    let Expr::Name(name) = argument else {
        return false;
    };
    scope
        .facts
        .assignments
        .iter()
        .filter(|assignment| assignment.name.as_str() == name.id.as_str())
        .any(|assignment| holds(assignment.value))
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

/// Whether an expression names an optimizer's rate (`self.model.optimizer.lr`);
/// `text` is the source of its module.
fn names_learning_rate(text: &str, target: &Expr) -> bool {
    let target = &text[span(target)];
    target.contains("optimizer") && (target.ends_with(".lr") || target.ends_with(".learning_rate"))
}

/// The values a callback's method sets the optimizer's rate to:
/// `set_value(<rate>, value)`, `<rate>.assign(value)`, `<rate> = value`.
fn rates_set<'a>(text: &str, body: &'a [Stmt]) -> Vec<&'a Expr> {
    let mut values = Vec::new();
    crate::analysis::walk::for_each_statement(body, false, &mut |stmt| {
        if let Stmt::Assign(assign) = stmt
            && assign
                .targets
                .iter()
                .any(|target| names_learning_rate(text, target))
        {
            values.push(assign.value.as_ref());
        }
        for call in crate::analysis::walk::calls_in_statement(stmt) {
            let (method, receiver) = match call.func.as_ref() {
                Expr::Attribute(attribute) => {
                    (attribute.attr.as_str(), Some(attribute.value.as_ref()))
                }
                Expr::Name(name) => (name.id.as_str(), None),
                _ => continue,
            };
            match (method, &call.args[..], receiver) {
                ("set_value", [target, value], _) if names_learning_rate(text, target) => {
                    values.push(value);
                }
                ("assign", [value], Some(rate)) if names_learning_rate(text, rate) => {
                    values.push(value);
                }
                _ => {}
            }
        }
    });
    values
}

/// The absolute rates a callback class sets, method by method: a method
/// that also reads the current rate (`get_value`, or naming the rate more
/// often than it sets it) is relative to it and left out.
fn absolute_rates_set<'a>(text: &str, class: &'a ast::StmtClassDef) -> Vec<&'a Expr> {
    let mut absolute = Vec::new();
    for stmt in &class.body {
        let Stmt::FunctionDef(method) = stmt else {
            continue;
        };
        let values = rates_set(text, &method.body);
        let source = &text[span(stmt)];
        let mentions = source.matches("optimizer.lr").count()
            + source.matches("optimizer.learning_rate").count();
        if values.is_empty() || source.contains("get_value") || mentions > values.len() {
            continue;
        }
        absolute.extend(values);
    }
    absolute
}

/// Multiplies the absolute rates a callback class of the module sets by the
/// number of workers.
fn scale_rates_set_by_callback(rewrite: &mut ModuleRewrite, class: &ast::StmtClassDef) {
    let size = rewrite.horovod_call("size");
    for value in absolute_rates_set(rewrite.text, class) {
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

/// A callback class of another package module, constructed here, that sets
/// absolute rates: that module is not rewritten, so say where to scale.
fn warn_rate_setting_callbacks_elsewhere(rewrite: &mut ModuleRewrite) {
    let module = rewrite.module;
    let package = rewrite.analysis.package;
    for scope in &module.scopes {
        for site in &scope.facts.calls {
            let Some(callee) = rewrite.callee(scope, &site.call.func) else {
                continue;
            };
            // Through re-exports too (`from trainer import CosineCycle`).
            let Symbol::Class(defining, class) = package.resolve_symbol(&callee) else {
                continue;
            };
            let class_name = class.name.as_str();
            // A module with training sites of its own is rewritten: its
            // callback classes get their rates scaled there.
            let rewritten_too = rewrite
                .analysis
                .modules
                .iter()
                .any(|other| other.module.name == defining.name && !other.sites.is_empty());
            if defining.name == module.module.name || rewritten_too {
                continue;
            }
            let Some(first) = absolute_rates_set(&defining.source.text, class)
                .into_iter()
                .next()
            else {
                continue;
            };
            let line = defining.source.location(span(first).start).line;
            let size = rewrite.horovod_call("size");
            rewrite.diagnose(
                Diagnostic::new(
                    RATE_CHANGER_ELSEWHERE,
                    span(site.call),
                    format!("`{class_name}` ({}:{line}) sets the learning rate to absolute values, which undoes its scaling by {size}: it is in a module the rewrite does not change", defining.source.relative_path),
                )
                .with_suggestion(format!("multiply the rates `{class_name}` sets by `{size}`, as the optimizer's rate is")),
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
