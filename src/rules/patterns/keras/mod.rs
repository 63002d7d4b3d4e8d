//! Keras `compile` + `fit`.
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

use crate::rules::passes::fits_driven;
use crate::rules::passes::learning_rate::OPTIMIZER_NOT_FOUND;
mod array_shares;
mod batch_steps;
mod callbacks;
mod fit_split;
mod optimizer;
mod refusal;
mod warmup;

use callbacks::{rewrite_callbacks, rewrite_unpacked_fit};
pub(crate) use optimizer::find_compiles;
pub(crate) use optimizer::wrap_compiled_optimizer;

use std::collections::HashSet;

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::analysis::training::calls_in_scope;
use crate::analysis::training::find_call;
use crate::rules::rewrite::ModuleRewrite;

use super::Pattern;
use crate::analysis::training::{Analysis, ModuleAnalysis, Scope, TrainingPattern, TrainingSite};
use crate::analysis::walk::{dotted_name, keyword};
use crate::analysis::{keras_version, library};
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::edit::Edit;
use crate::python::parse::span;
use crate::rules::context::RewriteContext;

pub const WARMUP_ADDED: Code = Code::new(
    "DST132",
    "warmup-added",
    Severity::Info,
    "A fit whose learning rate is scaled gets Horovod's `LearningRateWarmupCallback`, which ramps the rate up from the single-worker value over the first epochs.",
);

pub const CALLBACKS_NOT_VISIBLE: Code = Code::new(
    "DST106",
    "callbacks-not-visible",
    Severity::Warning,
    "The callbacks list is built where the tool cannot see it; callbacks that write files may run on every rank.",
);

pub const COMPILED_FOR_EARLY_TENSORFLOW_2: Code = Code::new(
    "DST138",
    "compiled-for-early-tensorflow-2",
    Severity::Info,
    "The program runs TensorFlow 2.0 or 2.1, where Horovod's Keras optimizer averages gradients only when `compile` gets `experimental_run_tf_function=False`: it is passed.",
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

    /// A module that hands Keras a session of its own (`K.set_session(...)`)
    /// is pinned through that session's config; TF2's `tf.config` pinning
    /// as well would leave the config naming a GPU no longer visible.
    fn device_pinning_lines(
        &self,
        context: &RewriteContext,
        names: &mut super::Names,
    ) -> Vec<String> {
        if sets_keras_session(context.module) {
            return Vec::new();
        }
        super::tf2_device_pinning(context, names)
    }

    /// A module whose only Keras code is a model's own `train_step` needs only
    /// the tape, from `horovod.tensorflow`.
    fn horovod_module_for(&self, analysis: &Analysis, module: &ModuleAnalysis) -> &'static str {
        if uses_keras_2_standalone(analysis, module) {
            return "horovod.keras";
        }
        let steps = module
            .sites
            .iter()
            .filter(|site| is_model_step_tape(site, module));
        if steps.count() > 0
            && module
                .sites
                .iter()
                .all(|site| is_model_step_tape(site, module))
        {
            "horovod.tensorflow"
        } else {
            self.horovod_module()
        }
    }

    /// The tape of a Keras model's own `train_step` needs horovod.tensorflow's
    /// DistributedGradientTape. So do the broadcasts after a `train_on_batch` step (Horovod's Keras
    /// modules broadcast only through a callback or a TF1 session).
    fn needs_horovod_tensorflow(&self, module: &ModuleAnalysis, _text: &str) -> bool {
        module.sites.iter().any(|site| {
            is_model_step_tape(site, module)
                || find_call(&module.scopes[site.scope], &site.range).is_some_and(|(_, call)| {
                    matches!(call.func.as_ref(), Expr::Attribute(attribute)
                        if attribute.attr.as_str() == library::KERAS_BATCH_STEP)
                })
        })
    }

    fn warmup_suggestion(&self, hvd: &str) -> String {
        format!(
            "add `{hvd}.callbacks.LearningRateWarmupCallback(initial_lr=<scaled rate>, warmup_epochs=5)` to the callbacks of `fit`; in a `train_on_batch` loop, ramp the rate up from the single-worker value over the first epochs"
        )
    }

    fn save_barrier(&self, context: &RewriteContext, _save: &ast::ExprCall) -> Option<String> {
        Some(format!(
            "{}.allreduce(0, name=\"save_barrier\")",
            context.hvd
        ))
    }

    fn eager_barrier(&self, context: &RewriteContext, name: &str) -> Option<String> {
        Some(format!("{}.allreduce(0, name=\"{name}\")", context.hvd))
    }

    fn codes(&self) -> &'static [Code] {
        &[
            CALLBACKS_NOT_VISIBLE,
            WARMUP_ADDED,
            COMPILED_FOR_EARLY_TENSORFLOW_2,
        ]
    }

    fn refusals(&self, rewrite: &ModuleRewrite) -> Vec<Diagnostic> {
        refusal::refusals(rewrite)
    }

    fn rewrite(&self, rewrite: &mut ModuleRewrite) {
        rewrite_module(rewrite);
    }
}

