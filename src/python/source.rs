//! Source text of one Python file and the mapping from byte offsets to
//! line and column numbers that diagnostics and reports need.

use std::path::PathBuf;
use std::sync::Arc;

use super::notebook::{Notebook, RecordedVersions, ShellCommand};

/// One loaded Python file: where it lives and its text, kept verbatim so that
/// edits can be applied to the original bytes.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Path relative to the package root, with `/` separators.
    pub relative_path: String,
    /// Path on disk.
    pub path: PathBuf,
    pub text: String,
    pub line_index: LineIndex,
    /// Set when the file is a Jupyter notebook: `text` is then its code cells
    /// joined, and positions are reported in cells.
    pub notebook: Option<Arc<Notebook>>,
    /// The releases a notebook recorded running with; kept for a rewrite
    /// of it, which is checked as plain text.
    pub recorded: RecordedVersions,
    /// A notebook's shell lines, where they stand in `text`.
    pub shell_commands: Vec<ShellCommand>,
}

impl SourceFile {
    pub fn new(relative_path: String, path: PathBuf, text: String) -> Self {
        let line_index = LineIndex::new(&text);
        SourceFile {
            relative_path,
            path,
            text,
            line_index,
            notebook: None,
            recorded: RecordedVersions::default(),
            shell_commands: Vec::new(),
        }
    }

    /// A notebook's code cells as one module.
    pub fn from_notebook(relative_path: String, path: PathBuf, notebook: Arc<Notebook>) -> Self {
        let mut source = SourceFile::new(relative_path, path, notebook.python().to_string());
        source.notebook = Some(notebook);
        source
    }

    /// The line of an offset as messages name it: `line 12`, or in a
    /// notebook `cell 4, line 2`.
    pub fn line_label(&self, offset: usize) -> String {
        match self.position(offset) {
            (Some(cell), location) => format!("cell {cell}, line {}", location.line),
            (None, location) => format!("line {}", location.line),
        }
    }

    /// Where a person looks for a byte offset: the notebook cell (if any) and
    /// the line and column in it, else in the file.
    pub fn position(&self, offset: usize) -> (Option<usize>, Location) {
        match self
            .notebook
            .as_ref()
            .and_then(|notebook| notebook.position(offset))
        {
            Some((cell, location)) => (Some(cell), location),
            None => (None, self.location(offset)),
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn location(&self, offset: usize) -> Location {
        self.line_index.location(&self.text, offset)
    }
}

/// A 1-based line and column, as editors and linters show them.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct Location {
    pub line: usize,
    pub column: usize,
}

/// Byte offsets of the start of every line.
#[derive(Debug, Clone)]
pub struct LineIndex {
    line_starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|index| index + 1));
        LineIndex { line_starts }
    }

    /// 0-based line number containing `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        match self.line_starts.binary_search(&offset) {
            Ok(line) => line,
            Err(next) => next - 1,
        }
    }

    pub fn location(&self, text: &str, offset: usize) -> Location {
        let offset = offset.min(text.len());
        let line = self.line_of(offset);
        let start = self.line_starts[line];
        let column = text
            .get(start..offset)
            .map_or(offset - start, |prefix| prefix.chars().count());
        Location {
            line: line + 1,
            column: column + 1,
        }
    }
}

/// Start of the line holding `offset`.
pub fn line_start(text: &str, offset: usize) -> usize {
    text[..offset].rfind('\n').map_or(0, |index| index + 1)
}

/// Offset just after the newline ending the line holding `offset` (or the end of the text).
pub fn line_end_including_newline(text: &str, offset: usize) -> usize {
    text[offset..]
        .find('\n')
        .map_or(text.len(), |index| offset + index + 1)
}

/// The whitespace that starts the line holding `offset`.
pub fn indentation_at(text: &str, offset: usize) -> &str {
    let start = line_start(text, offset);
    let rest = &text[start..];
    let width = rest.len() - rest.trim_start_matches([' ', '\t']).len();
    &rest[..width]
}

/// The line ending the file uses (`\r\n` or `\n`).
pub fn newline_style(text: &str) -> &'static str {
    match text.find('\n') {
        Some(index) if index > 0 && text.as_bytes()[index - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_are_one_based_and_count_characters() {
        let text = "a = 1\nb = 'é'; c = 2\n";
        let index = LineIndex::new(text);
        assert_eq!(index.location(text, 0), Location { line: 1, column: 1 });
        let c = text.find("c =").unwrap();
        assert_eq!(
            index.location(text, c),
            Location {
                line: 2,
                column: 10
            }
        );
    }

    #[test]
    fn indentation_is_taken_from_the_line() {
        let text = "def f():\n    x = 1\n";
        assert_eq!(indentation_at(text, text.find('x').unwrap()), "    ");
        assert_eq!(newline_style("a\r\nb"), "\r\n");
    }
}
