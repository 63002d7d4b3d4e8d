//! Keras `compile` + `fit` (SPEC 4.2).
//!
//! What it does: wraps the optimizer given to `compile` in
//! `hvd.DistributedOptimizer` (building it from the name when it is a
//! string), adds the broadcast and metric-averaging callbacks in front of the
//! user's, keeps file-writing callbacks on rank 0, makes `fit` and `evaluate`
//! verbose on rank 0 only, and divides `steps_per_epoch` / `validation_steps`.
//!
//! Why: Horovod averages gradients in the wrapped optimizer; every worker must
//! start from rank 0's weights; callbacks that stop training (EarlyStopping)
//! must run on every rank or the job deadlocks, while callbacks that write
//! files must not race each other.
//!
//! Example: `opt = Adam(1e-3)` -> `opt = Adam(1e-3 * hvd.size())` and
//! `opt = hvd.DistributedOptimizer(opt)` on the next line.
//!
//! Assumptions (reported when broken): the callbacks list is visible in the
//! function that calls `fit`; the model is compiled in the same module.

use crate::rules::passes::learning_rate::OPTIMIZER_NOT_FOUND;
use crate::rules::passes::loop_steps::DATASET_NOT_SHARDED;
use std::collections::HashSet;

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::analysis::training::calls_in_scope;
use crate::analysis::training::find_call;
use crate::rules::passes::sharding::shard_dataset;
use crate::rules::rewrite::ModuleRewrite;

use super::Pattern;
use crate::analysis::library::{self, LibraryClass, optimizer_for_string};
use crate::analysis::training::{ModuleAnalysis, Scope, TrainingPattern, TrainingSite};
use crate::analysis::walk::{dotted_name, for_each_statement, keyword};
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::edit::Edit;
use crate::python::parse::span;
use crate::rules::context::RewriteContext;

pub const CALLBACKS_NOT_VISIBLE: Code = Code::new(
    "DST106",
    "callbacks-not-visible",
    Severity::Warning,
    "The callbacks list is built where the tool cannot see it; callbacks that write files may run on every rank.",
);

/// Keras `compile` + `fit`.
pub struct Keras;

impl Pattern for Keras {
    fn pattern(&self) -> TrainingPattern {
        TrainingPattern::Keras
    }

    fn description(&self) -> &'static str {
        "Keras `fit`"
    }

    fn horovod_module(&self) -> &'static str {
        "horovod.tensorflow.keras"
    }

    /// A module whose only Keras code is a model's own `train_step` needs only
    /// the tape, from `horovod.tensorflow`.
    fn horovod_module_for(&self, module: &ModuleAnalysis, text: &str) -> &'static str {
        let steps = module
            .sites
            .iter()
            .filter(|site| is_model_step_tape(site, text));
        if steps.count() > 0
            && module
                .sites
                .iter()
                .all(|site| is_model_step_tape(site, text))
        {
            "horovod.tensorflow"
        } else {
            self.horovod_module()
        }
    }

    /// The tape of a Keras model's own `train_step` needs horovod.tensorflow's
    /// DistributedGradientTape.
    fn needs_horovod_tensorflow(&self, module: &ModuleAnalysis, text: &str) -> bool {
        module
            .sites
            .iter()
            .any(|site| is_model_step_tape(site, text))
    }

    fn warmup_suggestion(&self, hvd: &str) -> String {
        format!(
            "add `{hvd}.callbacks.LearningRateWarmupCallback(initial_lr=<scaled rate>, warmup_epochs=5)` to the callbacks"
        )
    }

    fn save_barrier(&self, context: &RewriteContext, _save: &ast::ExprCall) -> Option<String> {
        Some(format!(
            "{}.allreduce(0, name=\"save_barrier\")",
            context.hvd
        ))
    }

    fn codes(&self) -> &'static [Code] {
        &[CALLBACKS_NOT_VISIBLE]
    }

    fn rewrite(&self, rewrite: &mut ModuleRewrite) {
        rewrite_module(rewrite);
    }
}

/// The tape of a Keras model's own `train_step` (a `with` statement, where a
/// delegated `fit` is a call).
fn is_model_step_tape(site: &TrainingSite, text: &str) -> bool {
    site.pattern == TrainingPattern::Keras
        && site.is_model_function
        && text[site.range.clone()].starts_with("with")
}

