//! The result cache as a user meets it: a warm run says what a cold run says,
//! any change a result depends on (another module, the configuration) is
//! seen, a change to one project leaves the stored results of the others in
//! use, `--no-cache` writes nothing, and a damaged cache is ignored.

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

/// Exit code and everything printed, for comparing runs.
#[derive(Debug, PartialEq, Eq)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn distribute_with(arguments: &[&str], directory: &Path, environment: &[(&str, &Path)]) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_distribute"));
    command
        .args(arguments)
        .current_dir(directory)
        .env_remove("DISTRIBUTE_CACHE_DIR");
    for (name, value) in environment {
        command.env(name, value);
    }
    let output = command.output().expect("the binary runs");
    Run {
        code: output.status.code().expect("exited normally"),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

fn distribute(arguments: &[&str], directory: &Path) -> Run {
    distribute_with(arguments, directory, &[])
}

fn scratch_copy(case: &str) -> tempfile::TempDir {
    let scratch = tempfile::tempdir().unwrap();
    copy_tree(&fixture(case), scratch.path());
    scratch
}

/// Every file under a directory.
fn files_under(directory: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(directory).unwrap().flatten() {
        if entry.file_type().unwrap().is_dir() {
            files.extend(files_under(&entry.path()));
        } else {
            files.push(entry.path());
        }
    }
    files
}

const DIFF: &[&str] = &["diff", "--root", "."];
const DIFF_WITHOUT_CACHE: &[&str] = &["diff", "--root", ".", "--no-cache"];

#[test]
fn a_warm_run_prints_what_a_cold_run_prints() {
    let scratch = scratch_copy("keras_cross_file_model");
    let cold = distribute(DIFF, scratch.path());
    assert_eq!(cold.code, 1, "{}", cold.stdout);
    let cache = scratch.path().join(".distribute_cache");
    assert!(cache.join("CACHEDIR.TAG").is_file());
    assert_eq!(
        std::fs::read_to_string(cache.join(".gitignore")).unwrap(),
        "# Automatically created by distribute.\n*\n"
    );
    let warm = distribute(DIFF, scratch.path());
    assert_eq!(warm, cold);
    assert_eq!(distribute(DIFF_WITHOUT_CACHE, scratch.path()), cold);
    for format in ["json", "sarif", "github"] {
        let arguments = ["check", "--root", ".", "--format", format];
        let cold = distribute(&[&arguments[..], &["--no-cache"]].concat(), scratch.path());
        distribute(&arguments, scratch.path());
        assert_eq!(distribute(&arguments, scratch.path()), cold, "{format}");
    }
}

#[test]
fn editing_a_module_changes_the_result_of_the_module_that_imports_it() {
    let scratch = scratch_copy("keras_fit_in_other_module");
    let before = distribute(DIFF, scratch.path());
    assert!(before.stdout.contains("experiment.py"), "{}", before.stdout);
    // The shared loop no longer fits: the experiment has nothing to distribute.
    std::fs::write(
        scratch.path().join("loop.py"),
        "def run(model, dataset, epochs, steps):\n    return model.evaluate(dataset)\n",
    )
    .unwrap();
    let after = distribute(DIFF, scratch.path());
    assert_ne!(after, before);
    assert_eq!(after, distribute(DIFF_WITHOUT_CACHE, scratch.path()));
}

#[test]
fn changing_the_configuration_changes_the_result() {
    let scratch = scratch_copy("keras_optimizer_object");
    let before = distribute(DIFF, scratch.path());
    assert!(before.stdout.contains("DST102"), "{}", before.stdout);
    std::fs::write(
        scratch.path().join(".distribute.yml"),
        "severity:\n  DST102: off\n",
    )
    .unwrap();
    let after = distribute(DIFF, scratch.path());
    assert!(!after.stdout.contains("DST102"), "{}", after.stdout);
    assert_eq!(after, distribute(DIFF_WITHOUT_CACHE, scratch.path()));
}

#[test]
fn no_cache_writes_no_cache_directory() {
    let scratch = scratch_copy("keras_optimizer_object");
    for command in ["check", "diff", "fix"] {
        distribute(&[command, "--root", ".", "--no-cache"], scratch.path());
    }
    assert!(!scratch.path().join(".distribute_cache").exists());
}

#[test]
fn a_corrupt_cache_is_ignored() {
    let scratch = scratch_copy("keras_cross_file_model");
    let cold = distribute(DIFF, scratch.path());
    let cache = scratch.path().join(".distribute_cache");
    let entries: Vec<PathBuf> = files_under(&cache)
        .into_iter()
        .filter(|path| path.extension().is_some_and(|extension| extension == "bin"))
        .collect();
    assert!(!entries.is_empty());
    for (index, entry) in entries.iter().enumerate() {
        let damage: &[u8] = if index % 2 == 0 {
            b"{\"key\": 3"
        } else {
            b"\xff\x00"
        };
        std::fs::write(entry, damage).unwrap();
    }
    assert_eq!(distribute(DIFF, scratch.path()), cold);
    // The damaged entry was replaced by a good one.
    assert_eq!(distribute(DIFF, scratch.path()), cold);
}

#[test]
fn the_cache_directory_can_be_moved() {
    let scratch = scratch_copy("keras_optimizer_object");
    let elsewhere = tempfile::tempdir().unwrap();
    let moved = elsewhere.path().join("cache");
    let environment = [("DISTRIBUTE_CACHE_DIR", moved.as_path())];
    let cold = distribute_with(DIFF, scratch.path(), &environment);
    assert!(moved.join("CACHEDIR.TAG").is_file());
    assert!(!scratch.path().join(".distribute_cache").exists());
    assert_eq!(distribute_with(DIFF, scratch.path(), &environment), cold);
}

/// Two unrelated training projects in one repository.
fn two_projects() -> tempfile::TempDir {
    let scratch = tempfile::tempdir().unwrap();
    copy_tree(
        &fixture("keras_optimizer_object"),
        &scratch.path().join("first"),
    );
    copy_tree(
        &fixture("keras_fit_in_other_module"),
        &scratch.path().join("second"),
    );
    scratch
}

/// What `mark_stored_results` writes into stored messages.
const MARKER: &str = "FROM THE CACHE!!!";

/// Rewrites "trains on one GPU" in every stored diagnostic message to
/// `MARKER` (as long, so the stored results stay well formed): a result
/// read back from the cache then shows it, one recomputed does not.
fn mark_stored_results(root: &Path) {
    let stored: Vec<PathBuf> = files_under(&root.join(".distribute_cache"))
        .into_iter()
        .filter(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with("results-"))
        })
        .collect();
    assert_eq!(stored.len(), 1, "{stored:?}");
    let original = b"trains on one GPU";
    assert_eq!(original.len(), MARKER.len());
    let mut bytes = std::fs::read(&stored[0]).unwrap();
    let mut marked = 0;
    let mut at = 0;
    while let Some(found) = bytes[at..]
        .windows(original.len())
        .position(|window| window == original)
    {
        let start = at + found;
        bytes[start..start + original.len()].copy_from_slice(MARKER.as_bytes());
        marked += 1;
        at = start + original.len();
    }
    assert!(marked > 0, "no stored message to mark");
    std::fs::write(&stored[0], bytes).unwrap();
}

