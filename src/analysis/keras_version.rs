//! Which Keras a standalone `import keras` means: Keras 2 (TensorFlow up to
//! 2.15 ships it, and Horovod's `horovod.keras` serves it) or Keras 3 (which
//! Horovod cannot drive). Decided from the project's pinned requirements
//! when it has them, else from APIs only Keras 2 has, else Keras 3, and the
//! reason is kept so the diagnostic can say it.

use std::path::Path;

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::analysis::package::Module;
use crate::analysis::walk::dotted_name;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KerasGeneration {
    Two { reason: String },
    Three { reason: String },
}

/// Files a project pins its packages in, at its root.
pub const REQUIREMENT_FILES: &[&str] = &[
    "requirements.txt",
    "requirements-dev.txt",
    "requirements_dev.txt",
    "pyproject.toml",
    "setup.cfg",
    "setup.py",
    "environment.yml",
    "environment.yaml",
];

/// The Keras generation the project's requirement files pin, if any.
pub fn pinned_generation(root: &Path) -> Option<KerasGeneration> {
    for file in REQUIREMENT_FILES {
        let Ok(text) = std::fs::read_to_string(root.join(file)) else {
            continue;
        };
        for line in text.lines() {
            if let Some(generation) = generation_of_requirement(line, file) {
                return Some(generation);
            }
        }
    }
    None
}

/// `keras==2.12.0`, `keras<3`, `tensorflow==2.12.1` (Keras 2 inside),
/// `"tensorflow>=2.16"` (Keras 3 inside).
fn generation_of_requirement(line: &str, file: &str) -> Option<KerasGeneration> {
    let line = line
        .trim()
        .trim_matches(|c| c == '"' || c == '\'' || c == ',' || c == '-');
    let line = line.trim();
    let (package, rest) = split_package(line)?;
    let mut version = crate::python::notebook::first_version(rest)?;
    if rest.starts_with('<') && !rest.starts_with("<=") {
        // `keras<3` allows 2.x only; `tensorflow<2.16` up to 2.15.
        version = match version {
            (major, 0) => (major.saturating_sub(1), u32::MAX),
            (major, minor) => (major, minor - 1),
        };
    }
    let reason = format!("{file} pins `{line}`");
    match package.as_str() {
        "keras" => Some(match version.0 {
            0..=2 => KerasGeneration::Two { reason },
            _ => KerasGeneration::Three { reason },
        }),
        "tensorflow" | "tensorflow-cpu" | "tensorflow-gpu" if version.0 == 2 => {
            Some(if version.1 < 16 {
                KerasGeneration::Two { reason }
            } else {
                KerasGeneration::Three { reason }
            })
        }
        _ => None,
    }
}

fn split_package(line: &str) -> Option<(String, &str)> {
    let end = line.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))?;
    let (package, rest) = line.split_at(end);
    let rest = rest.trim_start();
    let specifies = ["==", ">=", "<=", "~=", "<", ">", "="]
        .iter()
        .any(|operator| rest.starts_with(operator));
    specifies.then(|| (package.to_lowercase().replace('_', "-"), rest))
}

/// The TensorFlow release a program runs, when it says: the version a
/// notebook recorded as the output of `tf.__version__`, or an exact pin
/// (`tensorflow==2.1.0`) in the project's requirement files. The reason
/// names where it was read.
pub fn tensorflow_release(root: &Path, module: &Module) -> Option<((u32, u32), String)> {
    if let Some(version) = module.source.recorded.tensorflow {
        return Some((
            version,
            "the notebook's recorded output of `tf.__version__`".to_string(),
        ));
    }
    for file in REQUIREMENT_FILES {
        let Ok(text) = std::fs::read_to_string(root.join(file)) else {
            continue;
        };
        for line in text.lines() {
            let line = line
                .trim()
                .trim_matches(|c| c == '"' || c == '\'' || c == ',');
            if let Some((package, rest)) = split_package(line)
                && matches!(
                    package.as_str(),
                    "tensorflow" | "tensorflow-cpu" | "tensorflow-gpu"
                )
                && rest.starts_with("==")
                && let Some(version) = crate::python::notebook::first_version(rest)
            {
                return Some((version, format!("{file} pins `{line}`")));
            }
        }
    }
    None
}