fn rewrite_module(rewrite: &mut ModuleRewrite) {
    let module = rewrite.module;
    wrap_model_step_tapes(rewrite);
    let mut compiled: HashSet<std::ops::Range<usize>> = HashSet::new();
    for site in module
        .sites
        .iter()
        .filter(|site| site.pattern == TrainingPattern::Keras)
    {
        let scope = &module.scopes[site.scope];
        let Some((_, fit)) = find_call(scope, &site.range) else {
            continue;
        };
        let attribute = match fit.func.as_ref() {
            Expr::Attribute(attribute) if attribute.attr.as_str() == "fit" => attribute,
            // `train(model, ...)`: the model is fitted in another module.
            _ => {
                let module = rewrite.module;
                let model = fit
                    .args
                    .iter()
                    .chain(fit.keywords.iter().map(|keyword| &keyword.value))
                    .filter_map(dotted_name)
                    .find(|name| module.models[site.scope].contains(name));
                if let Some(model) = model {
                    wrap_optimizer_compiled_for(
                        rewrite,
                        site.scope,
                        &model,
                        &site.range,
                        &mut compiled,
                    );
                }
                continue;
            }
        };
        match fit.keywords.iter().find(|keyword| keyword.arg.is_none()) {
            Some(unpacked) => rewrite_unpacked_fit(rewrite, scope, fit, &unpacked.value),
            None => {
                rewrite_callbacks(rewrite, scope, fit);
                rank_zero_verbose(rewrite, fit);
                divide_steps(rewrite, scope, fit);
            }
        }
        // A fit run for a caller in another module: that module compiles the model.
        if let Some(receiver) = dotted_name(&attribute.value)
            && !site.is_model_function
        {
            wrap_optimizer_compiled_for(rewrite, site.scope, &receiver, &site.range, &mut compiled);
        }
    }
    // `evaluate` prints on rank 0 only.
    for (index, scope) in module.scopes.iter().enumerate() {
        for (_, call) in calls_in_scope(scope) {
            if let Expr::Attribute(attribute) = call.func.as_ref()
                && attribute.attr.as_str() == "evaluate"
                && let Some(receiver) = dotted_name(&attribute.value)
                && module.models[index].contains(&receiver)
            {
                rank_zero_verbose(rewrite, call);
            }
        }
    }
}

/// A model's own `train_step` computes and applies its gradients itself, so
/// the DistributedOptimizer never averages them: wrap its tape instead.
fn wrap_model_step_tapes(rewrite: &mut ModuleRewrite) {
    let module = rewrite.module;
    let Some(horovod) = rewrite.horovod_tensorflow.clone() else {
        return;
    };
    for site in module
        .sites
        .iter()
        .filter(|site| site.pattern == TrainingPattern::Keras && site.is_model_function)
    {
        let scope = &module.scopes[site.scope];
        let mut with_statement = None;
        for_each_statement(scope.body, false, &mut |stmt| {
            if span(stmt) == site.range
                && let Stmt::With(with) = stmt
            {
                with_statement = Some(with);
            }
        });
        if let Some(with) = with_statement {
            super::gradient_tape::wrap_tape(rewrite, scope, with, &horovod);
        }
    }
}

/// Wraps the optimizer `receiver.compile(...)` is given (once per compile),
/// or says that the compile is not in this module.
fn wrap_optimizer_compiled_for(
    rewrite: &mut ModuleRewrite,
    scope_index: usize,
    receiver: &str,
    site: &std::ops::Range<usize>,
    compiled: &mut HashSet<std::ops::Range<usize>>,
) {
    let compiles = find_compiles(rewrite, scope_index, receiver);
    for (compile_scope, compile) in &compiles {
        if compiled.insert(span(*compile)) {
            let module = rewrite.module;
            wrap_compiled_optimizer(rewrite, &module.scopes[*compile_scope], compile);
        }
    }
    if compiles.is_empty() {
        rewrite.diagnose(
            Diagnostic::new(
                OPTIMIZER_NOT_FOUND,
                site.clone(),
                format!("`{receiver}.compile(...)` is not in this module, so its optimizer was not wrapped in hvd.DistributedOptimizer"),
            )
            .with_suggestion(format!("compile `{receiver}` with `optimizer={}.DistributedOptimizer(<optimizer>)`", rewrite.hvd)),
        );
    }
}

