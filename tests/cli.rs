//! The command line as a user meets it: exit codes, what is printed, what is
//! written, and what happens on bad input.

mod support;
use support::copy_tree;

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(case)
        .join("input")
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn distribute(arguments: &[&str], directory: &Path) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_distribute"))
        .args(arguments)
        .current_dir(directory)
        .output()
        .expect("the binary runs");
    Run {
        code: output
            .status
            .code()
            .expect("exited normally, not by a signal"),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

/// A scratch copy of a fixture package, with its own root (no git above it).
fn scratch_copy(case: &str) -> tempfile::TempDir {
    let scratch = tempfile::tempdir().unwrap();
    copy_tree(&fixture(case), scratch.path());
    scratch
}

#[test]
fn check_reports_pending_rewrite_with_exit_1_and_linter_style_lines() {
    let scratch = scratch_copy("keras_optimizer_object");
    let run = distribute(&["check", "--root", "."], scratch.path());
    assert_eq!(run.code, 1, "{}", run.stdout);
    insta::assert_snapshot!(format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        run.code, run.stdout, run.stderr
    ));
}

#[test]
fn diff_prints_a_unified_diff_and_changes_nothing() {
    let scratch = scratch_copy("keras_optimizer_object");
    let before = std::fs::read_to_string(scratch.path().join("train.py")).unwrap();
    let run = distribute(&["diff", "--root", "."], scratch.path());
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.contains("--- a/train.py\n+++ b/train.py\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("+    opt = hvd.DistributedOptimizer(opt)\n")
    );
    assert_eq!(
        before,
        std::fs::read_to_string(scratch.path().join("train.py")).unwrap()
    );
}

#[test]
fn json_output_has_the_documented_shape() {
    let scratch = scratch_copy("keras_optimizer_object");
    let run = distribute(&["diff", "--root", ".", "--format", "json"], scratch.path());
    assert_eq!(run.code, 1);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).expect("valid JSON");
    assert_eq!(report["version"], 1);
    let module = &report["modules"][0];
    assert_eq!(module["path"], "train.py");
    assert_eq!(module["pattern"], "keras");
    assert_eq!(module["changed"], true);
    assert!(
        module["diff"]
            .as_str()
            .unwrap()
            .starts_with("--- a/train.py")
    );
    let diagnostic = &module["diagnostics"][0];
    for field in [
        "code",
        "severity",
        "message",
        "line",
        "column",
        "suggestion",
    ] {
        assert!(
            diagnostic.get(field).is_some(),
            "diagnostic lacks {field}: {diagnostic}"
        );
    }
    assert_eq!(report["errors"], serde_json::json!([]));
}

#[test]
fn fix_writes_once_and_then_has_nothing_to_do() {
    let scratch = scratch_copy("tape_tf_function");
    let first = distribute(&["fix", "--root", "."], scratch.path());
    assert_eq!(
        first.code, 1,
        "fix exits 1 when it changed files: {}",
        first.stdout
    );
    let written = std::fs::read_to_string(scratch.path().join("train.py")).unwrap();
    assert!(written.contains("tape = hvd.DistributedGradientTape(tape)"));
    let second = distribute(&["fix", "--root", "."], scratch.path());
    assert_eq!(second.code, 0, "{}", second.stdout);
    assert_eq!(
        written,
        std::fs::read_to_string(scratch.path().join("train.py")).unwrap()
    );
    let check = distribute(&["check", "--root", "."], scratch.path());
    assert_eq!(check.code, 0, "{}", check.stdout);
}