#[test]
fn a_change_to_one_project_reuses_the_stored_results_of_the_other() {
    let scratch = two_projects();
    let cold = distribute(DIFF, scratch.path());
    assert!(cold.stdout.contains("first/train.py"), "{}", cold.stdout);
    assert!(
        cold.stdout.contains("second/experiment.py"),
        "{}",
        cold.stdout
    );
    mark_stored_results(scratch.path());
    // The second project changes: only it is analysed again.
    std::fs::write(
        scratch.path().join("second/loop.py"),
        "def run(model, dataset, epochs, steps):\n    return model.evaluate(dataset)\n",
    )
    .unwrap();
    let after = distribute(DIFF, scratch.path());
    assert!(after.stdout.contains(MARKER), "{}", after.stdout);
    assert!(
        !after.stdout.contains("second/experiment.py"),
        "{}",
        after.stdout
    );
    // The first project changes: its stored result is stale and not used.
    let train = scratch.path().join("first/train.py");
    let text = std::fs::read_to_string(&train).unwrap();
    std::fs::write(&train, format!("{text}\n# reviewed\n")).unwrap();
    let recomputed = distribute(DIFF, scratch.path());
    assert!(!recomputed.stdout.contains(MARKER), "{}", recomputed.stdout);
    assert_eq!(recomputed, distribute(DIFF_WITHOUT_CACHE, scratch.path()));
}

