//! Diagnostic codes (SPEC 7): one code per assumption, with a stable name and
//! a default severity, so that users can configure each one.

use std::ops::Range;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// Every diagnostic the tool can emit. The numbers are stable: never reuse one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Code {
    ImportNotAtTop,
    TensorflowBoundWithoutImport,
    TensorflowMemberAliased,
    PrintWithSideEffects,
    CreatedMoreThanOnce,
    Reassigned,
    CreatedConditionally,
    ApplyGradientsPosition,
    GlobalOptimizerChanged,
    TrainingLoopSpreadOverFiles,
    MixedTrainingLoops,
    FunctionPassedAsValue,
    TrainingLoopDefinedConditionally,
    DatasetNotSharded,
    LearningRateWithoutWarmup,
    Keras3,
    DevicePinningRemoved,
    AlreadyUsesHorovod,
    CallbacksNotVisible,
    BroadcastPlacement,
    StatementNotGuarded,
    OptimizerNotFound,
    ModelAssumed,
    SessionConfigNotFound,
    VariablesInitializerNotRun,
    SeveralSessions,
    SessionUsedAcrossFunctions,
    ModelFunctionNotFound,
}

/// The table of codes: code, kebab-case name, default severity, what it means.
pub const CODES: &[(Code, &str, &str, Severity, &str)] = &[
    (
        Code::ImportNotAtTop,
        "DST001",
        "import-not-at-top",
        Severity::Warning,
        "An import is not at the top of the module (seed 000 §2.1 restriction 1).",
    ),
    (
        Code::TensorflowBoundWithoutImport,
        "DST002",
        "tensorflow-bound-without-import",
        Severity::Warning,
        "TensorFlow is bound by other means than an import statement (restriction 2).",
    ),
    (
        Code::TensorflowMemberAliased,
        "DST003",
        "tensorflow-member-aliased",
        Severity::Warning,
        "A member of TensorFlow is assigned to a variable (restriction 3).",
    ),
    (
        Code::PrintWithSideEffects,
        "DST004",
        "print-with-side-effects",
        Severity::Warning,
        "A print's arguments have side effects, so it cannot be moved to rank 0 (restriction 4).",
    ),
    (
        Code::CreatedMoreThanOnce,
        "DST005",
        "created-more-than-once",
        Severity::Warning,
        "A dataset, optimizer or checkpoint is created more than once or aliased (restrictions 5, 10).",
    ),
    (
        Code::Reassigned,
        "DST006",
        "reassigned",
        Severity::Warning,
        "A variable holding an optimizer, dataset or checkpoint is reassigned to something else (restriction 6).",
    ),
    (
        Code::CreatedConditionally,
        "DST007",
        "created-conditionally",
        Severity::Warning,
        "An optimizer is created conditionally or in a loop (restriction 7).",
    ),
    (
        Code::ApplyGradientsPosition,
        "DST008",
        "apply-gradients-position",
        Severity::Error,
        "`apply_gradients` is neither an expression statement nor the right-hand side of an assignment (restriction 8).",
    ),
    (
        Code::GlobalOptimizerChanged,
        "DST009",
        "global-optimizer-changed",
        Severity::Warning,
        "A global optimizer used in functions is defined or changed after them (restriction 9).",
    ),
    (
        Code::TrainingLoopSpreadOverFiles,
        "DST010",
        "training-loop-spread-over-files",
        Severity::Error,
        "No loop of the package calls the GradientTape step by its name (the loop is outside the package, or reaches the step another way): the one-time broadcast was not added.",
    ),
    (
        Code::MixedTrainingLoops,
        "DST011",
        "mixed-training-loops",
        Severity::Error,
        "One module uses several training APIs; it is not rewritten (§3.1 restrictions 2, 3).",
    ),
    (
        Code::FunctionPassedAsValue,
        "DST012",
        "function-passed-as-value",
        Severity::Warning,
        "A function that trains is assigned or passed as a value; the loop may be missed (§3.1 restriction 4).",
    ),
    (
        Code::TrainingLoopDefinedConditionally,
        "DST013",
        "training-loop-defined-conditionally",
        Severity::Warning,
        "A function that trains is defined conditionally (§3.1 restriction 5).",
    ),
    (
        Code::DatasetNotSharded,
        "DST101",
        "dataset-not-sharded",
        Severity::Warning,
        "Every worker iterates the whole dataset and no step count divides the work: no speed-up.",
    ),
    (
        Code::LearningRateWithoutWarmup,
        "DST102",
        "learning-rate-without-warmup",
        Severity::Info,
        "The learning rate is scaled by the number of workers with no warm-up.",
    ),
    (
        Code::Keras3,
        "DST103",
        "keras-3",
        Severity::Warning,
        "Keras 3 is used; Horovod needs tf.keras 2 (`tf_keras`, `TF_USE_LEGACY_KERAS=1`).",
    ),
    (
        Code::DevicePinningRemoved,
        "DST104",
        "device-pinning-removed",
        Severity::Info,
        "User code that pinned devices was removed: Horovod pins one GPU per process.",
    ),
    (
        Code::AlreadyUsesHorovod,
        "DST105",
        "already-uses-horovod",
        Severity::Info,
        "The module already uses Horovod; only what is missing is added.",
    ),
    (
        Code::CallbacksNotVisible,
        "DST106",
        "callbacks-not-visible",
        Severity::Warning,
        "The callbacks list is built where the tool cannot see it; callbacks that write files may run on every rank.",
    ),
    (
        Code::BroadcastPlacement,
        "DST107",
        "broadcast-placement",
        Severity::Info,
        "Where the one-time broadcast of the initial variables was placed, and why.",
    ),
    (
        Code::StatementNotGuarded,
        "DST108",
        "statement-not-guarded",
        Severity::Warning,
        "A statement that should run on rank 0 only was left on every rank: it shares its line with other code, or it is a save whose result is used further down.",
    ),
    (
        Code::OptimizerNotFound,
        "DST109",
        "optimizer-not-found",
        Severity::Warning,
        "The optimizer or its learning rate could not be found or resolved.",
    ),
    (
        Code::ModelAssumed,
        "DST110",
        "model-assumed",
        Severity::Info,
        "A `fit` receiver that the tool cannot resolve is assumed to be a Keras model.",
    ),
    (
        Code::SessionConfigNotFound,
        "DST111",
        "session-config-not-found",
        Severity::Warning,
        "The `config=` given to a session or RunConfig could not be found, so its GPU was not pinned.",
    ),
    (
        Code::VariablesInitializerNotRun,
        "DST112",
        "variables-initializer-not-run",
        Severity::Error,
        "No `global_variables_initializer` is run, so the broadcast of the initial variables could not be placed.",
    ),
    (
        Code::SeveralSessions,
        "DST113",
        "several-sessions",
        Severity::Warning,
        "The module creates several sessions; each is pinned, but only the first initialiser run is followed by a broadcast.",
    ),
    (
        Code::SessionUsedAcrossFunctions,
        "DST114",
        "session-used-across-functions",
        Severity::Warning,
        "A session created in one function is run in another; the rewrite follows only the creating function.",
    ),
    (
        Code::ModelFunctionNotFound,
        "DST115",
        "model-fn-not-found",
        Severity::Warning,
        "The Estimator's `model_fn` could not be resolved, so its optimizer was not wrapped.",
    ),
];

