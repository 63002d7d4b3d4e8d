//! Output formats, one file each. Reports format; they do not decide exit codes.

pub mod github;
pub mod json;
pub mod markdown;
pub mod sarif;
pub mod text;

use similar::udiff::UnifiedHunkHeader;
use similar::{ChangeTag, DiffOp, TextDiff};

use crate::python::notebook::CellChange;

/// The unified diff of one rewrite, with `a/` and `b/` headers like git's.
pub fn unified_diff(relative_path: &str, original: &str, rewritten: &str) -> String {
    TextDiff::from_lines(original, rewritten)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{relative_path}"), &format!("b/{relative_path}"))
        .to_string()
}

/// The diff of a notebook's rewrite: one hunk per changed code cell, its
/// line numbers in the cell and the cell named after the hunk header
/// (`@@ -1,2 +1,4 @@ cell 3`), as diff tools show a function.
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
        let ops = one_hunk(diff.grouped_ops(3));
        if ops.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "{} cell {}\n",
            UnifiedHunkHeader::new(&ops),
            change.number
        ));
        for change in ops.iter().flat_map(|op| diff.iter_changes(op)) {
            let sign = match change.tag() {
                ChangeTag::Equal => ' ',
                ChangeTag::Delete => '-',
                ChangeTag::Insert => '+',
            };
            out.push(sign);
            out.push_str(change.value());
        }
    }
    out
}

/// The hunks of one cell joined into one: the unchanged lines between two
/// hunks become context.
fn one_hunk(groups: Vec<Vec<DiffOp>>) -> Vec<DiffOp> {
    let mut ops: Vec<DiffOp> = Vec::new();
    for group in groups {
        if let (Some(previous), Some(next)) = (ops.last(), group.first()) {
            let (old_index, new_index) = (previous.old_range().end, previous.new_range().end);
            let len = next.old_range().start - old_index;
            if len > 0 {
                ops.push(DiffOp::Equal {
                    old_index,
                    new_index,
                    len,
                });
            }
        }
        ops.extend(group);
    }
    ops
}

/// Where a diagnostic or problem is, as a person looks for it:
/// `path:line:col`, or `path:cell 4:line:col` in a notebook.
pub fn position(relative_path: &str, cell: Option<usize>, line: usize, column: usize) -> String {
    match cell {
        Some(cell) => format!("{relative_path}:cell {cell}:{line}:{column}"),
        None => format!("{relative_path}:{line}:{column}"),
    }
}

/// The diffs of a module's rewrite, rendered here: the outcome is data.
impl crate::outcome::ModuleOutcome {
    /// The unified diff of a held-back unsafe rewrite (empty when none).
    pub fn held_back_diff(&self) -> String {
        match &self.held_back {
            None => String::new(),
            Some(held) => self.diff_to(&held.rewritten, &held.cell_changes),
        }
    }

    /// The unified diff of the rewrite (empty when unchanged): a notebook's
    /// shows each changed cell's source, labelled with the cell.
    pub fn diff(&self) -> String {
        match &self.rewritten {
            None => String::new(),
            Some(rewritten) => self.diff_to(rewritten, &self.cell_changes),
        }
    }

    fn diff_to(&self, rewritten: &str, cell_changes: &[CellChange]) -> String {
        if cell_changes.is_empty() {
            crate::report::unified_diff(&self.relative_path, &self.original, rewritten)
        } else {
            crate::report::notebook_diff(&self.relative_path, cell_changes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notebook_diff_has_one_hunk_per_changed_cell() {
        let original = (1..=12)
            .map(|n| format!("x{n} = {n}"))
            .collect::<Vec<_>>()
            .join("\n");
        let rewritten = original
            .replace("x1 = 1", "x1 = 10")
            .replace("x12 = 12", "x12 = 120");
        let diff = notebook_diff(
            "train.ipynb",
            &[CellChange {
                number: 4,
                original,
                rewritten,
            }],
        );
        let headers: Vec<&str> = diff.lines().filter(|line| line.starts_with("@@")).collect();
        assert_eq!(headers, vec!["@@ -1,12 +1,12 @@ cell 4"]);
        assert!(diff.starts_with("--- a/train.ipynb\n+++ b/train.ipynb\n"));
        assert!(diff.contains("\n-x1 = 1\n+x1 = 10\n x2 = 2\n"), "{diff}");
        assert!(
            diff.ends_with(" x11 = 11\n-x12 = 12\n+x12 = 120\n"),
            "{diff}"
        );
    }
}
