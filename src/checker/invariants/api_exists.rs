//! ## Invariant 9: every call exists in the program's versions and fits its callee
//!
//! A TF1 program (sessions, `tf.contrib`, `tf.logging`) has no
//! `tf.keras.optimizers.legacy`; Keras 3 has no `horovod.tensorflow.keras`
//! (Horovod serves Keras 2 only); `horovod.tensorflow` has no `callbacks`; a
//! model class's own `compile(self, d_optimizer, g_optimizer, ...)` takes no
//! `optimizer=`; the Keras `DistributedOptimizer` cannot wrap a TF1
//! `tf.train` optimizer (it rebuilds the optimizer from its Keras config);
//! no `DistributedOptimizer` can wrap an optimizer wrapper the catalogue
//! says hides its inner optimizer (`hides-inner-optimizer`: tfa's SWA,
//! whose config rebuild is a TypeError).
//!
//! A program whose notebook recorded running TensorFlow 1 (or a Keras
//! before 2.3) may lack the `tf.config` the rewrite pins GPUs with: open.
//! So may a model of TensorFlow's private Keras (`tensorflow.python.keras`)
//! reject the `tf.keras` optimizers and callbacks the rewrite gives it.
//!
//! **Violated** when the program reaches one of these. **Proven** otherwise:
//! the checks cover the API mismatches the rewrite can introduce.

use rustpython_parser::ast::{Expr, Stmt};

use crate::analysis::keras_version::{KerasGeneration, generation_of, recorded_tensorflow_1};
use crate::analysis::library;
use crate::checker::{Decision, Invariant, Program, Verdict};
use crate::diagnostics::{Code, Severity};
use crate::python::parse::span;

pub const API_EXISTS: Code = Code::new(
    "DST309",
    "api-exists-in-version",
    Severity::Error,
    "Every call exists in the program's TensorFlow, Keras and Horovod versions and fits the callee's signature.",
);

pub struct ApiExists;

impl Invariant for ApiExists {
    fn code(&self) -> Code {
        API_EXISTS
    }

    fn check(&self, program: &Program) -> Vec<Decision> {
        if !program.uses_horovod() {
            return Vec::new();
        }
        let mut decisions = keras_three_with_horovod_keras(program);
        let tf1 = tf1_marker(program);
        // On TensorFlow 1, the private copy of Keras is `tf.keras` itself.
        if tf1.is_none() {
            decisions.extend(private_keras_model(program));
        }
        let mut recorded_tensorflow_1 =
            recorded_tensorflow_1(program.module.module).or_else(|| {
                crate::analysis::keras_version::tensorflow_1_era_keras(
                    &program.analysis.package.modules,
                )
            });
        for call in program.calls() {
            let raw = call
                .scope
                .bindings
                .resolve_raw(&call.site.call.func)
                .unwrap_or_default();
            let line = program.line(call.range().start);
            if raw.starts_with("tensorflow.config.")
                && program.is_generated(&call.range())
                && let Some(reason) = recorded_tensorflow_1.take()
            {
                decisions.push(Decision::new(API_EXISTS, Verdict::Unknown, call.range(), format!("the GPU pinning the rewrite adds at line {line} calls `tf.config`, which TensorFlow 1 has only from 1.14 on, and {reason}: whether it exists where the program runs is not known")).with_suggestion("run the program on TensorFlow 2 (with Keras 2.3 or later) and run the tool again, or pin each worker's GPU through its session: `config.gpu_options.visible_device_list = str(hvd.local_rank())`"));
            }
            if raw.starts_with("horovod.tensorflow.callbacks") {
                decisions.push(violation(call.range(), format!("line {line} calls `hvd.callbacks`, which `horovod.tensorflow` does not have (only `horovod.tensorflow.keras` does): AttributeError")));
            }
            if let Some(tf1_line) = tf1
                && raw.contains(".keras.optimizers.legacy.")
            {
                decisions.push(violation(call.range(), format!("line {line} builds a `tf.keras.optimizers.legacy` optimizer, which the program's TensorFlow 1 (line {tf1_line}) does not have: AttributeError")));
            }
            if call.method() == Some("compile")
                && let Some(decision) = custom_compile_mismatch(program, call, line)
            {
                decisions.push(decision);
            }
            if raw.starts_with("horovod.")
                && raw.ends_with(".DistributedOptimizer")
                && let Some(wrapped) = hidden_inner_optimizer(program, call)
            {
                decisions.push(violation(call.range(), format!("line {line} wraps `{wrapped}` in `DistributedOptimizer`: that wrapper updates through its inner optimizer's ops and cannot be rebuilt around it (TypeError), and Horovod could not average through the inner one either")).with_suggestion("train with the inner optimizer alone (which the tool wraps), or average the gradients with `hvd.DistributedGradientTape` in a loop of your own before the wrapper applies them"));
            }
            if (raw.starts_with("horovod.tensorflow.keras.") || raw.starts_with("horovod.keras."))
                && raw.ends_with(".DistributedOptimizer")
                && let Some(Expr::Call(inner)) = optimizer_built(call)
                && call
                    .scope
                    .bindings
                    .resolve(&inner.func)
                    .is_some_and(|callee| {
                        library::is_tf1_optimizer(&library::canonical_name(&callee))
                    })
            {
                // Said where the optimizer is built: the wrap may be a line
                // the rewrite adds.
                let built = program.line(span(inner).start);
                decisions.push(violation(span(inner), format!("the TF1 `tf.train` optimizer built at line {built} is wrapped in the Keras `DistributedOptimizer`, which rebuilds it from a Keras config that a TF1 optimizer does not have: AttributeError")).with_suggestion("wrap it with `horovod.tensorflow`'s `DistributedOptimizer`, or build a Keras optimizer"));
            }
        }
        decisions
    }
}

