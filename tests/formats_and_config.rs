//! Report formats (SARIF validated against the official 2.1.0 schema, GitHub
//! workflow commands) and `.distribute.yml` (output modes, severities,
//! dataset sharding, errors that name the key and line).

mod support;
use support::copy_tree;

use std::path::{Path, PathBuf};
use std::process::Command;

fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn scratch_copy(cases: &[&str]) -> tempfile::TempDir {
    let scratch = tempfile::tempdir().unwrap();
    for case in cases {
        copy_tree(
            &repository_root()
                .join("tests/fixtures")
                .join(case)
                .join("input"),
            scratch.path(),
        );
    }
    scratch
}

fn distribute(directory: &Path, arguments: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_distribute"))
        .args(arguments)
        .current_dir(directory)
        .output()
        .unwrap();
    (
        output.status.code().unwrap(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

/// Installs pre-commit and the SARIF schema under target/test-tools (once).
fn setup_test_tools() {
    let status = Command::new(repository_root().join("scripts/setup-test-tools"))
        .current_dir(repository_root())
        .status()
        .unwrap();
    assert!(status.success(), "scripts/setup-test-tools failed");
}

#[test]
fn sarif_output_is_valid_sarif_2_1_0_with_one_result_per_diagnostic() {
    setup_test_tools();
    let scratch = scratch_copy(&["bad_input", "tape_checkpoints_and_summaries"]);
    let (code, sarif, _) = distribute(
        scratch.path(),
        &["check", "--root", ".", "--format", "sarif"],
    );
    assert_eq!(code, 2, "file errors still give exit code 2");
    let (_, json, _) = distribute(
        scratch.path(),
        &["check", "--root", ".", "--format", "json"],
    );
    let sarif_file = scratch.path().join("report.sarif");
    std::fs::write(&sarif_file, &sarif).unwrap();
    let validation = Command::new(repository_root().join("scripts/validate-sarif"))
        .arg(&sarif_file)
        .output()
        .unwrap();
    assert!(
        validation.status.success(),
        "SARIF does not validate against the 2.1.0 schema:\n{}{}",
        String::from_utf8_lossy(&validation.stdout),
        String::from_utf8_lossy(&validation.stderr)
    );
    let document: serde_json::Value = serde_json::from_str(&sarif).unwrap();
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    let diagnostics: usize = report["modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|module| module["diagnostics"].as_array().unwrap().len())
        .sum();
    let results = document["runs"][0]["results"].as_array().unwrap();
    assert!(diagnostics > 0);
    assert_eq!(results.len(), diagnostics);
    let rules = document["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap();
    for result in results {
        let index = result["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[index]["id"], result["ruleId"]);
        assert!(
            result["locations"][0]["physicalLocation"]["region"]["startLine"]
                .as_u64()
                .unwrap()
                >= 1
        );
    }
    let notifications = document["runs"][0]["invocations"][0]["toolExecutionNotifications"]
        .as_array()
        .unwrap();
    assert!(notifications.iter().any(
        |notification| notification["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            == "broken.py"
    ));
}

#[test]
fn github_format_annotates_lines() {
    let scratch = scratch_copy(&["bad_input"]);
    // A warning with a suggestion: DST102 raised to warning.
    std::fs::write(
        scratch.path().join(".distribute.yml"),
        "severity:\n  learning-rate-without-warmup: warning\n",
    )
    .unwrap();
    let (code, output, _) = distribute(
        scratch.path(),
        &["check", "--root", ".", "--format", "github"],
    );
    assert_eq!(code, 2);
    assert!(
        output.contains("::error file=broken.py,line=7,col=10,title=distribute::syntax error"),
        "{output}"
    );
    assert!(
        output.contains("::warning file=train.py,line=7,col=7,endLine=7,endColumn=36"),
        "{output}"
    );
    assert!(
        output.contains("title=DST102 learning-rate-without-warmup::learning rate multiplied"),
        "{output}"
    );
    assert!(
        output.contains("%0ASuggestion: add `hvd.callbacks.LearningRateWarmupCallback"),
        "newlines are escaped: {output}"
    );
    assert!(
        output.contains(
            "::notice file=train.py,title=distribute::this module trains on one GPU (keras)"
        ),
        "{output}"
    );
}

#[test]
fn suffix_output_mode_writes_a_sibling_and_keeps_the_original() {
    let scratch = scratch_copy(&["keras_optimizer_object"]);
    std::fs::write(
        scratch.path().join(".distribute.yml"),
        "output:\n  mode: suffix\n  suffix: _hvd.py\n",
    )
    .unwrap();
    let original = std::fs::read_to_string(scratch.path().join("train.py")).unwrap();
    let (code, _, _) = distribute(scratch.path(), &["fix", "--root", "."]);
    assert_eq!(code, 1);
    assert_eq!(
        original,
        std::fs::read_to_string(scratch.path().join("train.py")).unwrap()
    );
    let sibling = std::fs::read_to_string(scratch.path().join("train_hvd.py")).unwrap();
    assert!(sibling.contains("opt = hvd.DistributedOptimizer(opt)"));
    // The output is up to date now: nothing pending, and the sibling is not analysed as input.
    let (code, output, _) = distribute(scratch.path(), &["check", "--root", "."]);
    assert_eq!(code, 0, "{output}");
    assert!(!output.contains("train_hvd.py"), "{output}");
}

#[test]
fn directory_output_mode_mirrors_the_package() {
    let scratch = scratch_copy(&["keras_cross_file_model"]);
    std::fs::write(
        scratch.path().join(".distribute.yml"),
        "output:\n  mode: directory\n  directory: out/multi_gpu\n",
    )
    .unwrap();
    let (code, _, stderr) = distribute(scratch.path(), &["fix", "--root", "."]);
    assert_eq!(code, 1, "{stderr}");
    let out = scratch.path().join("out/multi_gpu");
    assert!(
        std::fs::read_to_string(out.join("mypkg/train.py"))
            .unwrap()
            .contains("hvd.init()")
    );
    assert_eq!(
        std::fs::read_to_string(out.join("mypkg/models/base.py")).unwrap(),
        std::fs::read_to_string(scratch.path().join("mypkg/models/base.py")).unwrap(),
        "modules that need no rewrite are copied so the mirror runs on its own"
    );
    assert!(
        !std::fs::read_to_string(scratch.path().join("mypkg/train.py"))
            .unwrap()
            .contains("hvd")
    );
    let (code, _, _) = distribute(scratch.path(), &["fix", "--root", "."]);
    assert_eq!(code, 0, "a second fix has nothing to write");
}

#[test]
fn severities_can_be_changed_or_turned_off() {
    let scratch = scratch_copy(&["bad_input"]);
    std::fs::remove_file(scratch.path().join("broken.py")).unwrap();
    std::fs::remove_file(scratch.path().join("latin1.py")).unwrap();
    std::fs::remove_file(scratch.path().join("declared_latin1.py")).unwrap();
    std::fs::write(
        scratch.path().join(".distribute.yml"),
        "severity:\n  DST101: off\n  learning-rate-without-warmup: error\n",
    )
    .unwrap();
    let (_, output, _) = distribute(scratch.path(), &["fix", "--root", "."]);
    assert!(!output.contains("DST101"), "{output}");
    assert!(output.contains("DST102 [error]"), "{output}");
    let (code, _, _) = distribute(scratch.path(), &["check", "--root", "."]);
    assert_eq!(
        code, 0,
        "DST102 is reported once, when the learning rate is scaled; after the fix nothing is pending"
    );
}

#[test]
fn shard_datasets_inserts_a_shard_into_the_pipeline() {
    let scratch = scratch_copy(&["diag_dataset_not_sharded"]);
    std::fs::write(
        scratch.path().join(".distribute.yml"),
        "shard_datasets: true\n",
    )
    .unwrap();
    let (_, output, _) = distribute(scratch.path(), &["diff", "--root", "."]);
    assert!(
        output.contains(".shard(hvd.size(), hvd.rank())"),
        "{output}"
    );
    assert!(!output.contains("DST101"), "{output}");
}

#[test]
fn warmup_epochs_sets_the_warmup_callback_and_zero_turns_it_off() {
    let scratch = scratch_copy(&["keras_rank0_guards"]);
    // Long enough for a warm-up: a fit of at most `warmup_epochs` epochs per
    // worker gets none (DST102 says why).
    let train = scratch.path().join("train.py");
    let text = std::fs::read_to_string(&train).unwrap();
    assert!(text.contains("EPOCHS = 2\n"), "{text}");
    std::fs::write(&train, text.replace("EPOCHS = 2\n", "EPOCHS = 40\n")).unwrap();
    let (_, output, _) = distribute(scratch.path(), &["diff", "--root", "."]);
    assert!(
        output.contains("LearningRateWarmupCallback(initial_lr=0.1 * hvd.size(), warmup_epochs=5"),
        "{output}"
    );
    assert!(
        !output.contains("DST102"),
        "the callback replaces the advice: {output}"
    );
    let config = scratch.path().join(".distribute.yml");
    std::fs::write(&config, "warmup_epochs: 3\n").unwrap();
    let (_, output, _) = distribute(scratch.path(), &["diff", "--root", "."]);
    assert!(output.contains("warmup_epochs=3,"), "{output}");
    std::fs::write(&config, "warmup_epochs: 0\n").unwrap();
    let (_, output, _) = distribute(scratch.path(), &["diff", "--root", "."]);
    let added = output
        .lines()
        .any(|line| line.starts_with('+') && line.contains("LearningRateWarmupCallback("));
    assert!(!added, "{output}");
    assert!(
        output.contains("DST102"),
        "without the callback the advice stays: {output}"
    );
}

#[test]
fn configuration_errors_name_the_file_key_and_line() {
    let scratch = scratch_copy(&["keras_optimizer_object"]);
    std::fs::write(
        scratch.path().join(".distribute.yml"),
        "include:\n  - '**/*.py'\nshard_dataset: true\n",
    )
    .unwrap();
    let (code, _, stderr) = distribute(scratch.path(), &["check", "--root", "."]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains(".distribute.yml:3: unknown field `shard_dataset`"),
        "{stderr}"
    );
    let (code, _, stderr) = distribute(
        scratch.path(),
        &["check", "--root", ".", "--config", "missing.yml"],
    );
    assert_eq!(code, 2);
    assert!(stderr.contains("missing.yml: cannot read"), "{stderr}");
}

/// A fix belongs to the diagnostic that explains it: DST104 `off` keeps the
/// user's device pinning, where the default removes it and says so.
#[test]
fn turning_a_code_off_drops_the_edits_it_explains() {
    let file = "train.py";
    let pinning = "os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"0\"";
    let scratch = scratch_copy(&["keras_cuda_visible_devices"]);
    let (_, default_diff, _) = distribute(scratch.path(), &["diff", "--root", "."]);
    assert!(default_diff.contains("DST104"), "{default_diff}");
    assert!(
        default_diff.contains(&format!("-{pinning}")),
        "by default the pinning is removed:\n{default_diff}"
    );
    std::fs::write(
        scratch.path().join(".distribute.yml"),
        "severity:\n  device-pinning-removed: off\n",
    )
    .unwrap();
    let (code, _, _) = distribute(scratch.path(), &["fix", "--root", "."]);
    assert_eq!(code, 1, "the rest of the rewrite is still made");
    let rewritten = std::fs::read_to_string(scratch.path().join(file)).unwrap();
    assert!(rewritten.contains(pinning), "{rewritten}");
    assert!(
        rewritten.contains("hvd.DistributedOptimizer"),
        "{rewritten}"
    );
}
