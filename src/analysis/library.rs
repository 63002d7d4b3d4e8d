//! What the analysis knows about TensorFlow, Keras and Horovod: canonical
//! qualified names (so that `keras.Model`, `tf.keras.models.Model` and
//! `tf.compat.v1.keras.Model` are one class) and the table of library classes
//! with their learning-rate arguments.

/// Rewrites a resolved dotted name to the one canonical spelling the rules match.
pub fn canonical_name(qualified: &str) -> String {
    const PREFIXES: &[(&str, &str)] = &[
        ("tensorflow.compat.v2.", "tensorflow."),
        ("tensorflow.compat.v1.keras.", "tensorflow.keras."),
        // TF1 code reaches the same API through `tensorflow.compat.v1` in TF2.
        ("tensorflow.compat.v1.", "tensorflow."),
        ("tensorflow.python.keras.", "tensorflow.keras."),
        ("tensorflow.optimizers.", "tensorflow.keras.optimizers."),
        ("tf_keras.", "tensorflow.keras."),
        ("keras.src.", "tensorflow.keras."),
        ("keras.", "tensorflow.keras."),
    ];
    let mut name = qualified.to_string();
    for (prefix, replacement) in PREFIXES {
        if let Some(rest) = name.strip_prefix(prefix) {
            name = format!("{replacement}{rest}");
            break;
        }
    }
    match name.as_str() {
        "tf_keras" | "keras" | "tensorflow.compat.v1.keras" => return "tensorflow.keras".into(),
        "tensorflow.compat.v2" | "tensorflow.compat.v1" => return "tensorflow".into(),
        _ => {}
    }
    const ALIASES: &[(&str, &str)] = &[
        // The TF1 event writer's name before TensorFlow 1.0.
        (
            "tensorflow.train.SummaryWriter",
            "tensorflow.summary.FileWriter",
        ),
        ("tensorflow.keras.models.Model", "tensorflow.keras.Model"),
        (
            "tensorflow.keras.models.Sequential",
            "tensorflow.keras.Sequential",
        ),
        (
            "tensorflow.keras.engine.training.Model",
            "tensorflow.keras.Model",
        ),
        (
            "tensorflow.keras.experimental.CosineDecay",
            "tensorflow.keras.optimizers.schedules.CosineDecay",
        ),
        (
            "tensorflow.keras.experimental.CosineDecayRestarts",
            "tensorflow.keras.optimizers.schedules.CosineDecayRestarts",
        ),
    ];
    if let Some((_, canonical)) = ALIASES.iter().find(|(alias, _)| *alias == name) {
        return (*canonical).to_string();
    }
    // `optimizers.legacy.Adam` takes its learning rate like `optimizers.Adam`.
    name.replace(".optimizers.legacy.", ".optimizers.")
        .replace(".optimizers.experimental.", ".optimizers.")
}

/// Whether `qualified` (as written, before canonicalisation) is standalone Keras 3.
pub fn is_standalone_keras(qualified: &str) -> bool {
    qualified == "keras" || qualified.starts_with("keras.")
}

/// Whether a resolved, canonical name refers into TensorFlow (or Keras).
pub fn is_tensorflow(canonical: &str) -> bool {
    canonical == "tensorflow" || canonical.starts_with("tensorflow.")
}

/// Whether an alias of this TensorFlow member can hide something the
/// rewrite looks for (models, optimizers, training loops, sessions, data,
/// summaries, devices). `tf.app.flags` or `tf.nn.relu` cannot.
pub fn matters_to_rewrite(canonical: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "tensorflow.keras",
        "tensorflow.train",
        "tensorflow.estimator",
        "tensorflow.data",
        "tensorflow.summary",
        "tensorflow.config",
        "tensorflow.distribute",
        "tensorflow.GradientTape",
        "tensorflow.Session",
        "tensorflow.ConfigProto",
        "tensorflow.function",
        "tensorflow.print",
    ];
    canonical == "tensorflow"
        || canonical == "tensorflow.compat.v1"
        || PREFIXES.iter().any(|prefix| {
            canonical == *prefix
                || canonical
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with('.'))
        })
}

pub fn is_horovod(qualified: &str) -> bool {
    qualified == "horovod" || qualified.starts_with("horovod.")
}

pub const KERAS_MODEL: &str = "tensorflow.keras.Model";
pub const KERAS_OPTIMIZER: &str = "tensorflow.keras.optimizers.Optimizer";
pub const KERAS_SCHEDULE: &str = "tensorflow.keras.optimizers.schedules.LearningRateSchedule";

/// Where a constructor takes its learning rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LearningRateArgument {
    pub position: usize,
    pub keyword: &'static str,
    /// Older spellings accepted for the same argument (`lr=` in Keras 2).
    pub legacy_keyword: Option<&'static str>,
    /// The library default, used when the call does not pass one.
    pub default: Option<&'static str>,
}

/// A library class the rules know.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LibraryClass {
    Model,
    Optimizer(LearningRateArgument),
    Schedule(LearningRateArgument),
    /// A Keras callback; `writes_files` callbacks run on rank 0 only.
    Callback {
        writes_files: bool,
    },
}

