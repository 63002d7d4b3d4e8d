//! A Keras training loop whose model is compiled nowhere the tool can see (a
//! model restored by `load_model`, a parameter no caller compiles): its
//! optimizer cannot be wrapped, so its gradients would not be averaged.
//! Dividing its steps and broadcasting alone would train one model per
//! worker on part of the data, so the module is left as written and an error
//! says what to do by hand. So is a loop that fits once per environment
//! step: each worker would take as many steps as its episodes last.

use rustpython_parser::ast::{Expr, Stmt};

use super::optimizer::find_compiles;
use crate::analysis::keras_version::{self, KerasGeneration};
use crate::analysis::library;
use crate::analysis::training::{Scope, TrainingPattern, find_call};
use crate::analysis::walk::dotted_name;
use crate::diagnostics::Diagnostic;
use crate::python::parse::span;
use crate::rules::OPTIMIZER_NOT_WRAPPABLE;
use crate::rules::assumptions::KERAS_3;
use crate::rules::passes::episodes::{
    ends_with_an_episode, runs_as_the_loop_ends, steps_an_environment, steps_an_environment_within,
    steps_differ_per_worker,
};
use crate::rules::passes::loop_steps::STEPS_DIFFER_PER_WORKER;
use crate::rules::rewrite::ModuleRewrite;

/// One error per training loop of the module whose model is compiled nowhere.
pub(super) fn refusals(rewrite: &ModuleRewrite) -> Vec<Diagnostic> {
    if let Some(keras_3) = keras_3(rewrite) {
        return vec![keras_3];
    }
    if let Some(keras_1) = keras_1_api(rewrite) {
        return vec![keras_1];
    }
    let module = rewrite.module;
    let mut refusals = Vec::new();
    for site in module
        .sites
        .iter()
        .filter(|site| site.pattern == TrainingPattern::Keras && !site.is_model_function)
    {
        let scope = &module.scopes[site.scope];
        let Some((_, call)) = find_call(scope, &site.range) else {
            continue;
        };
        let receiver = match call.func.as_ref() {
            Expr::Attribute(attribute)
                if library::is_keras_fit_method(attribute.attr.as_str())
                    || attribute.attr.as_str() == library::KERAS_BATCH_STEP =>
            {
                dotted_name(&attribute.value)
            }
            _ => super::model_handed_over(module, site.scope, call),
        };
        let Some(receiver) = receiver else {
            continue;
        };
        // `model.fit(state, target)` per environment step (a value-learning agent).
        let episode_loop = scope
            .facts
            .calls
            .iter()
            .filter(|call_site| span(call_site.call) == site.range)
            .flat_map(|call_site| {
                call_site
                    .enclosing_loops
                    .iter()
                    .filter(|stmt| !runs_as_the_loop_ends(stmt, call_site.statement))
            })
            .find(
                |stmt| matches!(stmt, Stmt::While(while_loop) if steps_an_environment(while_loop)),
            );
        if let Some(episode) = episode_loop {
            refusals.push(steps_differ_per_worker(rewrite, episode));
            continue;
        }
        if let Some(refusal) = called_per_episode_step(rewrite, scope) {
            refusals.push(refusal);
            continue;
        }
        let compiled = !find_compiles(rewrite, site.scope, &receiver, Some(site.range.start))
            .is_empty()
            || module
                .compiled_elsewhere
                .contains(&(site.scope, receiver.clone()));
        if !compiled {
            refusals.push(not_compiled(rewrite, scope, &receiver, site.range.clone()));
        }
    }
    refusals
}

/// The function holding a fit, called (by its name, as a method of any
/// object or as a function of the module) where each worker's environment
/// decides how often it runs: in the own body of a loop that ends with the
/// episode (an agent's `replay(batch_size)` once per environment step), or
/// under a test in a loop that steps an environment (`if len(memory) >
/// batch_size:`), which each worker's episodes decide.
fn called_per_episode_step(rewrite: &ModuleRewrite, fitting: &Scope) -> Option<Diagnostic> {
    let Some(Stmt::FunctionDef(function)) = fitting.function else {
        return None;
    };
    let name = function.name.as_str();
    let calls = rewrite
        .module
        .scopes
        .iter()
        .flat_map(|scope| scope.facts.calls.iter())
        .filter(|call_site| match call_site.call.func.as_ref() {
            Expr::Attribute(attribute) => attribute.attr.as_str() == name,
            Expr::Name(called) => called.id.as_str() == name,
            _ => false,
        });
    for call_site in calls {
        let Some(innermost) = call_site.enclosing_loops.last() else {
            continue;
        };
        if ends_with_an_episode(innermost) && !runs_as_the_loop_ends(innermost, call_site.statement)
        {
            return Some(steps_differ_per_worker(rewrite, innermost));
        }
        let in_environment_loop = call_site
            .enclosing_loops
            .iter()
            .any(|loop_statement| steps_an_environment_within(loop_statement));
        if let Some(condition) = call_site.conditions.last()
            && in_environment_loop
            && !runs_as_the_loop_ends(innermost, call_site.statement)
        {
            let condition = rewrite.expression_text(condition);
            return Some(Diagnostic::new(
                STEPS_DIFFER_PER_WORKER,
                span(call_site.call),
                format!("`{name}` trains only when `{condition}`, in a loop that steps an environment: each worker's own episodes decide it, so the workers would take different numbers of gradient allreduces and the one that stops first would leave the others waiting; this module was left as written"),
            )
            .with_suggestion("train a fixed number of steps per episode or per iteration (from a replay buffer, whatever each worker's episodes were), which the tool can divide, then run the tool again"));
        }
    }
    None
}

