//! TF1 `tf.estimator.Estimator`, canned Estimators, and Estimators made from
//! Keras models by `model_to_estimator`.
//!
//! What it does: in the `model_fn` (in this module or another), scales and
//! wraps the optimizer; `model_dir` only on rank 0; pins the GPU through
//! `RunConfig(session_config=...)`; adds `hvd.BroadcastGlobalVariablesHook(0)`
//! to `train(hooks=...)` (or the `TrainSpec`) and divides `steps` /
//! `max_steps`.
//!
//! Assumptions (reported when broken): the `model_fn` resolves to a function
//! of the package.

mod canned;
mod keras_model;

use rustpython_parser::ast::{self, Expr};

use super::Pattern;
use crate::analysis::training::calls_in_scope;
use crate::analysis::training::find_call;
use crate::rules::rewrite::ModuleRewrite;

use super::tf1::{
    add_broadcast_hook, canonical_callee, config_proto_prefix, divide_step_keywords,
    divide_stop_at_step_hooks, pin_session_config, rank_zero_directory, tf1_prefix,
    wrap_optimizers,
};
use crate::analysis::training::{
    Scope, TrainingPattern, creates_estimator, is_library_estimator, model_function_argument,
};
use crate::analysis::walk::keyword;
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::parse::span;

pub const MODEL_FUNCTION_NOT_FOUND: Code = Code::new(
    "DST115",
    "model-fn-not-found",
    Severity::Error,
    "The Estimator's `model_fn` could not be resolved, so its optimizer cannot be wrapped: the module is left as written.",
);

/// An Estimator.
pub struct Estimator;

impl Pattern for Estimator {
    fn pattern(&self) -> TrainingPattern {
        TrainingPattern::Estimator
    }

    fn description(&self) -> &'static str {
        "an Estimator"
    }

    fn runs_in_a_session(&self) -> bool {
        true
    }

    fn codes(&self) -> &'static [Code] {
        &[MODEL_FUNCTION_NOT_FOUND]
    }

    fn refusals(&self, rewrite: &ModuleRewrite) -> Vec<Diagnostic> {
        refusals(rewrite)
    }

    fn rewrite(&self, rewrite: &mut ModuleRewrite) {
        rewrite_module(rewrite);
    }
}

/// Estimators whose optimizer cannot be wrapped: a canned one without a
/// wrappable optimizer, a `model_fn` that resolves to no package function.
fn refusals(rewrite: &ModuleRewrite) -> Vec<Diagnostic> {
    let module = rewrite.module;
    let mut refusals = Vec::new();
    for scope in &module.scopes {
        for (_, call) in calls_in_scope(scope) {
            if !creates_estimator(rewrite.analysis.package, module.module, scope, call) {
                continue;
            }
            if keras_model::is_model_to_estimator(rewrite, scope, call) {
                refusals.extend(keras_model::refusal(rewrite, call));
            } else if is_canned(rewrite, scope, call) {
                refusals.extend(canned::refusals(rewrite, scope, call));
            } else if let Some(diagnostic) = unresolved_model_function(rewrite, scope, call) {
                refusals.push(diagnostic);
            }
        }
    }
    refusals
}

/// A library Estimator other than the one taking a `model_fn`.
fn is_canned(rewrite: &ModuleRewrite, scope: &Scope, call: &ast::ExprCall) -> bool {
    canonical_callee(rewrite, scope, call).is_some_and(|callee| {
        is_library_estimator(&callee) && callee != "tensorflow.estimator.Estimator"
    })
}

/// DST115 for an Estimator whose `model_fn` resolves to no package function.
fn unresolved_model_function(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    call: &ast::ExprCall,
) -> Option<Diagnostic> {
    let function = model_function_argument(call)?;
    let resolved = crate::analysis::training::model_function_name(
        rewrite.analysis.package,
        rewrite.module,
        scope,
        function,
    );
    if resolved.is_some_and(|name| rewrite.analysis.functions.contains_key(&name)) {
        return None;
    }
    let text = rewrite.expression_text(function);
    Some(
        Diagnostic::new(MODEL_FUNCTION_NOT_FOUND, span(function), format!("`{text}` does not resolve to a function of this package, so the optimizer it builds cannot be wrapped and its gradients would not be averaged: this module was left as written (dividing its steps alone would train one model per worker on part of the data)"))
            .with_suggestion(format!("in the model_fn, scale the learning rate by `{0}` and wrap the optimizer with `{1}.DistributedOptimizer(...)`, then add `{1}.BroadcastGlobalVariablesHook(0)` to the training hooks and divide the steps by `{0}`", rewrite.horovod_call("size"), rewrite.hvd)),
    )
}