const fn keras_optimizer(default: &'static str) -> LibraryClass {
    LibraryClass::Optimizer(LearningRateArgument {
        position: 0,
        keyword: "learning_rate",
        legacy_keyword: Some("lr"),
        default: Some(default),
    })
}

const fn schedule(keyword: &'static str) -> LibraryClass {
    LibraryClass::Schedule(LearningRateArgument {
        position: 0,
        keyword,
        legacy_keyword: None,
        default: None,
    })
}

/// Keras optimizers with their learning-rate defaults, by class name: scaling
/// the learning rate by the number of workers needs the default when a call
/// passes none.
pub const KERAS_OPTIMIZERS: &[(&str, &str)] = &[
    ("Adam", "0.001"),
    ("SGD", "0.01"),
    ("RMSprop", "0.001"),
    ("Adagrad", "0.001"),
    ("Adadelta", "0.001"),
    ("Adamax", "0.001"),
    ("Nadam", "0.001"),
    ("Ftrl", "0.001"),
    ("AdamW", "0.001"),
    ("Lion", "0.0001"),
    ("Adafactor", "0.001"),
];

/// The default learning rate of a Keras optimizer class (`"Adam"`).
pub fn keras_default_learning_rate(class: &str) -> Option<&'static str> {
    KERAS_OPTIMIZERS
        .iter()
        .find(|(name, _)| *name == class)
        .map(|(_, default)| *default)
}

/// TF1 optimizers (`tf.train.*Optimizer`, `tf.compat.v1.train.*Optimizer`)
/// with their learning-rate default, where the argument is optional.
pub const TF1_OPTIMIZERS: &[(&str, Option<&str>)] = &[
    ("AdamOptimizer", Some("0.001")),
    ("AdadeltaOptimizer", Some("0.001")),
    ("GradientDescentOptimizer", None),
    ("MomentumOptimizer", None),
    ("AdagradOptimizer", None),
    ("AdagradDAOptimizer", None),
    ("RMSPropOptimizer", None),
    ("FtrlOptimizer", None),
    ("ProximalGradientDescentOptimizer", None),
    ("ProximalAdagradOptimizer", None),
];

/// Whether a canonical name is a TF1 optimizer class.
pub fn is_tf1_optimizer(canonical: &str) -> bool {
    canonical
        .strip_prefix("tensorflow.train.")
        .is_some_and(|class| TF1_OPTIMIZERS.iter().any(|(name, _)| *name == class))
}

/// APIs TensorFlow 2 removed (reached without `compat.v1`): a program
/// that calls one runs TensorFlow 1, which has no `tf.keras.optimizers.legacy`.
const TF1_ONLY_PREFIXES: &[&str] = &[
    "tensorflow.contrib.",
    "tensorflow.logging.",
    "tensorflow.Session",
    "tensorflow.placeholder",
];

/// Whether a raw dotted callee (as imported, before canonical names) is an
/// API only TensorFlow 1 has.
pub fn is_tf1_only(raw: &str) -> bool {
    TF1_ONLY_PREFIXES
        .iter()
        .any(|prefix| raw.starts_with(prefix))
}

/// The class a string given to `compile(optimizer=...)` names.
pub fn optimizer_for_string(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    KERAS_OPTIMIZERS
        .iter()
        .map(|(class, _)| *class)
        .find(|class| class.to_ascii_lowercase() == lower)
}

/// Looks up a canonical qualified name in the library table.
pub fn library_class(canonical: &str) -> Option<LibraryClass> {
    if canonical == KERAS_MODEL || canonical == "tensorflow.keras.Sequential" {
        return Some(LibraryClass::Model);
    }
    if let Some(class) = canonical.strip_prefix("tensorflow.keras.optimizers.schedules.") {
        return match class {
            "ExponentialDecay"
            | "InverseTimeDecay"
            | "PolynomialDecay"
            | "CosineDecay"
            | "CosineDecayRestarts" => Some(schedule("initial_learning_rate")),
            "PiecewiseConstantDecay" => Some(LibraryClass::Schedule(LearningRateArgument {
                position: 1,
                keyword: "values",
                legacy_keyword: None,
                default: None,
            })),
            _ => None,
        };
    }
    if let Some(class) = canonical.strip_prefix("tensorflow.keras.optimizers.") {
        return KERAS_OPTIMIZERS
            .iter()
            .find(|(name, _)| *name == class)
            .map(|(_, default)| keras_optimizer(default));
    }
    if let Some(class) = canonical.strip_prefix("tensorflow.train.") {
        return TF1_OPTIMIZERS
            .iter()
            .find(|(name, _)| *name == class)
            .map(|(_, default)| {
                LibraryClass::Optimizer(LearningRateArgument {
                    position: 0,
                    keyword: "learning_rate",
                    legacy_keyword: None,
                    default: *default,
                })
            });
    }
    if canonical.starts_with("tensorflow.keras.callbacks.") {
        let writes_files = super::catalogue::Catalogue::builtin()
            .call(canonical)
            .is_some_and(|entry| {
                entry
                    .has(|effect| matches!(effect, super::catalogue::Effect::CallbackWrites { .. }))
            });
        return Some(LibraryClass::Callback { writes_files });
    }
    None
}