/// `import keras` meaning Keras 2: Horovod's integration for it is `horovod.keras`.
pub fn uses_keras_2_standalone(analysis: &Analysis, module: &ModuleAnalysis) -> bool {
    let imports_keras = module
        .module
        .bindings
        .iter()
        .any(|(_, binding)| library::is_standalone_keras(&binding.qualified));
    let generation = keras_version::generation_of(analysis.keras_pin.as_ref(), module.module);
    imports_keras && matches!(generation, keras_version::KerasGeneration::Two { .. })
}

/// The tape of a Keras model's own `train_step` (a `with` statement, where a
/// delegated `fit` is a call).
fn is_model_step_tape(site: &TrainingSite, module: &ModuleAnalysis) -> bool {
    site.pattern == TrainingPattern::Keras
        && site.is_model_function
        && module.scopes[site.scope]
            .facts
            .statements
            .iter()
            .any(|statement| matches!(statement, Stmt::With(_)) && span(*statement) == site.range)
}

fn rewrite_module(rewrite: &mut ModuleRewrite) {
    let module = rewrite.module;
    wrap_model_step_tapes(rewrite);
    pin_own_sessions(rewrite);
    let mut compiled: HashSet<std::ops::Range<usize>> = HashSet::new();
    let (batch_steps, fits): (Vec<&TrainingSite>, Vec<&TrainingSite>) = module
        .sites
        .iter()
        .filter(|site| site.pattern == TrainingPattern::Keras)
        .partition(|site| batch_steps::is_batch_step(rewrite, site));
    rewrite_batch_steps_per_scope(rewrite, &batch_steps, &mut compiled);
    divide_steps_of_fits(rewrite, &fits);
    let fits = rewrite_parts_made_here(rewrite, fits, &mut compiled);
    for site in fits {
        let scope = &module.scopes[site.scope];
        let Some((_, fit)) = find_call(scope, &site.range) else {
            continue;
        };
        let attribute = match fit.func.as_ref() {
            Expr::Attribute(attribute)
                if crate::analysis::library::is_keras_fit_method(attribute.attr.as_str()) =>
            {
                attribute
            }
            // `train(model, ...)`: the model is fitted in another module.
            _ => {
                if let Some(model) = model_handed_over(rewrite.module, site.scope, fit) {
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
                let mut why_not = None;
                let warmup = dotted_name(&attribute.value)
                    .filter(|receiver| {
                        let fits = fits_driven::fits_of_model(rewrite, scope, receiver);
                        !rewrite.learning_rates.rate_stays_for(fits.as_deref())
                    })
                    .and_then(|receiver| {
                        warmup::warmup_callback(rewrite, site.scope, fit, &receiver, &mut why_not)
                    });
                rewrite.learning_rates.warmup_added |= warmup.is_some();
                if warmup.is_some() {
                    let epochs = rewrite.options.warmup_epochs;
                    rewrite.diagnose(Diagnostic::new(
                        WARMUP_ADDED,
                        span(fit),
                        format!("the learning rate of this fit is multiplied by hvd.size(): `LearningRateWarmupCallback` ramps it up from the single-worker rate over its first {epochs} epochs (`warmup_epochs` in the configuration; 0 turns it off)"),
                    ));
                }
                if rewrite.learning_rates.why_no_warmup.is_none() {
                    rewrite.learning_rates.why_no_warmup = why_not;
                }
                rewrite_callbacks(rewrite, scope, fit, warmup.as_deref());
                rank_zero_verbose(rewrite, fit);
            }
        }
        // A fit run for a caller in another module: that module compiles the model.
        if let Some(receiver) = dotted_name(&attribute.value)
            && !site.is_model_function
        {
            wrap_optimizer_compiled_for(rewrite, site.scope, &receiver, &site.range, &mut compiled);
        }
    }
    evaluate_verbose_on_rank_zero(rewrite);
}

/// `train(model, ...)`: the model of this scope a call hands to a fit in
/// another function or module.
pub(super) fn model_handed_over(
    module: &ModuleAnalysis,
    scope_index: usize,
    call: &ast::ExprCall,
) -> Option<String> {
    call.args
        .iter()
        .chain(call.keywords.iter().map(|keyword| &keyword.value))
        .filter_map(dotted_name)
        .find(|name| module.models[scope_index].contains(name))
}

/// `evaluate` prints on rank 0 only.
fn evaluate_verbose_on_rank_zero(rewrite: &mut ModuleRewrite) {
    let module = rewrite.module;
    for (index, scope) in module.scopes.iter().enumerate() {
        for (_, call) in calls_in_scope(scope) {
            if let Expr::Attribute(attribute) = call.func.as_ref()
                && matches!(attribute.attr.as_str(), "evaluate" | "evaluate_generator")
                && let Some(receiver) = dotted_name(&attribute.value)
                && module.models[index].contains(&receiver)
            {
                rank_zero_verbose(rewrite, call);
            }
        }
    }
}

/// The batch steps of each scope, a training loop or more per scope.
fn rewrite_batch_steps_per_scope(
    rewrite: &mut ModuleRewrite,
    batch_steps: &[&TrainingSite],
    compiled: &mut HashSet<std::ops::Range<usize>>,
) {
    let mut scopes: Vec<usize> = batch_steps.iter().map(|site| site.scope).collect();
    scopes.dedup();
    for scope_index in scopes {
        let sites: Vec<&TrainingSite> = batch_steps
            .iter()
            .filter(|site| site.scope == scope_index)
            .copied()
            .collect();
        batch_steps::rewrite_batch_steps(rewrite, scope_index, &sites, compiled);
    }
}

/// Steps first: whether any fit's work stays whole decides the rate, and
/// with it whether a warm-up is added to the callbacks.
fn divide_steps_of_fits(rewrite: &mut ModuleRewrite, fits: &[&TrainingSite]) {
    let module = rewrite.module;
    for site in fits {
        let scope = &module.scopes[site.scope];
        if let Some((_, fit)) = find_call(scope, &site.range)
            && matches!(fit.func.as_ref(), Expr::Attribute(attribute)
                if library::is_keras_fit_method(attribute.attr.as_str()))
        {
            match fit.keywords.iter().find(|keyword| keyword.arg.is_none()) {
                None => fit_split::divide_steps(rewrite, scope, fit),
                Some(unpacked) => {
                    fit_split::divide_steps_of_unpacked_fit(rewrite, scope, fit, &unpacked.value)
                }
            }
        }
    }
}

/// Parts of another module's fit made here: the `compile` of a model
/// factory (its optimizer wrapped) and the list a callbacks helper returns
/// (its file writers on rank 0). Returns the other sites.
fn rewrite_parts_made_here<'s>(
    rewrite: &mut ModuleRewrite,
    sites: Vec<&'s TrainingSite>,
    compiled: &mut HashSet<std::ops::Range<usize>>,
) -> Vec<&'s TrainingSite> {
    let module = rewrite.module;
    let mut others = Vec::new();
    for site in sites {
        let scope = &module.scopes[site.scope];
        if !site.is_model_function {
            others.push(site);
            continue;
        }
        if let Some((_, call)) = find_call(scope, &site.range)
            && matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "compile")
        {
            if compiled.insert(site.range.clone()) {
                wrap_compiled_optimizer(rewrite, scope, call);
            }
            continue;
        }
        match list_at(scope, &site.range) {
            Some(list) => callbacks::keep_writers_on_rank_zero(rewrite, scope, list),
            None => others.push(site),
        }
    }
    others
}