#[test]
fn bad_files_are_reported_and_the_rest_is_still_rewritten() {
    let scratch = scratch_copy("bad_input");
    let broken_before = std::fs::read(scratch.path().join("broken.py")).unwrap();
    let run = distribute(&["fix", "--root", "."], scratch.path());
    assert_eq!(
        run.code, 2,
        "file errors make the exit code 2: {}",
        run.stdout
    );
    assert!(
        run.stdout.contains("broken.py:7:10: error: syntax error"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("latin1.py:3:6: error: not valid UTF-8"),
        "{}",
        run.stdout
    );
    // Empty modules are common in real trees and say nothing: no noise.
    assert!(!run.stdout.contains("empty.py"), "{}", run.stdout);
    assert!(
        std::fs::read_to_string(scratch.path().join("train.py"))
            .unwrap()
            .contains("hvd.DistributedOptimizer(opt)")
    );
    assert_eq!(
        broken_before,
        std::fs::read(scratch.path().join("broken.py")).unwrap()
    );
}

#[test]
fn mixed_module_is_not_rewritten_and_fails_the_check() {
    let scratch = scratch_copy("mixed_fit_and_tape");
    let run = distribute(&["check", "--root", "."], scratch.path());
    assert_eq!(
        run.code, 1,
        "an error-severity diagnostic fails the check: {}",
        run.stdout
    );
    assert!(run.stdout.contains("DST011"));
    let relaxed = distribute(
        &["check", "--root", ".", "--fail-on", "never"],
        scratch.path(),
    );
    assert_eq!(relaxed.code, 0);
}

#[test]
fn package_without_training_code_exits_0() {
    let scratch = scratch_copy("non_training_modules");
    let run = distribute(&["check", "--root", "."], scratch.path());
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.contains("0 training modules found"));
}

#[test]
fn paths_limit_what_is_reported_but_not_what_is_analysed() {
    // The model class lives in another module; reporting on train.py alone still sees it.
    let scratch = scratch_copy("keras_cross_file_model");
    let run = distribute(&["diff", "--root", ".", "mypkg/train.py"], scratch.path());
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("+++ b/mypkg/train.py"));
    // A changed model module brings in the training script that imports it...
    let models_only = distribute(
        &["diff", "--root", ".", "mypkg/models/base.py"],
        scratch.path(),
    );
    assert_eq!(models_only.code, 1, "{}", models_only.stdout);
    assert!(
        models_only.stdout.contains("+++ b/mypkg/train.py"),
        "{}",
        models_only.stdout
    );
    // ...a changed data utility does not: the training script's classification does not depend on it.
    let data_only = distribute(&["diff", "--root", ".", "mypkg/data.py"], scratch.path());
    assert_eq!(data_only.code, 0, "{}", data_only.stdout);
}

#[test]
fn usage_errors_exit_2_with_a_message() {
    let scratch = tempfile::tempdir().unwrap();
    let run = distribute(&["check", "does/not/exist.py"], scratch.path());
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("does/not/exist.py: no such file or directory"),
        "{}",
        run.stderr
    );
    let unknown = distribute(&["frobnicate"], scratch.path());
    assert_eq!(unknown.code, 2);
}

#[test]
fn deep_nesting_and_huge_files_do_not_crash() {
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path();
    copy_tree(&fixture("keras_optimizer_object"), root);
    // 5,000 levels of brackets: CPython refuses more than 200; so do we, with a position.
    let deep = format!(
        "import tensorflow as tf\nx = {}1{}\n",
        "[".repeat(5000),
        "]".repeat(5000)
    );
    std::fs::write(root.join("deep_brackets.py"), deep).unwrap();
    // 5,000 chained operators and unary minuses: deep trees without brackets.
    let chain = format!(
        "import tensorflow as tf\ny = 1{}\nz = {}1\n",
        " + 1".repeat(5000),
        "-".repeat(5000)
    );
    std::fs::write(root.join("deep_chain.py"), chain).unwrap();
    // A 10 MB module that mentions tensorflow, so it is parsed.
    let mut huge = String::from("import tensorflow as tf\n");
    let mut index = 0;
    while huge.len() < 10 * 1024 * 1024 {
        huge.push_str(&format!(
            "def function_{index}(x):\n    # a comment\n    return tf.reduce_sum(x) + {index}\n\n"
        ));
        index += 1;
    }
    std::fs::write(root.join("huge.py"), huge).unwrap();
    let run = distribute(&["fix", "--root", "."], root);
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("deep_brackets.py:2:"), "{}", run.stdout);
    assert!(
        run.stdout.contains("too many nested parentheses"),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("deep_chain.py"),
        "a deep but valid file is not an error: {}",
        run.stdout
    );
    assert!(!run.stdout.contains("huge.py"), "{}", run.stdout);
    assert!(
        std::fs::read_to_string(root.join("train.py"))
            .unwrap()
            .contains("hvd.init()")
    );
}