/// The type a catalogued call returns when it returns a Keras model.
pub const KERAS_MODEL_TYPE: &str = "tensorflow.keras.Model";

/// Library functions that return a Keras model: Keras' own loaders and
/// applications, and what the catalogue says returns one (a library's
/// pretrained models, such as Hugging Face's TensorFlow ones).
pub fn returns_model(canonical: &str) -> bool {
    let catalogued = super::catalogue::Catalogue::builtin()
        .call(canonical)
        .is_some_and(|entry| entry.returns.as_deref() == Some(KERAS_MODEL_TYPE));
    catalogued
        || matches!(
            canonical,
            "tensorflow.keras.models.load_model"
                | "tensorflow.keras.models.clone_model"
                | "tensorflow.keras.models.model_from_json"
                | "tensorflow.keras.saving.load_model"
        )
        || canonical.starts_with("tensorflow.keras.applications.")
            && canonical
                .rsplit('.')
                .next()
                .is_some_and(|last| last.starts_with(|c: char| c.is_ascii_uppercase()))
}

/// One optimizer step of a Keras model on one batch: loops of it train GANs
/// and reinforcement-learning agents.
pub const KERAS_BATCH_STEP: &str = "train_on_batch";

/// Keras methods that train a compiled model: `fit`, and Keras 2's
/// `fit_generator` (tf.keras up to 2.15).
pub fn is_keras_fit_method(name: &str) -> bool {
    matches!(name, "fit" | "fit_generator")
}

pub fn is_gradient_tape(canonical: &str) -> bool {
    canonical == "tensorflow.GradientTape" || canonical == "tensorflow.autodiff.GradientTape"
}

pub fn is_tf_function(canonical: &str) -> bool {
    canonical == "tensorflow.function" || canonical == "tensorflow.compat.v1.function"
}

/// Steps of a tf.data pipeline after which TensorFlow still knows its count
/// (Keras then knows an epoch's steps).
pub const COUNT_KEEPING_METHODS: &[&str] = &[
    "map",
    "take",
    "cache",
    "prefetch",
    "batch",
    "padded_batch",
    "shuffle",
];

/// Methods that take an optimizer step (or update variables by hand): a
/// module that calls none trains nothing (analysis, inference).
pub const OPTIMIZER_STEP_METHODS: &[&str] = &[
    "apply_gradients",
    "minimize",
    "assign_sub",
    "assign_add",
    "assign",
    "fit",
    "fit_generator",
    "train_on_batch",
    "train",
];

/// A library function that draws from the process's random state.
pub fn draws_at_random(callee: &str) -> bool {
    // Constructing a generator or seeding one draws nothing yet.
    let makes_or_seeds = matches!(
        callee.rsplit('.').next(),
        Some(
            "seed"
                | "RandomState"
                | "default_rng"
                | "Generator"
                | "set_seed"
                | "get_state"
                | "set_state"
        )
    );
    !makes_or_seeds
        && (callee.starts_with("numpy.random.")
            || callee.starts_with("random.")
            || callee.starts_with("tensorflow.random.")
            || callee == "tensorflow.train.shuffle_batch")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_spellings_are_one_class() {
        for spelling in [
            "tensorflow.keras.Model",
            "tensorflow.keras.models.Model",
            "keras.Model",
            "keras.models.Model",
            "tensorflow.compat.v1.keras.Model",
        ] {
            assert_eq!(canonical_name(spelling), KERAS_MODEL, "{spelling}");
        }
    }

    #[test]
    fn tf1_names_through_compat_v1_are_the_tf1_names() {
        assert_eq!(
            canonical_name("tensorflow.compat.v1.Session"),
            "tensorflow.Session"
        );
        assert_eq!(
            canonical_name("tensorflow.compat.v1.train.AdamOptimizer"),
            "tensorflow.train.AdamOptimizer"
        );
        assert!(is_tf1_optimizer("tensorflow.train.MomentumOptimizer"));
        assert!(
            matches!(library_class("tensorflow.train.AdamOptimizer"), Some(LibraryClass::Optimizer(argument)) if argument.default == Some("0.001"))
        );
    }

    #[test]
    fn optimizers_know_their_learning_rate() {
        let adam = library_class(&canonical_name("tensorflow.optimizers.Adam"));
        assert!(
            matches!(adam, Some(LibraryClass::Optimizer(argument)) if argument.default == Some("0.001"))
        );
        let legacy = library_class(&canonical_name("tensorflow.keras.optimizers.legacy.SGD"));
        assert!(
            matches!(legacy, Some(LibraryClass::Optimizer(argument)) if argument.default == Some("0.01"))
        );
        assert_eq!(optimizer_for_string("rmsprop"), Some("RMSprop"));
    }
}
