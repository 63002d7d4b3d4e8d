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
use crate::rules::patterns::keras::{find_compiles, wrap_compiled_optimizer};
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
/// with the index of their scope: those of its name (as a `fit` finds
/// them), or every one in the module-level function whose call builds it.
fn compiles_of_keras_model<'a>(
    rewrite: &ModuleRewrite<'a>,
    call: &ast::ExprCall,
) -> Vec<(usize, &'a ast::ExprCall)> {
    let module = rewrite.module;
    let scope_index = module.scope_at(span(call).start);
    match keras_model_argument(call) {
        Some(Expr::Call(built)) => {
            let Some(builder) =
                dotted_name(&built.func).and_then(|name| module.function_scope(&name))
            else {
                return Vec::new();
            };
            calls_in_scope(&module.scopes[builder])
                .into_iter()
                .filter(|(_, candidate)| matches!(candidate.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "compile"))
                .map(|(_, candidate)| (builder, candidate))
                .collect()
        }
        Some(model) => dotted_name(model)
            .map(|name| find_compiles(rewrite, scope_index, &name, None))
            .unwrap_or_default(),
        None => Vec::new(),
    }
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