/// The list literal a statement of the scope returns or assigns at `range`.
fn list_at<'a>(scope: &Scope<'a>, range: &std::ops::Range<usize>) -> Option<&'a ast::ExprList> {
    scope.facts.statements.iter().find_map(|stmt| {
        let value = match stmt {
            Stmt::Return(returned) => returned.value.as_deref()?,
            Stmt::Assign(assign) => assign.value.as_ref(),
            _ => return None,
        };
        match value {
            Expr::List(list) if span(value) == *range => Some(list),
            _ => None,
        }
    })
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
        for stmt in scope.facts.statements.iter().copied() {
            if span(stmt) == site.range
                && let Stmt::With(with) = stmt
            {
                with_statement = Some(with);
            }
        }
        if let Some(with) = with_statement {
            super::gradient_tape::wrap_tape(rewrite, scope, with, &horovod);
        }
    }
}

/// Wraps the optimizer `receiver.compile(...)` is given (once per compile),
/// or says that the compile is not in this module.
pub(super) fn wrap_optimizer_compiled_for(
    rewrite: &mut ModuleRewrite,
    scope_index: usize,
    receiver: &str,
    site: &std::ops::Range<usize>,
    compiled: &mut HashSet<std::ops::Range<usize>>,
) {
    let compiles = find_compiles(rewrite, scope_index, receiver, Some(site.start));
    for (compile_scope, compile) in &compiles {
        if compiled.insert(span(*compile)) {
            let module = rewrite.module;
            wrap_compiled_optimizer(rewrite, &module.scopes[*compile_scope], compile);
        }
    }
    let compiled_elsewhere = rewrite
        .module
        .compiled_elsewhere
        .contains(&(scope_index, receiver.to_string()));
    if compiles.is_empty() && !compiled_elsewhere {
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

pub(super) fn rank_zero_verbose(rewrite: &mut ModuleRewrite, call: &ast::ExprCall) {
    if rewrite.had_horovod {
        // Like its prints, the progress output of code that already uses
        // Horovod is its author's choice.
        return;
    }
    let test = rewrite.rank_zero_test();
    match keyword(call, "verbose") {
        Some(verbose) => {
            // Already per rank, or silent everywhere (`verbose=0`).
            let silent = matches!(&verbose.value, Expr::Constant(ast::ExprConstant { value: ast::Constant::Int(value), .. }) if value.to_string() == "0");
            if silent || rewrite.is_rank_dependent(&verbose.value) {
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

/// Sessions of a module that makes Keras run in one of its own
/// (`K.set_session(tf.Session(config=config))`): each reads the config it
/// is given, so the config is pinned to the local rank's GPU.
fn pin_own_sessions(rewrite: &mut ModuleRewrite) {
    let module = rewrite.module;
    if !sets_keras_session(module) {
        return;
    }
    for scope in &module.scopes {
        for site in &scope.facts.calls {
            if super::tf1::makes_session(rewrite, scope, site.call) {
                let prefix = super::tf1::tf1_prefix(rewrite, &site.call.func, "Session");
                super::tf1::pin_session_config(
                    rewrite,
                    scope,
                    site.statement,
                    site.call,
                    "config",
                    &prefix,
                );
            }
        }
    }
}

/// The module hands Keras a session of its own: `set_session(...)` of the
/// Keras backend.
fn sets_keras_session(module: &ModuleAnalysis) -> bool {
    module.scopes.iter().any(|scope| {
        scope.facts.calls.iter().any(|site| {
            matches!(site.call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "set_session")
                && !site.call.args.is_empty()
        })
    })
}