/// The optimizer a `DistributedOptimizer` call wraps, as built: the call in
/// its argument, or the value its argument's name was last assigned in the
/// scope (`optimizer = tf.train.RMSPropOptimizer(...)`, then
/// `optimizer = hvd.DistributedOptimizer(optimizer)`).
fn optimizer_built<'a>(call: &crate::checker::program::ScopedCall<'_, 'a>) -> Option<&'a Expr> {
    match call.site.call.args.first()? {
        Expr::Name(name) => call
            .scope
            .facts
            .assignment_before(name.id.as_str(), span(call.site.call).start)
            .map(|assignment| assignment.value),
        built => Some(built),
    }
}

/// The text of the optimizer a `DistributedOptimizer` call wraps, when the
/// catalogue says it hides its inner optimizer.
fn hidden_inner_optimizer(
    program: &Program,
    call: &crate::checker::program::ScopedCall,
) -> Option<String> {
    let Some(Expr::Call(inner)) = call.site.call.args.first() else {
        return None;
    };
    let inner_call = program
        .calls()
        .iter()
        .find(|candidate| candidate.range() == span(inner))?;
    let hides = crate::analysis::catalogue::Effect::HidesInnerOptimizer;
    program.has_effect(inner_call, &hides).then(|| {
        crate::analysis::walk::dotted_name(&inner.func).unwrap_or_else(|| "the optimizer".into())
    })
}

/// A model built with TensorFlow's private copy of Keras
/// (`tensorflow.python.keras`): from TensorFlow 2.6 on it is not the
/// `tf.keras` whose optimizers and callbacks the rewrite hands it, and its
/// `compile` rejects them. Which TensorFlow runs is not known: open.
fn private_keras_model(program: &Program) -> Option<Decision> {
    let call = program.calls().iter().find(|call| {
        call.scope
            .bindings
            .resolve_raw(&call.site.call.func)
            .is_some_and(|raw| {
                raw.starts_with("tensorflow.python.keras.")
                    && ["Sequential", "Model", ".layers.", ".models."]
                        .iter()
                        .any(|part| raw.contains(part))
            })
    })?;
    let line = program.line(call.range().start);
    Some(
        Decision::new(
            API_EXISTS,
            Verdict::Unknown,
            call.range(),
            format!("the model at line {line} is built with TensorFlow's private copy of Keras (`tensorflow.python.keras`), which from TensorFlow 2.6 on is not the `tf.keras` whose optimizers and callbacks the rewrite passes it (its `compile` rejects them): whether they fit where the program runs is not known"),
        )
        .with_suggestion("import the model's layers and classes from `tensorflow.keras` (the public Keras) and run the tool again"),
    )
}

fn violation(range: std::ops::Range<usize>, message: String) -> Decision {
    Decision::new(API_EXISTS, Verdict::Violated, range, message)
}

/// The line of the first TF1-only API the module reads (`tf.Session`,
/// `tf.contrib`, `tf.logging`, `tf.placeholder`), reached without `compat.v1`.
fn tf1_marker(program: &Program) -> Option<usize> {
    let call = program.module.tensorflow_1_only_call()?;
    Some(program.line(span(call).start))
}

