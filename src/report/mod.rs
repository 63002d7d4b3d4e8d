//! Output formats, one file each. Reports format; they do not decide exit codes.

pub mod github;
pub mod json;
pub mod markdown;
pub mod sarif;
pub mod text;

use similar::TextDiff;

use crate::python::notebook::CellChange;

/// The unified diff of one rewrite, with `a/` and `b/` headers like git's.
pub fn unified_diff(relative_path: &str, original: &str, rewritten: &str) -> String {
    TextDiff::from_lines(original, rewritten)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{relative_path}"), &format!("b/{relative_path}"))
        .to_string()
}

/// The diff of a notebook's rewrite: a hunk per changed stretch of each
/// changed code cell, its line numbers in the cell and the cell named after
/// the hunk header (`@@ -1,2 +1,4 @@ cell 3`), as diff tools show a function.
pub fn notebook_diff(relative_path: &str, changes: &[CellChange]) -> String {
    let mut out = format!("--- a/{relative_path}\n+++ b/{relative_path}\n");
    for change in changes {
        // Jupyter's cells end without a newline; the diff shows whole lines.
        let with_newline = |text: &str| {
            if text.is_empty() || text.ends_with('\n') {
                text.to_string()
            } else {
                format!("{text}\n")
            }
        };
        let (original, rewritten) = (
            with_newline(&change.original),
            with_newline(&change.rewritten),
        );
        let diff = TextDiff::from_lines(&original, &rewritten);
        for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
            let text = hunk.to_string();
            let (header, body) = text.split_once('\n').unwrap_or((&text, ""));
            out.push_str(&format!("{header} cell {}\n{body}", change.number));
        }
    }
    out
}

/// Where a diagnostic or problem is, as a person looks for it:
/// `path:line:col`, or `path:cell 4:line:col` in a notebook.
pub fn position(relative_path: &str, cell: Option<usize>, line: usize, column: usize) -> String {
    match cell {
        Some(cell) => format!("{relative_path}:cell {cell}:{line}:{column}"),
        None => format!("{relative_path}:{line}:{column}"),
    }
}
