//! TF1 `tf.estimator.Estimator`.
//!
//! What it does: in the `model_fn` (in this module or another), scales and
//! wraps the optimizer; `model_dir` only on rank 0; pins the GPU through
//! `RunConfig(session_config=...)`; adds `hvd.BroadcastGlobalVariablesHook(0)`
//! to `train(hooks=...)` (or the `TrainSpec`) and divides `steps` /
//! `max_steps`.
//!
//! Assumptions (reported when broken): the `model_fn` resolves to a function
//! of the package.

use crate::rules::passes::learning_rate::OPTIMIZER_NOT_FOUND;
use rustpython_parser::ast::{self, Expr};

use super::Pattern;
use super::session_save_barrier;
use crate::analysis::training::calls_in_scope;
use crate::analysis::training::find_call;
use crate::rules::context::RewriteContext;
use crate::rules::importer::Names;
use crate::rules::rewrite::ModuleRewrite;

use super::tf1::{
    add_broadcast_hook, canonical_callee, config_proto_prefix, divide_step_keywords,
    divide_stop_at_step_hooks, pin_session_config, rank_zero_directory, tf1_prefix,
    wrap_optimizers,
};
use crate::analysis::training::{
    Scope, TrainingPattern, creates_estimator, model_function_argument,
};
use crate::analysis::walk::{dotted_name, keyword};
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::edit::Edit;
use crate::python::parse::span;

pub const MODEL_FUNCTION_NOT_FOUND: Code = Code::new(
    "DST115",
    "model-fn-not-found",
    Severity::Warning,
    "The Estimator's `model_fn` could not be resolved, so its optimizer was not wrapped.",
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

    fn horovod_module(&self) -> &'static str {
        "horovod.tensorflow"
    }

    /// TF1 pins the GPU through the session's `ConfigProto` instead.
    fn device_pinning_lines(&self, _context: &RewriteContext, _names: &mut Names) -> Vec<String> {
        Vec::new()
    }

    fn save_barrier(&self, context: &RewriteContext, save: &ast::ExprCall) -> Option<String> {
        session_save_barrier(context, save)
    }

    fn codes(&self) -> &'static [Code] {
        &[MODEL_FUNCTION_NOT_FOUND]
    }

    fn rewrite(&self, rewrite: &mut ModuleRewrite) {
        rewrite_module(rewrite);
    }
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
        }
    }
    divide_stop_at_step_hooks(rewrite);
}

/// A canned Estimator (`DNNRegressor(..., optimizer=Adagrad(...))`) builds
/// its train op from the optimizer it is given: wrap that one. One given by
/// name, or the default, is made explicit for a DNN Estimator; otherwise it
/// cannot be wrapped here: say what to pass instead.
fn wrap_canned_optimizer(rewrite: &mut ModuleRewrite, call: &ast::ExprCall) {
    let hvd = rewrite.hvd.clone();
    let given = keyword(call, "optimizer").map(|keyword| &keyword.value);
    let explicit = default_dnn_optimizer(rewrite, call, given);
    match given {
        Some(Expr::Call(optimizer)) => {
            if !rewrite.calls_horovod_attribute(&optimizer.func, "DistributedOptimizer") {
                let range = span(optimizer);
                rewrite.edit(Edit::insertion(
                    range.start,
                    format!("{hvd}.DistributedOptimizer("),
                ));
                rewrite.edit(Edit::insertion(range.end, ")"));
            }
        }
        other if explicit.is_some() => {
            let built = explicit.unwrap_or_default();
            let wrapped = format!("{hvd}.DistributedOptimizer({built})");
            match other {
                Some(name) => rewrite.edit(Edit::replacement(span(name), wrapped)),
                None => rewrite.add_keyword(call, "optimizer", &wrapped),
            }
        }
        other => {
            let (at, what) = match other {
                Some(value) => (
                    span(value),
                    format!("the optimizer `{}`", rewrite.expression_text(value)),
                ),
                None => (span(call), "the default optimizer".to_string()),
            };
            rewrite.diagnose(
                Diagnostic::new(OPTIMIZER_NOT_FOUND, at, format!("this canned Estimator trains with {what}, which could not be wrapped: its gradients are not averaged across workers"))
                    .with_suggestion(format!("pass `optimizer={hvd}.DistributedOptimizer(<an optimizer object, its learning rate * {}>)`", rewrite.horovod_call("size"))),
            );
        }
    }
}