/// Why the program runs on TensorFlow 1, when its notebook recorded so: a
/// TensorFlow 1 release, or a standalone Keras before 2.3 (whose backend was
/// TensorFlow 1).
pub fn recorded_tensorflow_1(module: &Module) -> Option<String> {
    let recorded = module.source.recorded;
    if let Some((1, minor)) = recorded.tensorflow {
        return Some(format!(
            "the notebook recorded TensorFlow 1.{minor} as its `tf.__version__`"
        ));
    }
    match recorded.keras {
        Some((2, minor)) if minor < 3 && recorded.tensorflow.is_none() => Some(format!(
            "the notebook recorded Keras 2.{minor} as its `keras.__version__`, a Keras that runs on TensorFlow 1"
        )),
        Some(_) => None,
        None if recorded.multi_backend_keras && recorded.tensorflow.is_none() => Some(
            "the notebook recorded multi-backend Keras (its import printed \"Using TensorFlow backend.\"), Keras 2.3 or earlier, which ran on TensorFlow 1 until 2.3 (and whose optimizers took `lr=`, not the rewrite's `learning_rate=`, until 2.3)".to_string(),
        ),
        None => None,
    }
}

/// A module of the package using what only Keras 2.2.4 or earlier had
/// (`K.control_flow_ops`): a Keras that runs on TensorFlow 1. The reason,
/// naming the module and the use. (`K.tensorflow_backend` says less: Keras
/// 2.3 has it too, and runs on TensorFlow 2.)
pub fn tensorflow_1_era_keras(modules: &[Module]) -> Option<String> {
    const OLD_BACKEND: &[&str] = &["control_flow_ops"];
    modules.iter().find_map(|module| {
        let mut found = None;
        crate::analysis::walk::for_each_statement(&module.body, true, &mut |statement| {
            crate::analysis::walk::walk_statement_expressions(statement, &mut |expr| {
                if found.is_some() {
                    return;
                }
                if let Expr::Attribute(attribute) = expr
                    && OLD_BACKEND.contains(&attribute.attr.as_str())
                    && module
                        .bindings
                        .resolve_raw(&attribute.value)
                        .is_some_and(|resolved| resolved == "keras.backend")
                {
                    found = Some(format!(
                        "{} uses `keras.backend.{}`, which only Keras 2.2.4 or earlier has, a Keras that runs on TensorFlow 1",
                        module.source.relative_path, attribute.attr
                    ));
                }
            });
        });
        found
    })
}

/// The generation a module's standalone `import keras` means: the project's
/// pin, else Keras 2 when the module uses an API only Keras 2 has, else
/// Keras 3 (what `pip install keras` gives today).
pub fn generation_of(pin: Option<&KerasGeneration>, module: &Module) -> KerasGeneration {
    if let Some(backend) = keras_backend_set(&module.body).filter(|backend| backend != "tensorflow")
    {
        return KerasGeneration::Three {
            reason: format!(
                "the module sets KERAS_BACKEND to \"{backend}\", which only Keras 3 runs, and Horovod drives TensorFlow alone"
            ),
        };
    }
    if let Some(pin) = pin {
        return pin.clone();
    }
    if let Some((major, minor)) = module.source.recorded.keras {
        let reason =
            format!("the notebook's recorded output of `keras.__version__` is {major}.{minor}");
        return if major >= 3 {
            KerasGeneration::Three { reason }
        } else {
            KerasGeneration::Two { reason }
        };
    }
    if module.source.recorded.multi_backend_keras {
        return KerasGeneration::Two {
            reason: "the notebook recorded its import printing \"Using TensorFlow backend.\", which only multi-backend Keras 2 prints".to_string(),
        };
    }
    match uses_keras_2_only_api(module) {
        Some(why) => KerasGeneration::Two {
            reason: format!("the module uses {why}"),
        },
        None => KerasGeneration::Three {
            reason: "no requirement file pins Keras or TensorFlow, and `pip install keras` gives Keras 3".to_string(),
        },
    }
}

/// The backend a top-level statement sets for Keras:
/// `os.environ["KERAS_BACKEND"] = "jax"` or
/// `os.environ.setdefault("KERAS_BACKEND", "jax")`.
fn keras_backend_set(body: &[Stmt]) -> Option<String> {
    let text = |expr: &Expr| match expr {
        Expr::Constant(constant) => match &constant.value {
            ast::Constant::Str(value) => Some(value.clone()),
            _ => None,
        },
        _ => None,
    };
    body.iter().find_map(|statement| match statement {
        Stmt::Assign(assign) => match assign.targets.as_slice() {
            [Expr::Subscript(subscript)]
                if dotted_name(&subscript.value).as_deref() == Some("os.environ")
                    && text(&subscript.slice).as_deref() == Some("KERAS_BACKEND") =>
            {
                text(&assign.value)
            }
            _ => None,
        },
        Stmt::Expr(expression) => match expression.value.as_ref() {
            Expr::Call(call)
                if dotted_name(&call.func).as_deref() == Some("os.environ.setdefault")
                    && call.args.first().and_then(text).as_deref() == Some("KERAS_BACKEND") =>
            {
                call.args.get(1).and_then(text)
            }
            _ => None,
        },
        _ => None,
    })
}

