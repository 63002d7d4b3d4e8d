//! `distribute analyze calls`: the call graph as JSON, as a user runs it.

use std::path::Path;
use std::process::Command;

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

/// A scratch package of the given files.
fn package(files: &[(&str, &str)]) -> tempfile::TempDir {
    let scratch = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = scratch.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    scratch
}

const MODEL: &str = "\
import numpy as np

def save(values):
    np.save('out.npy', values)

class Trainer:
    def __init__(self, steps):
        self.steps = steps

    def fit(self):
        for _ in range(self.steps):
            self.step()
        save([1, 2])

    def step(self):
        pass
";

const MAIN: &str = "\
from model import Trainer

def main():
    trainer = Trainer(3)
    trainer.fit()
    print('done')

main()
";

#[test]
fn prints_each_module_and_function_with_what_it_calls() {
    let scratch = package(&[("model.py", MODEL), ("main.py", MAIN)]);
    let run = distribute(&["analyze", "calls", "--root", "."], scratch.path());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let graph: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        graph,
        serde_json::json!({
            "main": ["main.main"],
            "main.main": ["<builtin>.print", "model.Trainer.__init__", "model.Trainer.fit"],
            "model": [],
            "model.save": ["numpy.save"],
            "model.Trainer.__init__": [],
            "model.Trainer.fit": ["<builtin>.range", "model.Trainer.step", "model.save"],
            "model.Trainer.step": [],
        })
    );
}

#[test]
fn paths_limit_the_modules_printed_not_those_analysed() {
    let scratch = package(&[("model.py", MODEL), ("main.py", MAIN)]);
    let run = distribute(
        &["analyze", "calls", "--root", ".", "main.py"],
        scratch.path(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let graph: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        graph,
        serde_json::json!({
            "main": ["main.main"],
            "main.main": ["<builtin>.print", "model.Trainer.__init__", "model.Trainer.fit"],
        })
    );
}

#[test]
fn a_file_that_does_not_parse_is_reported_and_the_others_analysed() {
    let scratch = package(&[
        ("model.py", MODEL),
        ("main.py", MAIN),
        (
            "broken.py",
            "def ok():\n    pass\n\ndef broken(:\n    pass\n",
        ),
    ]);
    let run = distribute(&["analyze", "calls", "--root", "."], scratch.path());
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(run.stderr.starts_with("broken.py:4:"), "{}", run.stderr);
    assert!(run.stderr.contains("error"), "{}", run.stderr);
    let graph: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(graph["main"], serde_json::json!(["main.main"]));
    assert!(graph.get("broken").is_none());
}

#[test]
fn a_path_that_does_not_exist_is_an_error_with_exit_2() {
    let scratch = package(&[("main.py", MAIN)]);
    let run = distribute(
        &["analyze", "calls", "--root", ".", "missing.py"],
        scratch.path(),
    );
    assert_eq!(run.code, 2);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(
        run.stderr.contains("missing.py: no such file or directory"),
        "{}",
        run.stderr
    );
}