#[test]
fn a_run_on_one_file_stores_its_result_for_the_next_run_on_the_package() {
    let scratch = two_projects();
    let single = distribute(&["diff", "--root", ".", "first/train.py"], scratch.path());
    assert!(
        single.stdout.contains("first/train.py"),
        "{}",
        single.stdout
    );
    mark_stored_results(scratch.path());
    let whole = distribute(DIFF, scratch.path());
    assert!(whole.stdout.contains(MARKER), "{}", whole.stdout);
    // The other project had not been analysed: it is now, as without a cache.
    let second_lines = |output: &str| -> Vec<String> {
        output
            .lines()
            .filter(|line| line.contains("second/"))
            .map(str::to_string)
            .collect()
    };
    let without_cache = distribute(DIFF_WITHOUT_CACHE, scratch.path());
    assert!(!second_lines(&without_cache.stdout).is_empty());
    assert_eq!(
        second_lines(&whole.stdout),
        second_lines(&without_cache.stdout)
    );
}

#[test]
fn a_run_on_a_model_module_reports_its_training_script_from_the_cache_too() {
    let scratch = scratch_copy("keras_cross_file_model");
    let arguments = ["diff", "--root", ".", "mypkg/models/resnet.py"];
    let cold = distribute(&arguments, scratch.path());
    assert_eq!(
        distribute(DIFF, scratch.path()),
        distribute(DIFF_WITHOUT_CACHE, scratch.path())
    );
    // Stored by the whole run, the model module's dependents come back with it.
    assert_eq!(distribute(&arguments, scratch.path()), cold);
    assert_eq!(
        cold,
        distribute(&[&arguments[..], &["--no-cache"]].concat(), scratch.path())
    );
}

#[test]
fn an_edit_to_a_file_no_training_code_reaches_reuses_every_stored_result() {
    let scratch = scratch_copy("keras_optimizer_object");
    // The training script imports a utility; a report script imports the
    // same utility, and nothing that trains: it can change no rewrite, though
    // an import joins it to the training script's files.
    let train = scratch.path().join("train.py");
    let text = std::fs::read_to_string(&train).unwrap();
    std::fs::write(&train, format!("import tables\n{text}")).unwrap();
    std::fs::write(
        scratch.path().join("tables.py"),
        "def rows():\n    return [1, 2]\n",
    )
    .unwrap();
    std::fs::write(
        scratch.path().join("report.py"),
        "import tables\n\nprint(len(tables.rows()))\n",
    )
    .unwrap();
    let cold = distribute(DIFF, scratch.path());
    assert!(cold.stdout.contains("train.py"), "{}", cold.stdout);
    mark_stored_results(scratch.path());
    std::fs::write(
        scratch.path().join("report.py"),
        "import tables\n\nprint(sum(tables.rows()))\n",
    )
    .unwrap();
    let after = distribute(DIFF, scratch.path());
    assert!(after.stdout.contains(MARKER), "{}", after.stdout);
    assert_eq!(
        after.stdout.replace(MARKER, "trains on one GPU"),
        cold.stdout
    );
    assert_eq!(
        distribute(DIFF_WITHOUT_CACHE, scratch.path()).stdout,
        cold.stdout
    );
}