/// `examples/mnist_keras_horovod` (what `scripts/demo-horovod` trains) is the
/// current rewrite of `examples/mnist_keras`: regenerate it when the rules change.
#[test]
fn shipped_demo_is_the_current_rewrite_of_the_example() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let scratch = tempfile::tempdir().unwrap();
    copy_tree(&examples.join("mnist_keras"), scratch.path());
    let run = distribute(&["fix", "--root", "."], scratch.path());
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    for name in ["__init__.py", "data.py", "model.py", "train.py"] {
        let relative = format!("mnist_keras/{name}");
        let rewritten = std::fs::read_to_string(scratch.path().join(&relative)).unwrap();
        let shipped =
            std::fs::read_to_string(examples.join("mnist_keras_horovod").join(&relative)).unwrap();
        assert!(
            rewritten == shipped,
            "examples/mnist_keras_horovod/{relative} is not the current rewrite; regenerate it: \
             cp -r examples/mnist_keras/mnist_keras examples/mnist_keras_horovod/ && \
             distribute fix --root examples/mnist_keras_horovod"
        );
    }
}

/// An unsafe rewrite (the checker cannot show the sharded stream is split by
/// its whole `take`) is held back by default: `check` and `diff` say so and
/// count it, `fix` leaves the file; `--unsafe-fixes` or `unsafe-fixes: true`
/// applies it; JSON carries its applicability.
#[test]
fn unsafe_rewrites_are_held_back_unless_asked_for() {
    let scratch = scratch_copy("tape_basic");
    let train = scratch.path().join("train.py");
    let original = std::fs::read_to_string(&train).unwrap();

    let check = distribute(&["check", "--root", ".", "--no-cache"], scratch.path());
    assert!(
        check.stdout.contains("DST304 [warning]"),
        "{}",
        check.stdout
    );
    assert!(
        check.stdout.contains("train.py: has an unsafe rewrite"),
        "{}",
        check.stdout
    );
    assert!(
        check
            .stdout
            .contains("1 unsafe rewrite hidden: it can be enabled with `--unsafe-fixes`"),
        "{}",
        check.stdout
    );
    assert_eq!(
        check.code, 0,
        "nothing applicable is pending and no error: {}",
        check.stdout
    );

    let diff = distribute(&["diff", "--root", ".", "--no-cache"], scratch.path());
    assert!(!diff.stdout.contains("+++ b/train.py"), "{}", diff.stdout);
    let shown = distribute(
        &["diff", "--root", ".", "--no-cache", "--unsafe-fixes"],
        scratch.path(),
    );
    assert!(shown.stdout.contains("+++ b/train.py"), "{}", shown.stdout);
    assert_eq!(shown.code, 1);

    let json = distribute(
        &["check", "--root", ".", "--no-cache", "--format", "json"],
        scratch.path(),
    );
    let report: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let module = &report["modules"][0];
    assert_eq!(module["applicability"], "unsafe");
    assert_eq!(module["held_back"], true);
    assert_eq!(module["changed"], false);

    let fix = distribute(&["fix", "--root", ".", "--no-cache"], scratch.path());
    assert_eq!(
        std::fs::read_to_string(&train).unwrap(),
        original,
        "{}",
        fix.stdout
    );
    std::fs::write(
        scratch.path().join(".distribute.yml"),
        "unsafe-fixes: true\n",
    )
    .unwrap();
    let fix = distribute(&["fix", "--root", ".", "--no-cache"], scratch.path());
    assert_eq!(fix.code, 1, "{}", fix.stdout);
    assert!(
        std::fs::read_to_string(&train)
            .unwrap()
            .contains("hvd.DistributedGradientTape")
    );
}

/// A rewrite the checker shows wrong is withdrawn: an error names the
/// violation and nothing is written, even with `--unsafe-fixes`.
#[test]
fn withdrawn_rewrites_are_never_written() {
    let scratch = scratch_copy("diag_tensorflow_bound_without_import");
    let train = scratch.path().join("train.py");
    let original = std::fs::read_to_string(&train).unwrap();
    let fix = distribute(
        &["fix", "--root", ".", "--no-cache", "--unsafe-fixes"],
        scratch.path(),
    );
    assert!(fix.stdout.contains("DST301 [error]"), "{}", fix.stdout);
    assert!(
        fix.stdout
            .contains("the rewrite of this module was withdrawn"),
        "{}",
        fix.stdout
    );
    assert_eq!(std::fs::read_to_string(&train).unwrap(), original);
    assert_eq!(
        fix.code, 1,
        "an error diagnostic fails the run: {}",
        fix.stdout
    );
}