/// `model.fit(data, **fit_kwargs)`: a keyword added beside the unpacked dict
/// would be given twice when the dict has it too (a TypeError). What the
/// call does not name goes into the dict instead:
/// `**{**fit_kwargs, "callbacks": [...], "verbose": ..., **({"steps_per_epoch": ...} if ... else {})}`.
fn rewrite_unpacked_fit(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    fit: &ast::ExprCall,
    unpacked: &Expr,
) {
    if rewrite.calls_horovod_attribute(unpacked, "BroadcastGlobalVariablesCallback")
        || rewrite
            .expression_text(unpacked)
            .contains("BroadcastGlobalVariablesCallback")
    {
        return;
    }
    let dict = rewrite.expression_text(unpacked).to_string();
    let dict = if matches!(
        unpacked,
        Expr::Name(_) | Expr::Attribute(_) | Expr::Subscript(_)
    ) {
        dict
    } else {
        format!("({dict})")
    };
    let quote = rewrite.stylist.quote;
    let quoted = |key: &str| format!("{quote}{key}{quote}");
    let size = rewrite.horovod_call("size");
    let test = rewrite.rank_zero_test();
    let mut entries = vec![format!("**{dict}")];
    if keyword(fit, "callbacks").is_some() {
        rewrite_callbacks(rewrite, scope, fit);
    } else {
        let [broadcast, average] = broadcast_callbacks(rewrite);
        entries.push(format!(
            "{}: [{broadcast}, {average}, *{dict}.get({}, [])]",
            quoted("callbacks"),
            quoted("callbacks")
        ));
        rewrite.diagnose(
            Diagnostic::new(CALLBACKS_NOT_VISIBLE, span(unpacked), format!("the callbacks in `{dict}` are not visible: any that write files (ModelCheckpoint, TensorBoard, CSVLogger, BackupAndRestore) will run on every rank"))
                .with_suggestion(format!("add file-writing callbacks only when `{test}`")),
        );
    }
    if keyword(fit, "verbose").is_some() {
        rank_zero_verbose(rewrite, fit);
    } else {
        entries.push(format!(
            "{}: {dict}.get({}, 1) if {test} else 0",
            quoted("verbose"),
            quoted("verbose")
        ));
    }
    for name in ["steps_per_epoch", "validation_steps"] {
        match keyword(fit, name) {
            Some(steps) => rewrite.divide_expression(&steps.value),
            None => entries.push(format!(
                "**({{{key}: max(1, {dict}[{key}] // {size})}} if {key} in {dict} and {dict}[{key}] else {{}})",
                key = quoted(name)
            )),
        }
    }
    // One entry per line, indented one level past the line of the call.
    let indentation = crate::python::source::indentation_at(rewrite.text, span(fit).start);
    let inner = format!(
        "{}{indentation}{}",
        rewrite.stylist.newline, rewrite.stylist.indent_unit
    );
    rewrite.edit(Edit::replacement(
        span(unpacked),
        format!(
            "{{{inner}{},{}{indentation}}}",
            entries.join(&format!(",{inner}")),
            rewrite.stylist.newline
        ),
    ));
}

fn broadcast_callbacks(rewrite: &ModuleRewrite) -> [String; 2] {
    [
        format!(
            "{}.callbacks.BroadcastGlobalVariablesCallback(0)",
            rewrite.hvd
        ),
        format!("{}.callbacks.MetricAverageCallback()", rewrite.hvd),
    ]
}

fn rewrite_callbacks(rewrite: &mut ModuleRewrite, scope: &Scope, fit: &ast::ExprCall) {
    let [broadcast, average] = broadcast_callbacks(rewrite);
    let Some(callbacks) = keyword(fit, "callbacks") else {
        rewrite.add_keyword(fit, "callbacks", &format!("[{broadcast}, {average}]"));
        return;
    };
    match &callbacks.value {
        Expr::List(list) => rewrite_callback_list(rewrite, scope, list),
        Expr::Name(name) => {
            let definitions = list_definitions(rewrite, scope, name.id.as_str());
            if let [list] = definitions.as_slice() {
                rewrite_callback_list(rewrite, scope, list);
                guard_writer_appends(rewrite, scope, name.id.as_str());
            } else {
                callbacks_not_visible(rewrite, &callbacks.value);
            }
        }
        other => callbacks_not_visible(rewrite, other),
    }
}

