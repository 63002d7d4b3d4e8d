//! A line-level mutation fuzzer over the project's own fixture and
//! end-to-end corpus: lines dropped, duplicated, swapped, re-indented or
//! spliced from another file. For every mutant, beside an untouched training
//! module: no panic; every rewrite parses; a second `fix` changes nothing; a
//! mutant that does not parse is never written; the untouched module is still
//! rewritten. The suite runs a bounded number of mutants with a fixed seed;
//! `scripts/fuzz` runs long campaigns (`FUZZ_MUTANTS`, `FUZZ_SEED`).

use std::path::{Path, PathBuf};

use distribute::engine::{self, RunOutcome, RunRequest};
use distribute::python::parse::parse_module;

/// A training module every mutant's package also holds.
const GOOD_MODULE: &str = "import tensorflow as tf\n\nmodel = tf.keras.Sequential([tf.keras.layers.Dense(1)])\nmodel.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss=\"mse\")\nmodel.fit(tf.zeros((8, 1)), tf.zeros((8, 1)), epochs=4)\n";

fn corpus() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut files = Vec::new();
    collect_python(&root.join("fixtures"), &mut files);
    collect_python(&root.join("e2e"), &mut files);
    files.sort();
    files
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .filter(|text| text.contains("tensorflow") || text.contains("keras"))
        .collect()
}

fn collect_python(directory: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(directory) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_python(&path, files);
        } else if path.extension().is_some_and(|extension| extension == "py") {
            files.push(path);
        }
    }
}

/// One line-level mutation of `text`.
fn mutate(text: &str, donor: &str, random: &mut fastrand::Rng) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    if lines.is_empty() {
        return text.to_string();
    }
    let at = random.usize(..lines.len());
    match random.u8(..5) {
        0 => {
            lines.remove(at);
        }
        1 => lines.insert(at, lines[at].clone()),
        2 if at + 1 < lines.len() => lines.swap(at, at + 1),
        3 => {
            let line = &lines[at];
            lines[at] = if random.bool() {
                format!("    {line}")
            } else {
                line.strip_prefix("    ").unwrap_or(line).to_string()
            };
        }
        _ => {
            let donor_lines: Vec<&str> = donor.lines().collect();
            if !donor_lines.is_empty() {
                lines.insert(
                    at,
                    donor_lines[random.usize(..donor_lines.len())].to_string(),
                );
            }
        }
    }
    let mut mutated = lines.join("\n");
    mutated.push('\n');
    mutated
}

fn run(root: &Path) -> RunOutcome {
    let request = RunRequest {
        root: root.to_path_buf(),
        ..Default::default()
    };
    engine::with_large_stack(move || engine::run(&request))
}

fn write_rewrites(outcome: &RunOutcome) {
    for module in &outcome.modules {
        if let Some(rewritten) = &module.rewritten {
            std::fs::write(&module.path, rewritten).unwrap();
        }
    }
}

/// Checks one mutant; the error says what broke.
fn check_mutant(mutant: &str) -> Result<(), String> {
    let scratch = tempfile::tempdir().unwrap();
    std::fs::write(scratch.path().join("mutant.py"), mutant).unwrap();
    std::fs::write(scratch.path().join("good.py"), GOOD_MODULE).unwrap();
    let first = run(scratch.path());
    for module in &first.modules {
        if let Some(error) = &module.rewrite_error {
            return Err(format!("{}: {error}", module.relative_path));
        }
        if let Some(rewritten) = &module.rewritten
            && parse_module(rewritten, &module.relative_path).is_err()
        {
            return Err(format!(
                "{}: the rewrite does not parse",
                module.relative_path
            ));
        }
    }
    let good = first
        .modules
        .iter()
        .find(|module| module.relative_path == "good.py");
    if good.is_none_or(|module| module.rewritten.is_none()) {
        return Err("the untouched training module was not rewritten".into());
    }
    let broken = parse_module(mutant, "mutant.py").is_err();
    write_rewrites(&first);
    let after = std::fs::read_to_string(scratch.path().join("mutant.py")).unwrap();
    if broken && after != mutant {
        return Err("a mutant that does not parse was written".into());
    }
    let second = run(scratch.path());
    if let Some(module) = second
        .modules
        .iter()
        .find(|module| module.rewritten.is_some())
    {
        return Err(format!(
            "{}: a second fix changed it again",
            module.relative_path
        ));
    }
    Ok(())
}

/// Runs `count` mutants from `seed`; returns the failures with their mutants.
fn campaign(count: usize, seed: u64) -> Vec<String> {
    let corpus = corpus();
    assert!(!corpus.is_empty(), "the fuzz corpus is empty");
    let mut random = fastrand::Rng::with_seed(seed);
    let mut failures = Vec::new();
    for number in 0..count {
        let original = &corpus[random.usize(..corpus.len())];
        let donor = &corpus[random.usize(..corpus.len())];
        let mut mutant = mutate(original, donor, &mut random);
        for _ in 0..random.usize(..3) {
            mutant = mutate(&mutant, donor, &mut random);
        }
        let result = std::panic::catch_unwind(|| check_mutant(&mutant))
            .unwrap_or_else(|_| Err("the tool panicked".into()));
        if let Err(problem) = result {
            failures.push(format!(
                "mutant {number} (seed {seed}): {problem}\n{mutant}"
            ));
        }
    }
    failures
}

#[test]
fn mutants_never_panic_always_parse_and_fix_converges() {
    let count = std::env::var("FUZZ_MUTANTS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(300);
    let seed = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1);
    let failures = campaign(count, seed);
    println!(
        "{count} mutants from seed {seed}: {} failed",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {count} mutants failed; the first:\n{}",
        failures.len(),
        failures[0]
    );
}
