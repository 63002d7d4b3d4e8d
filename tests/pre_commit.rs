//! The real `pre-commit` (PyPI, installed by scripts/setup-test-tools) runs
//! this repository's hooks with `try-repo` in a temporary git repository, as a
//! team would: a commit of a single-GPU training script fails with the diff;
//! after `distribute-fix` and `git add` it passes; a commit touching only a
//! data utility passes untouched.
//!
//! pre-commit builds the hooks from this repository's committed sources (a
//! release build, cached under target/test-tools/pre-commit-home by revision).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(directory: &Path, program: impl AsRef<std::ffi::OsStr>, arguments: &[&str]) -> Output {
    Command::new(program)
        .args(arguments)
        .current_dir(directory)
        .env(
            "PRE_COMMIT_HOME",
            repository_root().join("target/test-tools/pre-commit-home"),
        )
        // pre-commit builds the hook with `cargo install`; a shared target
        // directory keeps dependencies compiled across revisions.
        .env(
            "CARGO_TARGET_DIR",
            repository_root().join("target/test-tools/hook-build"),
        )
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.invalid")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.invalid")
        .env_remove("GIT_DIR")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .expect("the program runs")
}

fn git(directory: &Path, arguments: &[&str]) {
    let output = run(directory, "git", arguments);
    assert!(
        output.status.success(),
        "git {arguments:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn try_repo(directory: &Path, hook: &str) -> (i32, String) {
    let pre_commit = repository_root().join("target/test-tools/venv/bin/pre-commit");
    let root = repository_root();
    let output = run(
        directory,
        pre_commit,
        &["try-repo", root.to_str().unwrap(), hook, "--color", "never"],
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code().unwrap_or(-1), text)
}

const MODEL: &str = "import tensorflow as tf\n\n\nclass Regressor(tf.keras.Model):\n    def __init__(self):\n        super().__init__()\n        self.out = tf.keras.layers.Dense(1)\n\n    def call(self, x):\n        return self.out(x)\n";
const TRAIN: &str = "\"\"\"Single-GPU training.\"\"\"\nimport numpy as np\nimport tensorflow as tf\n\nfrom model import Regressor\n\nmodel = Regressor()\noptimizer = tf.keras.optimizers.Adam(0.01)  # tuned on one GPU\nmodel.compile(optimizer=optimizer, loss=\"mse\")\nmodel.fit(np.zeros((64, 3)), np.zeros((64, 1)), epochs=1, steps_per_epoch=8)\nprint(\"done\")\n";
const DATA: &str = "import numpy as np\n\n\ndef load(n):\n    return np.zeros((n, 3))\n";

#[test]
fn pre_commit_hooks_fail_fix_and_pass() {
    let status = Command::new(repository_root().join("scripts/setup-test-tools"))
        .current_dir(repository_root())
        .status()
        .unwrap();
    assert!(status.success());
    let scratch = tempfile::tempdir().unwrap();
    let repo = scratch.path();
    git(repo, &["init", "-q"]);
    std::fs::write(repo.join("data.py"), DATA).unwrap();
    std::fs::write(repo.join("README.md"), "# a team's project\n").unwrap();
    git(repo, &["add", "."]);
    git(repo, &["commit", "-q", "-m", "data utilities"]);

    // A commit adding single-GPU training code fails, showing the rewrite.
    std::fs::write(repo.join("model.py"), MODEL).unwrap();
    std::fs::write(repo.join("train.py"), TRAIN).unwrap();
    git(repo, &["add", "model.py", "train.py"]);
    let (code, output) = try_repo(repo, "distribute");
    assert_eq!(code, 1, "{output}");
    assert!(
        output.contains("+import horovod.tensorflow.keras as hvd"),
        "{output}"
    );
    assert!(
        output.contains("+optimizer = hvd.DistributedOptimizer(optimizer)"),
        "{output}"
    );

    // distribute-fix rewrites it and fails, as formatters do; after `git add` the commit passes.
    let (code, output) = try_repo(repo, "distribute-fix");
    assert_eq!(code, 1, "{output}");
    let fixed = std::fs::read_to_string(repo.join("train.py")).unwrap();
    assert!(
        fixed.contains(
            "optimizer = tf.keras.optimizers.Adam(0.01 * hvd.size())  # tuned on one GPU"
        ),
        "{fixed}"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("model.py")).unwrap(),
        MODEL,
        "the model module is not training code"
    );
    git(repo, &["add", "train.py"]);
    let (code, output) = try_repo(repo, "distribute");
    assert_eq!(code, 0, "{output}");
    git(repo, &["commit", "-q", "-m", "distributed training"]);

    // A commit touching only a data utility passes, and nothing is rewritten.
    std::fs::write(repo.join("data.py"), DATA.replace("zeros", "ones")).unwrap();
    git(repo, &["add", "data.py"]);
    let (code, output) = try_repo(repo, "distribute");
    assert_eq!(code, 0, "{output}");
    let (code, output) = try_repo(repo, "distribute-fix");
    assert_eq!(code, 0, "{output}");
    assert_eq!(
        std::fs::read_to_string(repo.join("data.py")).unwrap(),
        DATA.replace("zeros", "ones")
    );
}

#[test]
fn pre_commit_hooks_handle_a_training_notebook() {
    let status = Command::new(repository_root().join("scripts/setup-test-tools"))
        .current_dir(repository_root())
        .status()
        .unwrap();
    assert!(status.success());
    let scratch = tempfile::tempdir().unwrap();
    let repo = scratch.path();
    git(repo, &["init", "-q"]);
    std::fs::write(repo.join("README.md"), "# a team's project\n").unwrap();
    git(repo, &["add", "."]);
    git(repo, &["commit", "-q", "-m", "start"]);

    // A commit adding a single-GPU training notebook (and the module it
    // imports its model from) fails, showing the rewrite cell by cell.
    let case = repository_root().join("tests/e2e/keras_notebook_cells");
    for name in ["train.ipynb", "model_def.py"] {
        std::fs::copy(case.join(name), repo.join(name)).unwrap();
    }
    git(repo, &["add", "train.ipynb", "model_def.py"]);
    let (code, output) = try_repo(repo, "distribute");
    assert_eq!(code, 1, "{output}");
    assert!(output.contains(" cell 6\n"), "{output}");
    assert!(
        output.contains("+optimizer = hvd.DistributedOptimizer(optimizer)"),
        "{output}"
    );

    // distribute-fix rewrites the notebook's cells; after `git add` the commit passes.
    let (code, output) = try_repo(repo, "distribute-fix");
    assert_eq!(code, 1, "{output}");
    let fixed = std::fs::read_to_string(repo.join("train.ipynb")).unwrap();
    assert!(
        fixed.contains("\"optimizer = hvd.DistributedOptimizer(optimizer)\\n\","),
        "{fixed}"
    );
    git(repo, &["add", "train.ipynb"]);
    let (code, output) = try_repo(repo, "distribute");
    assert_eq!(code, 0, "{output}");
}