fn callbacks_not_visible(rewrite: &mut ModuleRewrite, value: &Expr) {
    if rewrite.calls_horovod_attribute(value, "BroadcastGlobalVariablesCallback") {
        return;
    }
    let [broadcast, average] = broadcast_callbacks(rewrite);
    let text = rewrite.expression_text(value).to_string();
    rewrite.edit(Edit::replacement(
        span(value),
        format!("[{broadcast}, {average}, *{text}]"),
    ));
    rewrite.diagnose(
        Diagnostic::new(
            CALLBACKS_NOT_VISIBLE,
            span(value),
            format!("the callbacks in `{text}` are built elsewhere: any that write files (ModelCheckpoint, TensorBoard, CSVLogger, BackupAndRestore) will run on every rank"),
        )
        .with_suggestion(format!("add file-writing callbacks only when `{}`", rewrite.rank_zero_test())),
    );
}

/// The list literals a name is assigned in this scope (or at top level when the scope never assigns it).
fn list_definitions<'a>(
    rewrite: &ModuleRewrite<'a>,
    scope: &Scope<'a>,
    name: &str,
) -> Vec<&'a ast::ExprList> {
    let mut definitions = Vec::new();
    let mut other_assignments = 0;
    let scopes = [scope, &rewrite.module.scopes[0]];
    for candidate in scopes {
        for_each_statement(candidate.body, false, &mut |stmt| {
            if let Stmt::Assign(assign) = stmt
                && assign.targets.iter().any(
                    |target| matches!(target, Expr::Name(target) if target.id.as_str() == name),
                )
            {
                match assign.value.as_ref() {
                    Expr::List(list) => definitions.push(list),
                    _ => other_assignments += 1,
                }
            }
        });
        if !definitions.is_empty() || other_assignments > 0 {
            break;
        }
    }
    if other_assignments > 0 {
        return Vec::new();
    }
    definitions
}

fn rewrite_callback_list(rewrite: &mut ModuleRewrite, scope: &Scope, list: &ast::ExprList) {
    let already = list.elts.iter().any(|element| {
        rewrite.calls_horovod_attribute(element, "BroadcastGlobalVariablesCallback")
    });
    if !already {
        let [broadcast, average] = broadcast_callbacks(rewrite);
        match list.elts.first() {
            None => {
                let offset = span(list).start + 1;
                rewrite
                    .sink
                    .edits
                    .push(Edit::insertion(offset, format!("{broadcast}, {average}")));
            }
            Some(first) => {
                let start = span(first).start;
                let line_start = crate::python::source::line_start(rewrite.text, start);
                let separator = if rewrite.text[line_start..start].trim().is_empty() {
                    format!(
                        "{}{}",
                        rewrite.stylist.newline,
                        &rewrite.text[line_start..start]
                    )
                } else {
                    " ".to_string()
                };
                rewrite.edit(Edit::insertion(
                    start,
                    format!("{broadcast},{separator}{average},{separator}"),
                ));
            }
        }
    }
    for element in &list.elts {
        if is_writer_callback(rewrite, scope, element) {
            let text = rewrite.expression_text(element).to_string();
            let replacement = format!("*([{text}] if {} else [])", rewrite.rank_zero_test());
            rewrite
                .sink
                .edits
                .push(Edit::replacement(span(element), replacement));
        }
    }
}

fn is_writer_callback(rewrite: &ModuleRewrite, scope: &Scope, element: &Expr) -> bool {
    let Expr::Call(call) = element else {
        return false;
    };
    matches!(
        rewrite.library_class_of_call(scope, call),
        Some(LibraryClass::Callback { writes_files: true })
    )
}