/// `ModelCheckpoint("weights.{epoch:02d}.hdf5", ...)`: a literal path
/// ending in `.hdf5`.
fn checkpoints_to_hdf5(call: &ast::ExprCall) -> bool {
    let is_checkpoint = dotted_name(&call.func)
        .is_some_and(|name| name == "ModelCheckpoint" || name.ends_with(".ModelCheckpoint"));
    let path = call.args.first().or_else(|| {
        call.keywords
            .iter()
            .find(|keyword| keyword.arg.as_deref() == Some("filepath"))
            .map(|keyword| &keyword.value)
    });
    is_checkpoint
        && matches!(path, Some(Expr::Constant(ast::ExprConstant { value: ast::Constant::Str(path), .. }))
            if path.ends_with(".hdf5"))
}

/// Keras 2 only: `fit_generator`, the `lr=` keyword of optimizers, the
/// `keras.layers.merge` module, Horovod's `horovod.keras`; read from the
/// module's syntax (a comment naming them changes nothing).
pub fn uses_keras_2_only_api(module: &Module) -> Option<String> {
    let imports = |prefix: &str| {
        module.bindings.iter().any(|(_, binding)| {
            binding.qualified == prefix || binding.qualified.starts_with(&format!("{prefix}."))
        })
    };
    if imports("horovod.keras") {
        return Some("`horovod.keras`, which serves Keras 2 only".to_string());
    }
    // Modules of standalone Keras 2 that Keras 3 no longer has.
    const KERAS_2_MODULES: &[(&str, &str)] = &[
        (
            "keras.utils.np_utils",
            "`keras.utils.np_utils`, which Keras 3 removed",
        ),
        (
            "keras.utils.vis_utils",
            "`keras.utils.vis_utils`, which Keras 3 removed",
        ),
        (
            "keras.layers.core",
            "`keras.layers.core`, which Keras 3 removed",
        ),
        (
            "keras.layers.convolutional",
            "`keras.layers.convolutional`, which Keras 3 removed",
        ),
        (
            "keras.layers.recurrent",
            "`keras.layers.recurrent`, which Keras 3 removed",
        ),
        (
            "keras.layers.embeddings",
            "`keras.layers.embeddings`, which Keras 3 removed",
        ),
        (
            "keras.layers.normalization",
            "`keras.layers.normalization`, which Keras 3 removed",
        ),
        (
            "keras.layers.advanced_activations",
            "`keras.layers.advanced_activations`, which Keras 3 removed",
        ),
        ("keras.engine", "`keras.engine`, which Keras 3 removed"),
        (
            "keras.wrappers.scikit_learn",
            "`keras.wrappers.scikit_learn`, which Keras 3 removed",
        ),
        (
            "keras.layers.wrappers",
            "`keras.layers.wrappers`, which Keras 3 removed",
        ),
        (
            "keras.preprocessing.text",
            "`keras.preprocessing.text`, which Keras 3 removed",
        ),
    ];
    if let Some((_, why)) = KERAS_2_MODULES.iter().find(|(module, _)| imports(module)) {
        return Some(why.to_string());
    }
    if let Some(function) = backend_function_keras_3_lacks(module) {
        return Some(format!(
            "`keras.backend.{function}`, which Keras 3's `keras.backend` no longer has"
        ));
    }
    let (mut fit_generator, mut lr, mut merge) = (false, false, imports("keras.layers.merge"));
    let (mut class_predictions, mut hdf5_checkpoint) = (false, false);
    crate::analysis::walk::for_each_statement(&module.body, true, &mut |statement| {
        crate::analysis::walk::walk_statement_expressions(statement, &mut |expr| match expr {
            Expr::Call(call) => {
                let method = match call.func.as_ref() {
                    Expr::Attribute(attribute) => Some(attribute.attr.as_str()),
                    _ => None,
                };
                fit_generator |= method == Some("fit_generator");
                class_predictions |= matches!(method, Some("predict_proba" | "predict_classes"));
                hdf5_checkpoint |= checkpoints_to_hdf5(call);
                lr |= call
                    .keywords
                    .iter()
                    .any(|keyword| keyword.arg.as_deref() == Some("lr"));
            }
            Expr::Attribute(attribute) => {
                merge |= attribute.attr.as_str() == "merge"
                    && dotted_name(&attribute.value)
                        .is_some_and(|receiver| receiver.ends_with("layers"));
            }
            _ => {}
        });
    });
    [
        (fit_generator, "`fit_generator`, which Keras 3 removed"),
        (lr, "the `lr=` keyword, which Keras 3 removed"),
        (merge, "`keras.layers.merge`, which Keras 3 removed"),
        (
            class_predictions,
            "`predict_proba` or `predict_classes`, which only Keras before 2.6 has",
        ),
        (
            hdf5_checkpoint,
            "a `ModelCheckpoint` to an `.hdf5` file, which Keras 3 refuses (it writes `.keras` or `.weights.h5` files)",
        ),
    ]
    .into_iter()
    .find_map(|(used, why)| used.then(|| why.to_string()))
}

