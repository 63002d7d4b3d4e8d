//! The catalogue of library behaviour as users see it: a call of their own
//! library that the shipped catalogue does not know is judged by its name
//! (the rewrite is held back as unsafe); described under `library:` in
//! `.distribute.yml`, it is known (guarded on rank 0, the rewrite safe); a
//! wrong entry is an error naming the file and line.

use std::path::Path;
use std::process::Command;

const TRAIN: &str = r#"import numpy as np
import tensorflow as tf
import mylab.storage

x = np.random.rand(64, 4).astype("float32")
y = x.sum(axis=1)
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(x, y, epochs=2)
mylab.storage.save_artifact("model-summary.txt", model)
"#;

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

fn package(config: Option<&str>) -> tempfile::TempDir {
    let directory = tempfile::tempdir().unwrap();
    std::fs::write(directory.path().join("train.py"), TRAIN).unwrap();
    if let Some(config) = config {
        std::fs::write(directory.path().join(".distribute.yml"), config).unwrap();
    }
    directory
}

#[test]
fn an_unknown_call_whose_name_says_it_writes_holds_the_rewrite_back() {
    let directory = package(None);
    let (code, stdout, _) = distribute(directory.path(), &["diff", "--no-cache", "--root", "."]);
    assert_eq!(
        code, 0,
        "nothing is pending when the rewrite is held back: {stdout}"
    );
    assert!(
        stdout.contains("`save_artifact` at line 10 is not in the catalogue of library behaviour, and its name says it writes"),
        "{stdout}"
    );
    assert!(stdout.contains("1 unsafe rewrite hidden"), "{stdout}");
    assert!(
        !stdout.contains("+++ b/train.py"),
        "no diff is shown:\n{stdout}"
    );
}

#[test]
fn a_library_entry_makes_the_call_known_and_the_rewrite_safe() {
    let config = "library:\n  calls:\n    mylab.storage.save_artifact:\n      writes: {path: 0}\n";
    let directory = package(Some(config));
    let (code, _, stderr) = distribute(directory.path(), &["fix", "--no-cache", "--root", "."]);
    assert_eq!(code, 1, "fix wrote the rewrite: {stderr}");
    let rewritten = std::fs::read_to_string(directory.path().join("train.py")).unwrap();
    assert!(
        rewritten.contains(
            "if hvd.rank() == 0:\n    mylab.storage.save_artifact(\"model-summary.txt\", model)"
        ),
        "{rewritten}"
    );
}

#[test]
fn a_wrong_library_entry_names_the_file_and_line() {
    let misspelt = "warmup_epochs: 0\nlibrary:\n  calls:\n    mylab.storage.save_artifact:\n      write: {path: 0}\n";
    let directory = package(Some(misspelt));
    let (code, _, stderr) = distribute(directory.path(), &["check", "--no-cache", "--root", "."]);
    assert_eq!(code, 2);
    assert!(stderr.contains(".distribute.yml:5:"), "{stderr}");
    assert!(stderr.contains("unknown field `write`"), "{stderr}");

    let no_argument = "library:\n  calls:\n    mylab.storage.make_run_dir:\n      creates-directory: {race-free-when: {truthy: true}}\n";
    let directory = package(Some(no_argument));
    let (code, _, stderr) = distribute(directory.path(), &["check", "--no-cache", "--root", "."]);
    assert_eq!(code, 2);
    assert!(
        stderr
            .contains(".distribute.yml:3: library: mylab.storage.make_run_dir: a condition needs"),
        "{stderr}"
    );
}