/// `callbacks.append(ModelCheckpoint(...))` runs on rank 0 only.
fn guard_writer_appends(rewrite: &mut ModuleRewrite, scope: &Scope, name: &str) {
    let mut appends = Vec::new();
    for_each_statement(scope.body, false, &mut |stmt| {
        if let Stmt::Expr(expression) = stmt
            && let Expr::Call(call) = expression.value.as_ref()
            && let Expr::Attribute(attribute) = call.func.as_ref()
            && attribute.attr.as_str() == "append"
            && matches!(attribute.value.as_ref(), Expr::Name(receiver) if receiver.id.as_str() == name)
            && call
                .args
                .first()
                .is_some_and(|argument| is_writer_callback(rewrite, scope, argument))
        {
            appends.push(stmt);
        }
    });
    for stmt in appends {
        if rewrite.owns_its_lines(&span(stmt)) && !rewrite.is_guarded(stmt) {
            rewrite.guard_statements(&[stmt]);
        }
    }
}

fn rank_zero_verbose(rewrite: &mut ModuleRewrite, call: &ast::ExprCall) {
    let test = rewrite.rank_zero_test();
    match keyword(call, "verbose") {
        Some(verbose) => {
            // Already per rank, or silent everywhere (`verbose=0`).
            let silent = matches!(&verbose.value, Expr::Constant(ast::ExprConstant { value: ast::Constant::Int(value), .. }) if value.to_string() == "0");
            if silent || rewrite.calls_horovod(&verbose.value, "rank") {
                return;
            }
            let value = &verbose.value;
            let text = rewrite.expression_text(value);
            let text = if matches!(value, Expr::IfExp(_) | Expr::Lambda(_) | Expr::NamedExpr(_)) {
                format!("({text})")
            } else {
                text.to_string()
            };
            rewrite.edit(Edit::replacement(
                span(value),
                format!("{text} if {test} else 0"),
            ));
        }
        None => {
            // `verbose` is fit's 5th and evaluate's 4th positional argument; positional use is rare.
            if call.args.len() < 4 {
                rewrite.add_keyword(call, "verbose", &format!("1 if {test} else 0"));
            }
        }
    }
}

fn divide_steps(rewrite: &mut ModuleRewrite, scope: &Scope, fit: &ast::ExprCall) {
    let mut divided = false;
    for name in ["steps_per_epoch", "validation_steps"] {
        if let Some(steps) = keyword(fit, name)
            && !matches!(
                &steps.value,
                Expr::Constant(ast::ExprConstant {
                    value: ast::Constant::None,
                    ..
                })
            )
        {
            rewrite.divide_expression(&steps.value);
            divided |= name == "steps_per_epoch";
        }
    }
    if let Some(Expr::Call(take)) = fit.args.first()
        && let Expr::Attribute(attribute) = take.func.as_ref()
        && attribute.attr.as_str() == "take"
        && let Some(count) = take.args.first()
    {
        rewrite.divide_expression(count);
        divided = true;
    }
    let shards = rewrite.text.contains(".shard(");
    if !divided
        && !shards
        && rewrite.options.shard_datasets
        && let Some(data) = fit.args.first()
        && shard_dataset(rewrite, scope, data)
    {
        return;
    }
    if !divided && !shards {
        let data = fit
            .args
            .first()
            .map(|argument| rewrite.expression_text(argument).to_string())
            .unwrap_or_else(|| "the data".into());
        rewrite.diagnose(
            Diagnostic::new(
                DATASET_NOT_SHARDED,
                span(fit),
                format!("every worker trains on all of `{data}` each epoch and no step count divides the work, so more workers bring no speed-up"),
            )
            .with_suggestion(format!(
                "shard the dataset with `.shard({0}, {1})` before batching, or pass `steps_per_epoch=<steps> // {0}`",
                rewrite.horovod_call("size"),
                rewrite.horovod_call("rank")
            )),
        );
    }
}