fn rewrite_module(rewrite: &mut ModuleRewrite) {
    wrap_optimizers(rewrite);
    let module = rewrite.module;
    for scope in &module.scopes {
        for (stmt, call) in calls_in_scope(scope) {
            let callee = canonical_callee(rewrite, scope, call);
            if creates_estimator(rewrite.analysis.package, module.module, scope, call) {
                rewrite_estimator_construction(rewrite, scope, stmt, call);
            } else if callee.as_deref() == Some("tensorflow.estimator.RunConfig") {
                rank_zero_directory(rewrite, call, "model_dir");
                let prefix = tf1_prefix(rewrite, &call.func, "estimator.RunConfig");
                let prefix = config_proto_prefix(rewrite, &prefix);
                pin_session_config(rewrite, scope, stmt, call, "session_config", &prefix);
            } else if is_run_config_replace(call) {
                // `run_config.replace(model_dir=...)` completes a RunConfig made elsewhere.
                rank_zero_directory(rewrite, call, "model_dir");
            } else if callee.as_deref() == Some("tensorflow.estimator.TrainSpec") {
                add_broadcast_hook(rewrite, call);
                divide_step_keywords(rewrite, call, &["max_steps"]);
            }
        }
    }
    for site in module
        .sites
        .iter()
        .filter(|site| site.pattern == TrainingPattern::Estimator && !site.is_model_function)
    {
        let scope = &module.scopes[site.scope];
        let Some((_, call)) = find_call(scope, &site.range) else {
            continue;
        };
        if matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "train")
        {
            add_broadcast_hook(rewrite, call);
            divide_step_keywords(rewrite, call, &["steps", "max_steps"]);
            runs_to_the_end_of_its_data(rewrite, call);
        }
    }
    divide_stop_at_step_hooks(rewrite);
}

/// `estimator.train(input_fn)` with no step count: it trains until the
/// input function's data ends. The tool does not shard inside an input
/// function (the same one often builds the evaluation data), so unless the
/// module shards or stops at a step itself, every worker walks all of the
/// data: the rate stays as written, and DST101 says so.
fn runs_to_the_end_of_its_data(rewrite: &mut ModuleRewrite, train: &ast::ExprCall) {
    let counted = |value: &Expr| {
        !matches!(
            value,
            Expr::Constant(ast::ExprConstant {
                value: ast::Constant::None,
                ..
            })
        )
    };
    let bounded = ["steps", "max_steps"]
        .iter()
        .any(|name| keyword(train, name).is_some_and(|steps| counted(&steps.value)))
        || train.args.iter().skip(2).any(counted);
    if bounded
        || rewrite.calls_method("shard")
        || rewrite.calls_method("StopAtStepHook")
        || rewrite.had_horovod
    {
        return;
    }
    rewrite.learning_rates.leave_rates();
    rewrite.diagnose(
        Diagnostic::new(
            crate::rules::passes::loop_steps::DATASET_NOT_SHARDED,
            span(train),
            "this `train` has no step count: it runs until its input function's data ends, and the tool does not shard inside an input function, so every worker walks all of the data; the learning rate was left as written".to_string(),
        )
        .with_suggestion("pass `steps=<steps> // hvd.size()` (with a repeated dataset), or shard the training dataset inside its input function with `.shard(hvd.size(), hvd.rank())`"),
    );
}

/// `config.replace(model_dir=...)`: only a RunConfig's `replace` takes `model_dir`.
fn is_run_config_replace(call: &ast::ExprCall) -> bool {
    matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "replace")
        && keyword(call, "model_dir").is_some()
}

fn rewrite_estimator_construction(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    stmt: &rustpython_parser::ast::Stmt,
    call: &ast::ExprCall,
) {
    rank_zero_directory(rewrite, call, "model_dir");
    if keras_model::is_model_to_estimator(rewrite, scope, call) {
        keras_model::wrap_keras_model_optimizer(rewrite, call);
    } else if is_canned(rewrite, scope, call) {
        canned::wrap_canned_optimizers(rewrite, scope, call);
    } else if let Some(diagnostic) = unresolved_model_function(rewrite, scope, call) {
        // Reached only in code that already uses Horovod (never refused).
        rewrite.diagnose(diagnostic);
    }
    // Pin the GPU through the RunConfig; create one when the Estimator has none.
    if keyword(call, "config").is_none() {
        let prefix = tf1_prefix(rewrite, &call.func, "estimator.Estimator");
        let config_prefix = config_proto_prefix(rewrite, &prefix);
        let config = rewrite.fresh(&["config", "session_config"]);
        let run_config = rewrite.fresh(&["run_config", "hvd_run_config"]);
        let lines = [
            format!("{config} = {config_prefix}.ConfigProto()"),
            format!(
                "{config}.gpu_options.visible_device_list = str({})",
                rewrite.horovod_call("local_rank")
            ),
            format!("{run_config} = {prefix}.estimator.RunConfig(session_config={config})"),
        ];
        if !(rewrite.mentions("visible_device_list") && rewrite.calls_method("local_rank")) {
            rewrite.insert_before_statement(&span(stmt), &lines);
            rewrite.add_keyword(call, "config", &run_config);
        }
    }
}
