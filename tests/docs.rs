//! The README documents every diagnostic code with its name and default severity.

use distribute::diagnostics::CODES;

#[test]
fn readme_lists_every_diagnostic_code() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for (_, id, name, severity, _) in CODES {
        let row = format!("| {id} | {name} | {} |", severity.name());
        assert!(
            readme.contains(&row),
            "README.md lacks the row starting `{row}`"
        );
    }
}