/// The `compile` call of a model: in the fit's scope first, then anywhere in the module.
/// Every `receiver.compile(...)` of the first scope that has one (the fit's
/// scope, the top level, then the others): a model compiled again (to
/// fine-tune with another optimizer) needs each optimizer wrapped.
fn find_compiles<'a>(
    rewrite: &ModuleRewrite<'a>,
    scope_index: usize,
    receiver: &str,
) -> Vec<(usize, &'a ast::ExprCall)> {
    let module = rewrite.module;
    let is_compile = |call: &ast::ExprCall, receiver: Option<&str>| {
        matches!(call.func.as_ref(), Expr::Attribute(attribute)
            if attribute.attr.as_str() == "compile"
                && receiver.is_none_or(|receiver| dotted_name(&attribute.value).as_deref() == Some(receiver)))
    };
    let mut order: Vec<usize> = vec![scope_index, 0];
    order.extend((0..module.scopes.len()).filter(|index| *index != scope_index && *index != 0));
    for index in order {
        let compiles: Vec<(usize, &ast::ExprCall)> = calls_in_scope(&module.scopes[index])
            .into_iter()
            .filter(|(_, call)| is_compile(call, Some(receiver)))
            .map(|(_, call)| (index, call))
            .collect();
        if !compiles.is_empty() {
            return compiles;
        }
    }
    // `model = build_model()`: the factory compiles whatever it calls the model.
    let Some(factory) = factory_scope(rewrite, scope_index, receiver) else {
        return Vec::new();
    };
    calls_in_scope(&module.scopes[factory])
        .into_iter()
        .filter(|(_, call)| is_compile(call, None))
        .map(|(_, call)| (factory, call))
        .collect()
}

/// The scope of the module-level function whose call result `receiver` is assigned from.
fn factory_scope(rewrite: &ModuleRewrite, scope_index: usize, receiver: &str) -> Option<usize> {
    let module = rewrite.module;
    let mut factory_name = None;
    for scope in [&module.scopes[scope_index], &module.scopes[0]] {
        for_each_statement(scope.body, false, &mut |stmt| {
            if let Stmt::Assign(assign) = stmt
                && assign
                    .targets
                    .iter()
                    .any(|target| dotted_name(target).as_deref() == Some(receiver))
                && let Expr::Call(call) = assign.value.as_ref()
                && let Expr::Name(function) = call.func.as_ref()
            {
                factory_name = Some(function.id.to_string());
            }
        });
        if factory_name.is_some() {
            break;
        }
    }
    let factory_name = factory_name?;
    module.scopes.iter().position(|scope| {
        scope.parent == Some(0) && scope.class.is_none() && scope.name() == factory_name
    })
}

fn wrap_compiled_optimizer(rewrite: &mut ModuleRewrite, scope: &Scope, compile: &ast::ExprCall) {
    let hvd = rewrite.hvd.clone();
    let optimizer = keyword(compile, "optimizer")
        .map(|keyword| &keyword.value)
        .or_else(|| compile.args.first());
    let Some(optimizer) = optimizer else {
        // Keras compiles with RMSprop when no optimizer is given.
        let built = build_optimizer(rewrite, "RMSprop");
        rewrite.add_keyword(
            compile,
            "optimizer",
            &format!("{hvd}.DistributedOptimizer({built})"),
        );
        return;
    };
    match optimizer {
        Expr::Constant(ast::ExprConstant {
            value: ast::Constant::Str(name),
            ..
        }) => match optimizer_for_string(name) {
            Some(class) => {
                let built = build_optimizer(rewrite, class);
                rewrite.edit(Edit::replacement(
                    span(optimizer),
                    format!("{hvd}.DistributedOptimizer({built})"),
                ));
            }
            None => rewrite.diagnose(Diagnostic::new(
                OPTIMIZER_NOT_FOUND,
                span(optimizer),
                format!(
                    "unknown optimizer name {}: it was not wrapped in hvd.DistributedOptimizer",
                    rewrite.expression_text(optimizer)
                ),
            )),
        },
        Expr::Call(call) if rewrite.calls_horovod_attribute(&call.func, "DistributedOptimizer") => {
        }
        // `optimizer=opt` or `optimizer=self.optimizer`: wrap where it is built,
        // so that the name the user keeps is the optimizer that trains.
        Expr::Name(_) | Expr::Attribute(_) if dotted_name(optimizer).is_some() => {
            let name = dotted_name(optimizer).unwrap_or_default();
            let name = name.as_str();
            let assignments = optimizer_assignments(rewrite, scope, name);
            let already_wrapped = assignments
                .iter()
                .any(|(_, value)| rewrite.calls_horovod_attribute(value, "DistributedOptimizer"));
            if already_wrapped {
                return;
            }
            let constructions: Vec<&Stmt> = assignments
                .iter()
                .filter(|(_, value)| matches!(value, Expr::Call(call) if is_optimizer_construction(rewrite, scope, call)))
                .map(|(stmt, _)| *stmt)
                .collect();
            if let ([construction], 1) = (constructions.as_slice(), assignments.len())
                && rewrite.owns_its_lines(&span(*construction))
            {
                rewrite.insert_after_statement(
                    &span(*construction),
                    &[format!("{name} = {hvd}.DistributedOptimizer({name})")],
                );
            } else {
                wrap_inline(rewrite, optimizer);
            }
        }
        other => wrap_inline(rewrite, other),
    }
}