impl Code {
    fn entry(self) -> &'static (Code, &'static str, &'static str, Severity, &'static str) {
        CODES
            .iter()
            .find(|entry| entry.0 == self)
            .expect("every code has an entry in CODES")
    }

    pub fn id(self) -> &'static str {
        self.entry().1
    }

    pub fn name(self) -> &'static str {
        self.entry().2
    }

    pub fn default_severity(self) -> Severity {
        self.entry().3
    }

    pub fn summary(self) -> &'static str {
        self.entry().4
    }

    /// Looks a code up by its id (`DST001`) or name (`import-not-at-top`).
    pub fn from_id_or_name(text: &str) -> Option<Code> {
        CODES
            .iter()
            .find(|entry| entry.1.eq_ignore_ascii_case(text) || entry.2 == text)
            .map(|entry| entry.0)
    }
}

/// One broken or relied-upon assumption, at the statement that concerns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    /// Byte range in the original file.
    pub range: Range<usize>,
    pub message: String,
    pub suggestion: Option<String>,
}

impl Diagnostic {
    pub fn new(code: Code, range: Range<usize>, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            severity: code.default_severity(),
            range,
            message: message.into(),
            suggestion: None,
        }
    }

    pub fn with_suggestion(mut self, suggestion: impl Into<String>) -> Self {
        self.suggestion = Some(suggestion.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique() {
        let mut ids: Vec<&str> = CODES.iter().map(|entry| entry.1).collect();
        let mut names: Vec<&str> = CODES.iter().map(|entry| entry.2).collect();
        ids.sort();
        ids.dedup();
        names.sort();
        names.dedup();
        assert_eq!(ids.len(), CODES.len());
        assert_eq!(names.len(), CODES.len());
        assert_eq!(
            Code::from_id_or_name("dst011"),
            Some(Code::MixedTrainingLoops)
        );
    }
}
