//! Diff-aware runs: which modules are in scope for `--staged`, `--since` and
//! explicit paths, in repositories built with git2 (commits, staged changes,
//! renames, an unborn HEAD, a worktree, a package in a subdirectory).

use std::path::Path;
use std::process::Command;

use git2::{IndexAddOption, Repository, Signature};

const MODEL: &str = "import tensorflow as tf\n\n\nclass Net(tf.keras.Model):\n    def __init__(self):\n        super().__init__()\n        self.dense = tf.keras.layers.Dense(1)\n\n    def call(self, x):\n        return self.dense(x)\n";
const TRAIN: &str = "import numpy as np\nimport tensorflow as tf\n\nfrom model import Net\n\nmodel = Net()\nmodel.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss=\"mse\")\nmodel.fit(np.zeros((8, 2)), np.zeros((8, 1)), epochs=1, steps_per_epoch=4)\n";
const DATA: &str = "import numpy as np\n\n\ndef batches(n):\n    return np.zeros((n, 2))\n";

fn write(root: &Path, relative: &str, text: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn stage_all(repository: &Repository) {
    let mut index = repository.index().unwrap();
    index.add_all(["*"], IndexAddOption::DEFAULT, None).unwrap();
    index.update_all(["*"], None).unwrap();
    index.write().unwrap();
}

fn commit_all(repository: &Repository, message: &str) {
    stage_all(repository);
    let mut index = repository.index().unwrap();
    let tree = repository.find_tree(index.write_tree().unwrap()).unwrap();
    let signature = Signature::now("Test", "test@example.invalid").unwrap();
    let parents: Vec<git2::Commit> = repository
        .head()
        .ok()
        .and_then(|head| head.peel_to_commit().ok())
        .into_iter()
        .collect();
    let parents: Vec<&git2::Commit> = parents.iter().collect();
    repository
        .commit(
            Some("HEAD"),
            &signature,
            &signature,
            message,
            &tree,
            &parents,
        )
        .unwrap();
}

/// The modules `distribute check` reports (JSON), run from `directory`.
fn reported(directory: &Path, arguments: &[&str]) -> Vec<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_distribute"))
        .arg("check")
        .args(arguments)
        .args(["--format", "json"])
        .current_dir(directory)
        .output()
        .unwrap();
    assert!(
        output.status.code().unwrap() < 2,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    report["modules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|module| module["path"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn staged_selects_changed_training_modules_and_their_importers() {
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path();
    let repository = Repository::init(root).unwrap();
    write(root, "model.py", MODEL);
    write(root, "train.py", TRAIN);
    write(root, "data.py", DATA);
    write(root, "README.md", "not python\n");
    commit_all(&repository, "initial");
    assert_eq!(
        reported(root, &["--staged"]),
        Vec::<String>::new(),
        "nothing staged, nothing in scope"
    );

    // The model changes, the training script does not: the script is in scope.
    write(root, "model.py", &MODEL.replace("Dense(1)", "Dense(2)"));
    stage_all(&repository);
    assert_eq!(reported(root, &["--staged"]), vec!["train.py"]);

    // Only a data utility changes: nothing to report.
    commit_all(&repository, "model");
    write(root, "data.py", &DATA.replace("zeros", "ones"));
    write(root, "README.md", "changed, still not python\n");
    stage_all(&repository);
    assert_eq!(reported(root, &["--staged"]), Vec::<String>::new());

    // A renamed training script is reported under its new name; a deleted file is ignored.
    commit_all(&repository, "data");
    std::fs::rename(root.join("train.py"), root.join("fit.py")).unwrap();
    std::fs::remove_file(root.join("data.py")).unwrap();
    let mut index = repository.index().unwrap();
    index.remove_path(Path::new("train.py")).unwrap();
    index.remove_path(Path::new("data.py")).unwrap();
    index.add_path(Path::new("fit.py")).unwrap();
    index.write().unwrap();
    assert_eq!(reported(root, &["--staged"]), vec!["fit.py"]);
}

#[test]
fn staged_works_before_the_first_commit() {
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path();
    let repository = Repository::init(root).unwrap();
    write(root, "model.py", MODEL);
    write(root, "train.py", TRAIN);
    stage_all(&repository);
    assert_eq!(reported(root, &["--staged"]), vec!["train.py"]);
}

#[test]
fn since_compares_with_the_merge_base_including_the_working_tree() {
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path();
    let repository = Repository::init(root).unwrap();
    write(root, "model.py", MODEL);
    write(root, "data.py", DATA);
    commit_all(&repository, "base");
    let base = repository
        .head()
        .unwrap()
        .peel_to_commit()
        .unwrap()
        .id()
        .to_string();
    write(root, "train.py", TRAIN);
    commit_all(&repository, "add training");
    write(
        root,
        "extra_train.py",
        &TRAIN.replace("epochs=1", "epochs=2"),
    );
    assert_eq!(
        reported(root, &["--since", &base]),
        vec!["extra_train.py", "train.py"]
    );
    let error = Command::new(env!("CARGO_BIN_EXE_distribute"))
        .args(["check", "--since", "no-such-rev"])
        .current_dir(root)
        .output()
        .unwrap();
    assert_eq!(error.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&error.stderr).contains("no-such-rev: unknown revision"));
}

#[test]
fn package_in_a_subdirectory_and_files_outside_it() {
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path();
    let repository = Repository::init(root).unwrap();
    write(root, "ml/model.py", MODEL);
    write(root, "ml/train.py", TRAIN);
    write(root, "tools/other_train.py", TRAIN);
    commit_all(&repository, "initial");
    write(root, "ml/model.py", &MODEL.replace("Dense(1)", "Dense(3)"));
    write(root, "tools/other_train.py", &TRAIN.replace("0.1", "0.2"));
    stage_all(&repository);
    // The package root is ml/: the changed file outside it is not reported; paths are relative to ml/.
    assert_eq!(
        reported(&root.join("ml"), &["--staged", "--root", "."]),
        vec!["train.py"]
    );
}

#[test]
fn staged_works_in_a_worktree() {
    let scratch = tempfile::tempdir().unwrap();
    let main = scratch.path().join("main");
    std::fs::create_dir(&main).unwrap();
    let repository = Repository::init(&main).unwrap();
    write(&main, "model.py", MODEL);
    write(&main, "train.py", TRAIN);
    commit_all(&repository, "initial");
    let worktree_path = scratch.path().join("feature");
    repository
        .worktree("feature", &worktree_path, None)
        .unwrap();
    let worktree = Repository::open(&worktree_path).unwrap();
    write(
        &worktree_path,
        "model.py",
        &MODEL.replace("Dense(1)", "Dense(4)"),
    );
    stage_all(&worktree);
    assert_eq!(reported(&worktree_path, &["--staged"]), vec!["train.py"]);
}
