//! Programs that already train with Horovod, written the way Horovod's own
//! examples are (a launcher branch, pre-scaled rates, rank-dependent
//! directories and verbosity, Horovod hooks held in names, rank tests inside
//! `and`, `horovod.keras`, a CPU mode under the user's flag), get no edit.

use std::path::{Path, PathBuf};

use distribute::engine::{self, RunRequest};

fn cases() -> Vec<PathBuf> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .unwrap()
        .filter_map(|entry| entry.ok())
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .starts_with("already_distributed_")
        })
        .map(|entry| entry.path().join("input"))
        .collect();
    cases.sort();
    cases
}

#[test]
fn already_distributed_programs_get_no_edit() {
    let cases = cases();
    assert!(
        cases.len() >= 3,
        "the already-distributed fixtures are missing"
    );
    for root in cases {
        let request = RunRequest {
            root: root.clone(),
            ..Default::default()
        };
        let outcome = engine::with_large_stack(move || engine::run(&request));
        assert!(
            !outcome.modules.is_empty(),
            "{}: no training module found",
            root.display()
        );
        for module in &outcome.modules {
            assert!(
                module.rewritten.is_none() && module.rewrite_error.is_none(),
                "{}/{}: an already-distributed program was edited",
                root.display(),
                module.relative_path
            );
        }
    }
}
