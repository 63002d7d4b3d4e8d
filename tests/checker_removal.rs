//! The checker, not the rules, is what stops a wrong rewrite: for each
//! invariant, a program the rules rewrite with that defect is withdrawn or
//! held back by default, and offered as safe once that invariant's code is
//! turned off (`severity: {CODE: off}` leaves the invariant out).
//!
//! The programs are the project's own: fixtures of `tests/fixtures/` and the
//! small programs of `tests/checker_removal/`, each in a shape found on real
//! code where the rules go wrong.

use std::path::{Path, PathBuf};

use distribute::engine::{self, ModuleOutcome, RunRequest};
use distribute::workspace::config::Config;

/// Invariants whose defect no rule makes any more: the rules got the shape
/// right, and `tests/checker_mutations.rs` injects the defect instead.
const RULES_NO_LONGER_MAKE: &[(&str, &str)] = &[(
    "DST310",
    "a tape of watched inputs beside training (tests/checker_removal/input_gradients) is no training site for the rules; checker_mutations wraps one",
)];

const CASES: &[(&str, &str, &str)] = &[
    (
        "DST301",
        "tests/fixtures/diag_tensorflow_bound_without_import/input",
        "train.py",
    ),
    (
        "DST302",
        "tests/checker_removal/optimize_loss_string",
        "train.py",
    ),
    (
        "DST303",
        "tests/fixtures/diag_loop_spread_over_files/input",
        "trainlib/steps.py",
    ),
    (
        "DST303",
        "tests/checker_removal/weights_kept_from_before",
        "train.py",
    ),
    ("DST304", "tests/fixtures/tape_basic/input", "train.py"),
    (
        "DST305",
        "tests/fixtures/already_converted_new_print/input",
        "train.py",
    ),
    (
        "DST306",
        "tests/checker_removal/estimator_same_batches",
        "train.py",
    ),
    (
        "DST307",
        "tests/fixtures/tape_checkpoint_saves/input",
        "train.py",
    ),
    (
        "DST308",
        "tests/fixtures/refuse_steps_per_environment_step/input",
        "until_converged.py",
    ),
    (
        "DST309",
        "tests/checker_removal/keras_tf1_optimizer",
        "train.py",
    ),
    (
        "DST311",
        "tests/checker_removal/keras_session_config_from_helper",
        "train.py",
    ),
];

fn outcome_of(root: &Path, config: Config, path: &str) -> ModuleOutcome {
    let request = RunRequest {
        root: root.to_path_buf(),
        config,
        codes: distribute::registry::all_codes(),
        ..Default::default()
    };
    let outcome = engine::with_large_stack(move || engine::run(&request));
    outcome
        .modules
        .into_iter()
        .find(|module| module.relative_path == path)
        .unwrap_or_else(|| panic!("{}: {path} is not a training module", root.display()))
}

/// The programs of `RULES_NO_LONGER_MAKE` are rewritten without the defect,
/// and offered as safe.
#[test]
fn shapes_the_rules_now_get_right_are_safe() {
    let root =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/checker_removal/input_gradients");
    let outcome = outcome_of(&root, Config::default(), "train.py");
    assert_eq!(
        outcome.applicability,
        Some(distribute::checker::applicability::Applicability::Safe),
        "{:#?}",
        outcome.diagnostics
    );
    let rewritten = outcome.rewritten.expect("rewritten");
    assert_eq!(
        rewritten.matches("DistributedGradientTape").count(),
        1,
        "only the training tape is wrapped:\n{rewritten}"
    );
}

#[test]
fn each_invariant_is_what_stops_its_defect() {
    let codes: std::collections::BTreeSet<&str> = CASES
        .iter()
        .map(|(code, _, _)| *code)
        .chain(RULES_NO_LONGER_MAKE.iter().map(|(code, _)| *code))
        .collect();
    assert_eq!(codes.len(), 11, "a case for every invariant");
    for (code, directory, path) in CASES {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(directory);
        let checked = outcome_of(&root, Config::default(), path);
        assert!(
            checked.applicability != Some(distribute::checker::applicability::Applicability::Safe),
            "{code} {directory}: offered as safe with every invariant on"
        );
        assert!(
            checked
                .diagnostics
                .iter()
                .any(|diagnostic| diagnostic.code == *code),
            "{code} {directory}: the invariant says nothing:\n{:#?}",
            checked.diagnostics
        );
        let without = Config::parse(
            &format!("severity:\n  {code}: off\n"),
            "test.yml",
            distribute::registry::all_codes(),
        )
        .unwrap();
        let unchecked = outcome_of(&root, without, path);
        assert_eq!(
            unchecked.applicability,
            Some(distribute::checker::applicability::Applicability::Safe),
            "{code} {directory}: without the invariant the defect should pass as safe:\n{:#?}",
            unchecked.diagnostics
        );
        assert!(
            unchecked.rewritten.is_some(),
            "{code} {directory}: not rewritten"
        );
    }
}