fn not_compiled(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    receiver: &str,
    range: std::ops::Range<usize>,
) -> Diagnostic {
    let hvd = &rewrite.hvd;
    let loaded = scope
        .facts
        .last_value_of(receiver)
        .and_then(|value| match value {
            Expr::Call(call) => dotted_name(&call.func),
            _ => None,
        })
        .is_some_and(|callee| callee.ends_with("load_model"));
    let is_parameter = scope.parameters.iter().any(|name| name == receiver);
    let (origin, suggestion) = if loaded {
        (
            format!(
                "`{receiver}` is restored by `load_model` with the optimizer it was saved with"
            ),
            format!(
                "load it with `{hvd}.load_model(...)` from `horovod.tensorflow.keras`, which wraps the optimizer it restores, then run the tool again"
            ),
        )
    } else {
        let origin = if is_parameter {
            format!("`{receiver}` is a parameter, and no caller the tool can see compiles it")
        } else {
            format!("no `{receiver}.compile(...)` is in this package where the tool can see it")
        };
        (
            origin,
            format!(
                "compile `{receiver}` with `optimizer={hvd}.DistributedOptimizer(<optimizer>)` where it is built, or compile it in a module the tool reads and run the tool again"
            ),
        )
    };
    Diagnostic::new(
        OPTIMIZER_NOT_WRAPPABLE,
        range,
        format!(
            "{origin}, so its optimizer cannot be wrapped in `{hvd}.DistributedOptimizer` and its gradients would not be averaged: this module was left as written (dividing its steps alone would train one model per worker on part of the data)"
        ),
    )
    .with_suggestion(suggestion)
}

/// A module training with standalone `keras` that is Keras 3 (pinned, or
/// by its backend or APIs): Horovod's Keras integration drives Keras 2
/// only, so nothing of the module is rewritten, and DST103 says why.
fn keras_3(rewrite: &ModuleRewrite) -> Option<Diagnostic> {
    let module = rewrite.module.module;
    // Utilities taken from standalone `keras` (`to_categorical`, a dataset
    // loader) beside a model built with `tf.keras` do not make it Keras 3's.
    let utility = |qualified: &str| {
        ["keras.utils", "keras.preprocessing", "keras.datasets"]
            .iter()
            .any(|prefix| qualified.starts_with(prefix))
    };
    let import = module
        .bindings
        .iter()
        .filter(|(_, binding)| {
            library::is_standalone_keras(&binding.qualified) && !utility(&binding.qualified)
        })
        .map(|(_, binding)| binding.statement.clone())
        .min_by_key(|statement| statement.start)?;
    let pin = rewrite.analysis.keras_pin.as_ref();
    let KerasGeneration::Three { reason } = keras_version::generation_of(pin, module) else {
        return None;
    };
    Some(
        Diagnostic::new(
            KERAS_3,
            import,
            format!("standalone `keras` is taken for Keras 3 ({reason}); Horovod's Keras integration (`horovod.tensorflow.keras`) drives Keras 2 only, so the module was left as written and stays single-GPU"),
        )
        .with_suggestion("run it on Keras 2: pin `keras<3` (or a TensorFlow before 2.16) if the code runs there, or install `tf_keras`, import it instead of `keras` and set TF_USE_LEGACY_KERAS=1; then run the tool again"),
    )
}

/// A call of Keras 1 API that Keras 2.2 removed: the `merge` function with
/// `mode=`, the `Merge` layer, `nb_epoch=`. Such a program runs on Keras 2.1
/// or earlier (over TensorFlow 1), where optimizers take `lr=` and
/// variables live in Keras's own session: the rewrite's optimizer keyword
/// and its broadcast would fail there.
fn keras_1_api(rewrite: &ModuleRewrite) -> Option<Diagnostic> {
    if !super::uses_keras_2_standalone(rewrite.analysis, rewrite.module) {
        return None;
    }
    let module = rewrite.module;
    let (site, what) = module.scopes.iter().find_map(|scope| {
        scope.facts.calls.iter().find_map(|site| {
            let callee = rewrite.callee(scope, &site.call.func).unwrap_or_default();
            let has = |name: &str| crate::analysis::walk::keyword(site.call, name).is_some();
            let keras = callee.contains("keras.layers");
            let what = match callee.rsplit('.').next() {
                Some("merge") if keras && has("mode") => "`merge(..., mode=...)`",
                Some("Merge") if keras => "the `Merge` layer",
                _ if has("nb_epoch") => "`nb_epoch=`",
                _ => return None,
            };
            Some((site, what))
        })
    })?;
    let line = module
        .module
        .source
        .line_index
        .line_of(span(site.call).start)
        + 1;
    Some(
        Diagnostic::new(
            crate::rules::assumptions::KERAS_1_API,
            span(site.call),
            format!("{what} (line {line}) is Keras 1 API that only Keras 2.1 or earlier keeps: there optimizers take `lr=` and the variables live in Keras's own TensorFlow 1 session, so the rewrite's optimizer and broadcast would fail; the module was left as written and stays single-GPU"),
        )
        .with_suggestion("port the model to Keras 2.3 or later on TensorFlow 2 (`Dot`, `Concatenate` layers, `epochs=`) and run the tool again, or apply Horovod's Keras recipe by hand: `hvd.DistributedOptimizer(RMSprop(lr=0.001 * hvd.size()))`, and `keras.backend.get_session().run(hvd.broadcast_global_variables(0))` before the first step"),
    )
}
