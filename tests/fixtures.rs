//! Fixture packages (`tests/fixtures/<case>/input/`): each case's diagnostics
//! and rewrite are compared with a reviewed snapshot, and every case must keep
//! the properties a user relies on: the rewrite parses, `fix` twice equals
//! `fix` once, comments survive, and files that are not training code are
//! left alone.

mod support;
use support::copy_tree;

use std::fmt::Write;
use std::path::{Path, PathBuf};

use distribute::engine::{self, RunOutcome, RunRequest};
use distribute::python::parse::parse_module;
use distribute::report::unified_diff;

fn fixtures_directory() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn cases() -> Vec<String> {
    let mut cases: Vec<String> = std::fs::read_dir(fixtures_directory())
        .expect("tests/fixtures exists")
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.path().join("input").is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    cases.sort();
    cases
}

fn run_on(root: &Path) -> RunOutcome {
    let request = RunRequest {
        root: root.to_path_buf(),
        ..Default::default()
    };
    engine::with_large_stack(move || engine::run(&request))
}

/// What a reviewer reads: file errors, then per module its pattern, diagnostics and diff.
fn render(outcome: &RunOutcome) -> String {
    let mut out = String::new();
    for problem in &outcome.problems {
        let (severity, message, location) =
            (problem.severity(), problem.message(), problem.location());
        let at = location
            .map(|at| format!("{}:{}:", at.line, at.column))
            .unwrap_or_default();
        writeln!(
            out,
            "{}:{at} {}: {message}",
            problem.relative_path,
            severity.name()
        )
        .unwrap();
    }
    for module in &outcome.modules {
        writeln!(
            out,
            "== {} ({})",
            module.relative_path,
            module.classification.name()
        )
        .unwrap();
        for diagnostic in &module.diagnostics {
            writeln!(
                out,
                "{}:{}: {} {} {}",
                diagnostic.line,
                diagnostic.column,
                diagnostic.code,
                diagnostic.severity.name(),
                diagnostic.message
            )
            .unwrap();
            if let Some(suggestion) = &diagnostic.suggestion {
                writeln!(out, "    suggestion: {suggestion}").unwrap();
            }
        }
        if let Some(error) = &module.rewrite_error {
            writeln!(out, "REWRITE ERROR: {error}").unwrap();
        }
        match &module.rewritten {
            Some(rewritten) => out.push_str(&unified_diff(
                &module.relative_path,
                &module.original,
                rewritten,
            )),
            None => writeln!(out, "(unchanged)").unwrap(),
        }
    }
    out
}

fn write_rewrites(outcome: &RunOutcome) {
    for module in &outcome.modules {
        if let Some(rewritten) = &module.rewritten {
            std::fs::write(&module.path, rewritten).unwrap();
        }
    }
}

fn python_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(python_files(&path));
        } else if path.extension().is_some_and(|extension| extension == "py") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The comments of a file: text from `#` to the end of each line that has one.
fn comments(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            line.find('#')
                .map(|index| line[index..].trim_end().to_string())
        })
        .collect()
}

/// The case's diagnostics and rewrite match its reviewed snapshot.
fn snapshot(case: &str) {
    let outcome = run_on(&fixtures_directory().join(case).join("input"));
    insta::with_settings!({ snapshot_suffix => case.to_string(), prepend_module_to_snapshot => false, omit_expression => true, snapshot_path => fixtures_directory().parent().unwrap().join("snapshots") }, {
        insta::assert_snapshot!("fixture", render(&outcome));
    });
}

/// The rewrite parses, and a second `fix` changes nothing.
fn rewrite_parses_and_fix_is_idempotent(case: &str) {
    let scratch = tempfile::tempdir().unwrap();
    copy_tree(
        &fixtures_directory().join(case).join("input"),
        scratch.path(),
    );
    let first = run_on(scratch.path());
    for module in &first.modules {
        assert!(
            module.rewrite_error.is_none(),
            "{case}/{}: {:?}",
            module.relative_path,
            module.rewrite_error
        );
        if let Some(rewritten) = &module.rewritten {
            assert!(
                parse_module(rewritten, &module.relative_path).is_ok(),
                "{case}/{}: rewrite does not parse",
                module.relative_path
            );
        }
    }
    write_rewrites(&first);
    let second = run_on(scratch.path());
    for module in &second.modules {
        assert!(
            module.rewritten.is_none(),
            "{case}/{}: fix is not idempotent; second pass:\n{}",
            module.relative_path,
            unified_diff(
                &module.relative_path,
                &module.original,
                module.rewritten.as_deref().unwrap_or_default()
            )
        );
    }
}

/// Every comment survives, in order, and files the tool did not rewrite
/// are byte-identical.
fn comments_survive_and_other_files_are_untouched(case: &str) {
    let input = fixtures_directory().join(case).join("input");
    let scratch = tempfile::tempdir().unwrap();
    copy_tree(&input, scratch.path());
    let outcome = run_on(scratch.path());
    write_rewrites(&outcome);
    for original_path in python_files(&input) {
        let relative = original_path.strip_prefix(&input).unwrap();
        let original = std::fs::read(&original_path).unwrap();
        let after = std::fs::read(scratch.path().join(relative)).unwrap();
        let module = outcome
            .modules
            .iter()
            .find(|module| Path::new(&module.relative_path) == relative);
        match module {
            Some(module) if module.rewritten.is_some() => {
                let after = String::from_utf8(after).unwrap();
                let removed_lines: Vec<usize> = module
                    .diagnostics
                    .iter()
                    .filter(|diagnostic| diagnostic.code == "DST104")
                    .map(|diagnostic| diagnostic.line)
                    .collect();
                let original = String::from_utf8(original).unwrap();
                let kept_comments: Vec<String> = original
                    .lines()
                    .enumerate()
                    .filter(|(index, _)| !removed_lines.contains(&(index + 1)))
                    .flat_map(|(_, line)| comments(line))
                    .collect();
                let mut remaining = comments(&after).into_iter();
                for comment in kept_comments {
                    assert!(
                        remaining.any(|candidate| candidate == comment),
                        "{case}/{}: comment lost or reordered: {comment}",
                        module.relative_path
                    );
                }
            }
            _ => assert_eq!(
                original,
                after,
                "{case}/{}: a file the tool did not rewrite changed",
                relative.display()
            ),
        }
    }
}

/// A property every fixture case must keep.
type Property = fn(&str);

/// One trial per case and property, so that every failing case is reported
/// by name and each can be run alone (`cargo test --test fixtures -- <case>`).
fn main() {
    let arguments = libtest_mimic::Arguments::from_args();
    let properties: [(&str, Property); 3] = [
        ("snapshot", snapshot),
        (
            "rewrite_parses_and_fix_is_idempotent",
            rewrite_parses_and_fix_is_idempotent,
        ),
        (
            "comments_survive_and_other_files_are_untouched",
            comments_survive_and_other_files_are_untouched,
        ),
    ];
    let mut trials = Vec::new();
    for case in cases() {
        for (property, check) in properties {
            let name = format!("{property}::{case}");
            let case = case.clone();
            trials.push(libtest_mimic::Trial::test(name, move || {
                std::panic::catch_unwind(|| check(&case)).map_err(|panic| {
                    let message = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|text| text.to_string()))
                        .unwrap_or_else(|| "the check panicked".to_string());
                    libtest_mimic::Failed::from(message)
                })
            }));
        }
    }
    libtest_mimic::run(&arguments, trials).exit();
}