/// `config.replace(model_dir=...)`: only a RunConfig's `replace` takes `model_dir`.
fn is_run_config_replace(call: &ast::ExprCall) -> bool {
    matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "replace")
        && keyword(call, "model_dir").is_some()
}

/// A DNN canned Estimator's optimizer made explicit, scaled: the library
/// default (Adagrad) or one named by a string, at the library's rate for
/// DNN Estimators, 0.05. A Keras optimizer for the TF2 Estimators, a
/// `tf.compat.v1.train` one for the TF1 ones. `None` for other Estimators
/// (a linear model's default rate depends on its feature columns).
fn default_dnn_optimizer(
    rewrite: &ModuleRewrite,
    call: &ast::ExprCall,
    given: Option<&Expr>,
) -> Option<String> {
    let class = match given {
        None => "Adagrad".to_string(),
        Some(Expr::Constant(ast::ExprConstant {
            value: ast::Constant::Str(name),
            ..
        })) => name.to_string(),
        Some(_) => return None,
    };
    let known = ["Adagrad", "Adam", "Ftrl", "RMSProp", "SGD"];
    if !known.contains(&class.as_str()) {
        return None;
    }
    let estimator = dotted_name(&call.func)?;
    if !(estimator.ends_with("DNNClassifier") || estimator.ends_with("DNNRegressor")) {
        return None;
    }
    let size = rewrite.horovod_call("size");
    let tf = &rewrite.tf;
    Some(if estimator.contains("v1") {
        let class = if class == "SGD" {
            "GradientDescent"
        } else {
            class.as_str()
        };
        format!("{tf}.compat.v1.train.{class}Optimizer(learning_rate=0.05 * {size})")
    } else {
        let class = if class == "RMSProp" {
            "RMSprop"
        } else {
            class.as_str()
        };
        format!("{tf}.keras.optimizers.legacy.{class}(learning_rate=0.05 * {size})")
    })
}

fn rewrite_estimator_construction(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    stmt: &rustpython_parser::ast::Stmt,
    call: &ast::ExprCall,
) {
    rank_zero_directory(rewrite, call, "model_dir");
    let canned = canonical_callee(rewrite, scope, call)
        .is_some_and(|callee| callee != "tensorflow.estimator.Estimator");
    if canned {
        wrap_canned_optimizer(rewrite, call);
    } else if let Some(function) = model_function_argument(call) {
        let resolved = crate::analysis::training::model_function_name(
            rewrite.analysis.package,
            rewrite.module,
            scope,
            function,
        );
        let known = resolved.is_some_and(|name| rewrite.analysis.functions.contains_key(&name));
        if !known {
            let text = rewrite.expression_text(function).to_string();
            rewrite.diagnose(
                Diagnostic::new(MODEL_FUNCTION_NOT_FOUND, span(function), format!("`{text}` does not resolve to a function of this package, so the optimizer it builds was not wrapped"))
                    .with_suggestion(format!("in the model_fn, scale the learning rate by `{0}` and wrap the optimizer with `{1}.DistributedOptimizer(...)`", rewrite.horovod_call("size"), rewrite.hvd)),
            );
        }
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
        if !(rewrite.text.contains("visible_device_list") && rewrite.text.contains("local_rank()"))
        {
            rewrite.insert_before_statement(&span(stmt), &lines);
            rewrite.add_keyword(call, "config", &run_config);
        }
    }
}