fn wrap_inline(rewrite: &mut ModuleRewrite, optimizer: &Expr) {
    let range = span(optimizer);
    rewrite.edit(Edit::insertion(
        range.start,
        format!("{}.DistributedOptimizer(", rewrite.hvd),
    ));
    rewrite.edit(Edit::insertion(range.end, ")"));
}

fn is_optimizer_construction(rewrite: &ModuleRewrite, scope: &Scope, call: &ast::ExprCall) -> bool {
    if matches!(
        rewrite.library_class_of_call(scope, call),
        Some(LibraryClass::Optimizer(_))
    ) {
        return true;
    }
    crate::analysis::training::callee_name(
        rewrite.analysis.package,
        rewrite.module.module,
        scope,
        &call.func,
    )
    .is_some_and(|callee| {
        rewrite
            .analysis
            .package
            .is_subclass(&callee, library::KERAS_OPTIMIZER)
    })
}

/// Assignments to `name` in the scope, or at top level when the scope has none.
fn optimizer_assignments<'a>(
    rewrite: &ModuleRewrite<'a>,
    scope: &Scope<'a>,
    name: &str,
) -> Vec<(&'a Stmt, &'a Expr)> {
    for candidate in [scope, &rewrite.module.scopes[0]] {
        let mut found = Vec::new();
        for_each_statement(candidate.body, false, &mut |stmt| {
            if let Stmt::Assign(assign) = stmt
                && assign
                    .targets
                    .iter()
                    .any(|target| dotted_name(target).is_some_and(|target| target == name))
            {
                found.push((stmt, assign.value.as_ref()));
            }
        });
        if !found.is_empty()
            || candidate
                .parameters
                .iter()
                .any(|parameter| parameter == name)
        {
            return found;
        }
    }
    Vec::new()
}

/// `tf.keras.optimizers.Adam(learning_rate=0.001 * hvd.size())` in the module's own names.
fn build_optimizer(rewrite: &ModuleRewrite, class: &str) -> String {
    let keras = rewrite
        .module
        .module
        .bindings
        .name_for("tensorflow.keras")
        .map(String::from)
        .unwrap_or_else(|| format!("{}.keras", rewrite.tf));
    let default = library::KERAS_OPTIMIZERS
        .iter()
        .find(|(name, _)| *name == class)
        .map_or("0.001", |(_, default)| default);
    // With eager execution off, `compile(optimizer="adam")` builds a legacy
    // optimizer; the TF 2.11+ one fails there (it calls `.numpy()`).
    let legacy = if disables_eager_execution(rewrite) {
        "legacy."
    } else {
        ""
    };
    format!(
        "{keras}.optimizers.{legacy}{class}(learning_rate={default} * {})",
        rewrite.horovod_call("size")
    )
}

/// Whether the module turns graph mode on (`tf.compat.v1.disable_eager_execution()`,
/// `disable_v2_behavior()`).
fn disables_eager_execution(rewrite: &ModuleRewrite) -> bool {
    rewrite.module.scopes.iter().any(|scope| {
        calls_in_scope(scope).into_iter().any(|(_, call)| {
            scope.bindings.resolve(&call.func).is_some_and(|callee| {
                matches!(
                    library::canonical_name(&callee).as_str(),
                    "tensorflow.disable_eager_execution" | "tensorflow.disable_v2_behavior"
                )
            })
        })
    })
}