/// `K.sum(...)`, `K.sqrt(...)` with `K` bound to `keras.backend`: Keras 3's
/// `keras.backend` keeps only its configuration functions. The first such
/// function called.
fn backend_function_keras_3_lacks(module: &Module) -> Option<String> {
    const KERAS_3_BACKEND: &[&str] = &[
        "backend",
        "clear_session",
        "epsilon",
        "floatx",
        "image_data_format",
        "is_keras_tensor",
        "random_uniform",
        "set_epsilon",
        "set_floatx",
        "set_image_data_format",
        "get_uid",
        "result_type",
        "standardize_dtype",
        "is_float_dtype",
        "is_int_dtype",
    ];
    let backends: Vec<&str> = module
        .bindings
        .iter()
        .filter(|(_, binding)| binding.qualified == "keras.backend")
        .map(|(name, _)| name.as_str())
        .collect();
    if backends.is_empty() {
        return None;
    }
    let mut found: Option<String> = None;
    crate::analysis::walk::for_each_statement(&module.body, true, &mut |statement| {
        crate::analysis::walk::walk_statement_expressions(statement, &mut |expr| {
            if let Expr::Call(call) = expr
                && let Expr::Attribute(attribute) = call.func.as_ref()
                && let Expr::Name(receiver) = attribute.value.as_ref()
                && backends.contains(&receiver.id.as_str())
                && found.is_none()
                && !KERAS_3_BACKEND.contains(&attribute.attr.as_str())
            {
                found = Some(attribute.attr.to_string());
            }
        });
    });
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_decide_the_generation() {
        let two = |line: &str| {
            matches!(
                generation_of_requirement(line, "requirements.txt"),
                Some(KerasGeneration::Two { .. })
            )
        };
        let three = |line: &str| {
            matches!(
                generation_of_requirement(line, "requirements.txt"),
                Some(KerasGeneration::Three { .. })
            )
        };
        assert!(two("keras==2.12.0"));
        assert!(two("keras<3"));
        assert!(two("tensorflow==2.12.1"));
        assert!(two("  \"tensorflow-cpu>=2.10,<2.13\","));
        assert!(three("keras>=3.0"));
        assert!(three("tensorflow==2.16.1"));
        assert_eq!(
            generation_of_requirement("numpy==1.24", "requirements.txt"),
            None
        );
        assert_eq!(generation_of_requirement("keras", "requirements.txt"), None);
        assert_eq!(
            generation_of_requirement("# keras==2.1", "requirements.txt"),
            None
        );
    }

    #[test]
    fn keras_2_apis_are_recognised() {
        let module = |text: &str| {
            let body = crate::python::parse::parse_module(text, "m.py").expect("parses");
            let index = crate::analysis::bindings::ModuleIndex::default();
            Module::new(
                "m".to_string(),
                false,
                crate::python::source::SourceFile::new("m.py".into(), "m.py".into(), text.into()),
                body,
                &index,
            )
        };
        assert!(
            uses_keras_2_only_api(&module("model.fit_generator(gen, steps_per_epoch=10)\n"))
                .is_some()
        );
        assert!(uses_keras_2_only_api(&module("Adam(lr=0.001)\n")).is_some());
        assert!(uses_keras_2_only_api(&module("from keras.utils import np_utils\n")).is_some());
        assert!(
            uses_keras_2_only_api(&module("from keras.utils.vis_utils import plot_model\n"))
                .is_some()
        );
        assert!(
            uses_keras_2_only_api(&module("from keras.utils import to_categorical\n")).is_none()
        );
        assert!(
            uses_keras_2_only_api(&module("from keras import backend as K\nK.sum(x)\n")).is_some()
        );
        assert!(
            uses_keras_2_only_api(&module(
                "from keras import backend as K\nK.clear_session()\n"
            ))
            .is_none()
        );
        assert!(
            uses_keras_2_only_api(&module("model.fit(x, y)  # not fit_generator(, lr=\n"))
                .is_none()
        );
        assert!(
            uses_keras_2_only_api(&module("from keras.layers.wrappers import Bidirectional\n"))
                .is_some()
        );
        assert!(uses_keras_2_only_api(&module("p = model.predict_proba(x)\n")).is_some());
        assert!(
            uses_keras_2_only_api(&module(
                "c = ModelCheckpoint(filepath='out/weights.{epoch:02d}.hdf5')\n"
            ))
            .is_some()
        );
        assert!(
            uses_keras_2_only_api(&module("c = ModelCheckpoint('best.weights.h5')\n")).is_none()
        );
    }
}
