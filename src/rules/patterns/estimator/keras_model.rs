//! `tf.keras.estimator.model_to_estimator(keras_model=model)`: the
//! Estimator trains a copy of the Keras model with a copy of its compiled
//! optimizer, so the optimizer is wrapped where the model is compiled (in
//! this module: on the model's name, or in the local function that builds
//! it). The Estimator's own rewrite (hook, steps, `model_dir`, config) is
//! the usual one. A model compiled elsewhere refuses the module.

use rustpython_parser::ast::{self, Expr};

use crate::analysis::library;
use crate::analysis::training::{Scope, calls_in_scope};
use crate::analysis::walk::{dotted_name, keyword};
use crate::diagnostics::Diagnostic;
use crate::python::parse::span;
use crate::rules::OPTIMIZER_NOT_WRAPPABLE;
use crate::rules::patterns::keras::wrap_compiled_optimizer;
use crate::rules::rewrite::ModuleRewrite;

/// Whether `call` is `model_to_estimator(...)`.
pub(super) fn is_model_to_estimator(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    call: &ast::ExprCall,
) -> bool {
    rewrite.callee(scope, &call.func).is_some_and(|callee| {
        library::canonical_name(&callee).ends_with("keras.estimator.model_to_estimator")
    })
}

fn keras_model_argument(call: &ast::ExprCall) -> Option<&Expr> {
    keyword(call, "keras_model")
        .map(|keyword| &keyword.value)
        .or_else(|| call.args.first())
}

/// The `compile` calls of the Keras model handed to `model_to_estimator`,
/// with the index of their scope: on its name anywhere in the module, or
/// any in the local function whose call builds it.
fn compiles_of_keras_model<'a>(
    rewrite: &ModuleRewrite<'a>,
    call: &ast::ExprCall,
) -> Vec<(usize, &'a ast::ExprCall)> {
    let module = rewrite.module;
    let Some(model) = keras_model_argument(call) else {
        return Vec::new();
    };
    let (receiver, builder) = match model {
        Expr::Call(built) => (None, dotted_name(&built.func)),
        other => (dotted_name(other), None),
    };
    let mut compiles = Vec::new();
    for (index, scope) in module.scopes.iter().enumerate() {
        let in_builder = builder.as_deref().is_some_and(|builder| {
            scope.qualified_name == format!("{}.{builder}", module.module.name)
        });
        for (_, candidate) in calls_in_scope(scope) {
            let Expr::Attribute(attribute) = candidate.func.as_ref() else {
                continue;
            };
            let on_model = receiver.is_some() && dotted_name(&attribute.value) == receiver;
            if attribute.attr.as_str() == "compile" && (on_model || in_builder) {
                compiles.push((index, candidate));
            }
        }
    }
    compiles
}

/// Wraps the optimizer of every `compile` of the Keras model.
pub(super) fn wrap_keras_model_optimizer(rewrite: &mut ModuleRewrite, call: &ast::ExprCall) {
    let module = rewrite.module;
    for (index, compile) in compiles_of_keras_model(rewrite, call) {
        wrap_compiled_optimizer(rewrite, &module.scopes[index], compile);
    }
}

/// DST125 when the Keras model's `compile` is not in this module.
pub(super) fn refusal(rewrite: &ModuleRewrite, call: &ast::ExprCall) -> Option<Diagnostic> {
    if !compiles_of_keras_model(rewrite, call).is_empty() {
        return None;
    }
    let model = keras_model_argument(call).map_or(span(call), span);
    Some(
        Diagnostic::new(
            OPTIMIZER_NOT_WRAPPABLE,
            model,
            format!("the Keras model given to `model_to_estimator` is not compiled in this module, so its optimizer cannot be wrapped in `{}.DistributedOptimizer` and its gradients would not be averaged: this module was left as written (dividing its steps alone would train one model per worker on part of the data)", rewrite.hvd),
        )
        .with_suggestion(format!("compile the model with `optimizer={}.DistributedOptimizer(<optimizer>)`, its learning rate multiplied by `{}`, or build and compile it in this module and run the tool again", rewrite.hvd, rewrite.horovod_call("size"))),
    )
}