/// `import keras` judged Keras 3 with `horovod.tensorflow.keras` or `horovod.keras` bound.
fn keras_three_with_horovod_keras(program: &Program) -> Vec<Decision> {
    let bindings = &program.module.module.bindings;
    // Standalone `keras` that builds or trains the model (not one imported
    // for `to_categorical` beside a tf.keras model).
    let standalone_keras = bindings
        .iter()
        .any(|(_, binding)| library::is_standalone_keras(&binding.qualified));
    let builds_with_it = program.calls().iter().any(|call| {
        call.scope
            .bindings
            .resolve_raw(&call.site.call.func)
            .is_some_and(|raw| {
                library::is_standalone_keras(&raw)
                    && [
                        "Sequential",
                        "Model",
                        ".layers.",
                        ".models.",
                        ".optimizers.",
                        ".applications.",
                    ]
                    .iter()
                    .any(|part| raw.contains(part))
            })
    });
    if !standalone_keras || !builds_with_it {
        return Vec::new();
    }
    let generation = generation_of(program.analysis.keras_pin.as_ref(), program.module.module);
    let KerasGeneration::Three { reason } = generation else {
        return Vec::new();
    };
    bindings
        .iter()
        .filter(|(_, binding)| {
            matches!(binding.qualified.as_str(), "horovod.tensorflow.keras" | "horovod.keras")
        })
        .map(|(_, binding)| {
            violation(
                binding.statement.clone(),
                format!("the module imports `{}`, which serves Keras 2 only, but its standalone `keras` is Keras 3 ({reason})", binding.qualified),
            )
        })
        .collect()
}

/// `model.compile(optimizer=...)` where the model's class defines its own
/// `compile` that takes no such parameter.
fn custom_compile_mismatch(
    program: &Program,
    call: &crate::checker::program::ScopedCall,
    line: usize,
) -> Option<Decision> {
    let passed: Vec<&str> = call
        .site
        .call
        .keywords
        .iter()
        .filter_map(|keyword| keyword.arg.as_ref().map(|name| name.as_str()))
        .collect();
    if passed.is_empty() {
        return None;
    }
    // The receiver's class, made in this module, and its own `def compile`.
    let Expr::Attribute(attribute) = call.site.call.func.as_ref() else {
        return None;
    };
    let receiver = crate::analysis::walk::dotted_name(&attribute.value)?;
    let classes: Vec<String> = [call.scope, &program.module.scopes[0]]
        .iter()
        .flat_map(|scope| scope.facts.assignments.iter())
        .filter(|assignment| assignment.name == receiver)
        .filter_map(|assignment| {
            let Expr::Call(made) = assignment.value else {
                return None;
            };
            crate::analysis::training::callee_name(
                program.analysis.package,
                program.module.module,
                call.scope,
                &made.func,
            )
        })
        .collect();
    let definitions: Vec<&Stmt> = program
        .analysis
        .modules
        .iter()
        .flat_map(|module| module.scopes.iter())
        .filter(|scope| {
            scope.name() == "compile"
                && scope.class.is_some()
                && classes
                    .iter()
                    .any(|class| scope.qualified_name == format!("{class}.compile"))
        })
        .filter_map(|scope| scope.function)
        .collect();
    if definitions.is_empty() {
        return None;
    }
    let fits = |definition: &Stmt| {
        let Stmt::FunctionDef(function) = definition else {
            return true;
        };
        let arguments = &function.args;
        if arguments.kwarg.is_some() {
            return true;
        }
        passed.iter().all(|name| {
            arguments
                .args
                .iter()
                .chain(&arguments.kwonlyargs)
                .any(|argument| argument.def.arg.as_str() == *name)
        })
    };
    // Only when no `compile` of the package takes these keywords, and the
    // generated `optimizer=` is among them.
    let generated_optimizer = call.site.call.keywords.iter().any(|keyword| {
        keyword
            .arg
            .as_ref()
            .is_some_and(|name| name.as_str() == "optimizer")
            && program.is_generated(&span(keyword))
    });
    (generated_optimizer && !definitions.iter().any(|definition| fits(definition))).then(|| {
        violation(
            call.range(),
            format!("the `compile` at line {line} is given `optimizer=`, which the model class's own `compile` does not take: TypeError"),
        )
        .with_suggestion("wrap the optimizers the class's `compile` takes instead")
    })
}
