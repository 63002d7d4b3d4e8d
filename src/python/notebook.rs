//! Jupyter notebooks (nbformat 4) as Python sources: the code cells, in
//! order, form one module. The file's JSON text is kept verbatim; a rewrite
//! replaces the `source` of the cells that change and leaves every other byte
//! (outputs, metadata, ids, key order, indentation) alone.

use std::ops::Range;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::edit::{Edit, apply_edits};
use super::magics::{CellMagics, find_magics, with_placeholders};
use super::source::Location;

/// Why a notebook could not be read: where (the cell, and the line and
/// column in it or in the file) and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[error("{message}")]
pub struct NotebookError {
    /// 1-based number of the cell among all cells, when the problem is in one.
    pub cell: Option<usize>,
    /// In the cell when `cell` is set, else in the file.
    pub location: Option<Location>,
    pub message: String,
}

impl NotebookError {
    fn in_file(message: impl Into<String>) -> Self {
        NotebookError {
            cell: None,
            location: None,
            message: message.into(),
        }
    }
}

/// How a cell's `source` is written in the JSON: one string, or a list of
/// lines (the usual form), whose layout a rewrite reuses.
#[derive(Debug, Clone)]
enum SourceLayout {
    Text,
    Lines {
        /// Byte ranges of each line's JSON string in the file.
        elements: Vec<Range<usize>>,
    },
}

/// One code cell: where its source is in the file and in the module.
#[derive(Debug, Clone)]
pub struct CodeCell {
    /// 1-based among all cells (markdown too), as a person counts them.
    pub number: usize,
    /// The decoded source.
    pub text: String,
    /// Byte range of the `source` value in the file.
    source_span: Range<usize>,
    layout: SourceLayout,
    /// Where the cell starts in the module's Python text.
    start: usize,
    /// The cell has no final newline: one was added to separate it from the next.
    added_newline: bool,
    magics: CellMagics,
}

impl CodeCell {
    /// Length of the cell in the module's Python text.
    fn len(&self) -> usize {
        self.text.len() + usize::from(self.added_newline)
    }
}

/// A notebook read as one Python module.
#[derive(Debug, Clone)]
pub struct Notebook {
    /// The file as read.
    raw: String,
    cells: Vec<CodeCell>,
    /// The code cells joined, IPython lines replaced by placeholders.
    python: String,
    /// The kernel's language, when the notebook says.
    language: Option<String>,
}

/// One cell the rewrite changes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CellChange {
    pub number: usize,
    pub original: String,
    pub rewritten: String,
}

/// The rewritten notebook file and the cells that changed in it.
#[derive(Debug, Clone)]
pub struct NotebookRewrite {
    pub text: String,
    pub changes: Vec<CellChange>,
}

#[derive(Deserialize)]
struct NotebookShape<'a> {
    nbformat: Option<serde_json::Value>,
    /// Read leniently: a field of an unexpected type is no reason to refuse the code.
    metadata: Option<serde_json::Value>,
    #[serde(borrow)]
    cells: Option<Vec<&'a RawValue>>,
}

#[derive(Deserialize)]
struct CellShape<'a> {
    cell_type: Option<String>,
    #[serde(borrow)]
    source: Option<&'a RawValue>,
}

/// Offset of a slice of `whole` within it.
/// A line a notebook cell runs in a shell (`!wget URL`, `files = !ls`,
/// `%system ...`), or a whole cell run by another program (`%%bash`,
/// `%%writefile name`): where it is in the module's text and its command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellCommand {
    pub range: Range<usize>,
    /// The command line (`wget URL`; `writefile name` for a cell magic).
    pub command: String,
    /// Whether the line is a statement of its own (`!wget URL`), not a cell
    /// magic or an assignment of the output (`files = !ls`).
    pub stands_alone: bool,
    /// How many lines after the first the command continues onto with `\`.
    pub continued_lines: usize,
}

/// How many lines a line ending at `end` continues onto with a final `\`.
fn continued_lines(text: &str, end: usize) -> usize {
    let mut count = 0;
    let mut line_end = end;
    while text[..line_end].trim_end().ends_with('\\') && line_end < text.len() {
        count += 1;
        let next = line_end + 1;
        line_end = text[next..]
            .find('\n')
            .map_or(text.len(), |newline| next + newline);
    }
    count
}

/// The releases (major, minor) of Keras and TensorFlow a notebook recorded
/// itself running with, when it shows them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordedVersions {
    pub keras: Option<(u32, u32)>,
    pub tensorflow: Option<(u32, u32)>,
    /// An import printed `Using TensorFlow backend.`: standalone Keras 2.3
    /// or earlier, which ran on a backend of its choice.
    pub multi_backend_keras: bool,
}

/// What multi-backend Keras (2.3 and earlier) prints when it is imported.
const MULTI_BACKEND_KERAS_BANNER: &str = "Using TensorFlow backend.";

/// The major and minor of the first version in a text (`2.0.8`,
/// `TensorFlow version: 2.12.0`, `>=2.4`).
pub fn first_version(text: &str) -> Option<(u32, u32)> {
    let start = text.find(|c: char| c.is_ascii_digit())?;
    let mut parts = text[start..]
        .split(|c: char| !c.is_ascii_digit())
        .filter(|part| !part.is_empty());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().and_then(|part| part.parse().ok()).unwrap_or(0);
    Some((major, minor))
}

fn offset_in(whole: &str, part: &str) -> usize {
    part.as_ptr() as usize - whole.as_ptr() as usize
}

fn json_error(error: &serde_json::Error) -> NotebookError {
    // The position is reported as the problem's line and column, not twice.
    let text = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    let reason = text.strip_suffix(&position).unwrap_or(&text);
    NotebookError {
        cell: None,
        location: Some(Location {
            line: error.line(),
            column: error.column(),
        }),
        message: format!("not a valid notebook: invalid JSON ({reason})"),
    }
}

impl Notebook {
    /// Reads a notebook's JSON text.
    pub fn parse(raw: String) -> Result<Notebook, NotebookError> {
        let shape: NotebookShape =
            serde_json::from_str(&raw).map_err(|error| json_error(&error))?;
        match shape.nbformat.as_ref().and_then(serde_json::Value::as_u64) {
            Some(4) => {}
            Some(version) => {
                return Err(NotebookError::in_file(format!(
                    "nbformat {version} is not supported: only nbformat 4 notebooks are read (convert it with `jupyter nbconvert --to notebook --nbformat 4`)"
                )));
            }
            None => {
                return Err(NotebookError::in_file(
                    "not a Jupyter notebook: no numeric `nbformat` field",
                ));
            }
        }
        let language = ["/language_info/name", "/kernelspec/language"]
            .iter()
            .find_map(|pointer| shape.metadata.as_ref()?.pointer(pointer)?.as_str())
            .map(str::to_string);
        let raw_cells = shape
            .cells
            .ok_or_else(|| NotebookError::in_file("not a valid notebook: no `cells` list"))?;
        let mut cells = Vec::new();
        let mut python = String::new();
        for (index, raw_cell) in raw_cells.iter().enumerate() {
            let number = index + 1;
            let cell_error = |message: String| NotebookError {
                cell: Some(number),
                location: None,
                message,
            };
            let shape: CellShape = serde_json::from_str(raw_cell.get())
                .map_err(|error| cell_error(format!("not a valid cell: {error}")))?;
            if shape.cell_type.as_deref() != Some("code") {
                continue;
            }
            let source = shape
                .source
                .ok_or_else(|| cell_error("code cell without a `source`".into()))?;
            let cell = read_cell(&raw, number, source, python.len()).map_err(cell_error)?;
            python.push_str(&with_placeholders(&cell.text, &cell.magics));
            if cell.added_newline {
                python.push('\n');
            }
            cells.push(cell);
        }
        Ok(Notebook {
            raw,
            cells,
            python,
            language,
        })
    }

    /// The module's Python text: the code cells in order, each ending with a
    /// newline, IPython lines replaced by placeholders of the same length.
    pub fn python(&self) -> &str {
        &self.python
    }

    /// Each code cell's source with the texts of its recorded outputs
    /// (shown values and printed streams), from one parse of the notebook,
    /// each with whether it went to standard error (a warning there names
    /// other releases: `python3.6/site-packages/...`).
    fn sources_with_outputs(&self) -> Vec<(String, Vec<(bool, String)>)> {
        let Ok(notebook) = serde_json::from_str::<serde_json::Value>(&self.raw) else {
            return Vec::new();
        };
        let text = |value: &serde_json::Value| match value {
            serde_json::Value::String(text) => text.clone(),
            serde_json::Value::Array(lines) => lines
                .iter()
                .filter_map(serde_json::Value::as_str)
                .collect::<String>(),
            _ => String::new(),
        };
        let cells = notebook["cells"].as_array().cloned().unwrap_or_default();
        cells
            .iter()
            .filter(|cell| cell["cell_type"] == "code")
            .map(|cell| {
                let outputs = cell["outputs"].as_array().cloned().unwrap_or_default();
                let shown = outputs
                    .iter()
                    .map(|output| {
                        let shown = &output["data"]["text/plain"];
                        let to_standard_error = output["name"] == "stderr";
                        if shown.is_null() {
                            (to_standard_error, text(&output["text"]))
                        } else {
                            (to_standard_error, text(shown))
                        }
                    })
                    .collect();
                (text(&cell["source"]), shown)
            })
            .collect()
    }

    /// The releases the notebook recorded as the output of cells that show
    /// `keras.__version__` and `tf.__version__` (what it last ran with), and
    /// whether an import printed multi-backend Keras's banner.
    pub fn recorded_versions(&self) -> RecordedVersions {
        let cells = self.sources_with_outputs();
        let shows_tensorflow = |source: &str| {
            source.contains("tf.__version__") || source.contains("tensorflow.__version__")
        };
        // A cell showing both would leave which is which unknown, and
        // `tf.keras.__version__` is TensorFlow's own (`2.2.4-tf`).
        let shows_keras = |source: &str| {
            source.contains("keras.__version__")
                && !source.contains("tf.keras.__version__")
                && !source.contains("tensorflow.keras.__version__")
                && !shows_tensorflow(source)
        };
        let first = |shows: &dyn Fn(&str) -> bool| {
            cells
                .iter()
                .filter(|(source, _)| shows(source))
                .flat_map(|(_, outputs)| outputs)
                .filter(|(to_standard_error, _)| !to_standard_error)
                .find_map(|(_, text)| first_version(text))
        };
        RecordedVersions {
            keras: first(&shows_keras),
            tensorflow: first(&shows_tensorflow),
            multi_backend_keras: cells.iter().any(|(_, outputs)| {
                outputs
                    .iter()
                    .any(|(_, text)| text.contains(MULTI_BACKEND_KERAS_BANNER))
            }),
        }
    }

    /// The IPython lines (as written) that start within `range` of the
    /// module's text.
    pub fn magic_lines_in(&self, range: Range<usize>) -> Vec<&str> {
        self.cells
            .iter()
            .flat_map(|cell| {
                cell.magics
                    .lines
                    .iter()
                    .filter(|line| range.contains(&(cell.start + line.start)))
                    .map(|line| cell.text[line.clone()].trim_start())
            })
            .collect()
    }

    /// Where each IPython line of a Python cell starts in the module's text,
    /// lines that continue another with `\` left out.
    pub fn magic_line_starts(&self) -> Vec<usize> {
        self.cells
            .iter()
            .filter(|cell| cell.magics.is_python)
            .flat_map(|cell| {
                cell.magics
                    .lines
                    .iter()
                    .filter(|range| {
                        let before = cell.text[..range.start].trim_end_matches(['\n', '\r']);
                        !before.rsplit('\n').next().is_some_and(|previous| {
                            range.start > 0 && previous.trim_end().ends_with('\\')
                        })
                    })
                    .map(move |range| cell.start + range.start)
            })
            .collect()
    }

    /// The lines and cells the notebook runs in a shell, in cell order.
    pub fn shell_commands(&self) -> Vec<ShellCommand> {
        let mut commands = Vec::new();
        for cell in &self.cells {
            let ranges = &cell.magics.lines;
            if !cell.magics.is_python {
                if let Some(first) = ranges.first() {
                    let command = cell.text[first.clone()].trim().trim_start_matches('%');
                    commands.push(ShellCommand {
                        range: cell.start..cell.start + cell.text.len(),
                        command: command.to_string(),
                        stands_alone: false,
                        continued_lines: 0,
                    });
                }
                continue;
            }
            for range in ranges {
                let line = cell.text[range.clone()].trim();
                // `files = !ls`: the command follows the `=`.
                let value = match line.split_once('=') {
                    Some((target, value))
                        if !line.starts_with(['!', '%']) && !target.is_empty() =>
                    {
                        value.trim_start()
                    }
                    _ => line,
                };
                let command = if let Some(command) = value.strip_prefix('!') {
                    command.trim_start_matches('!')
                } else if let Some(command) = value
                    .strip_prefix("%system")
                    .or_else(|| value.strip_prefix("%sx"))
                {
                    command
                } else {
                    continue;
                };
                commands.push(ShellCommand {
                    range: cell.start + range.start..cell.start + range.end,
                    command: command.trim().to_string(),
                    stands_alone: line.starts_with('!'),
                    continued_lines: continued_lines(&cell.text, range.end),
                });
            }
        }
        commands
    }

    /// The kernel's language when it is not Python (an R or Julia notebook):
    /// such a notebook is no Python source.
    pub fn other_language(&self) -> Option<&str> {
        self.language
            .as_deref()
            .filter(|language| !language.eq_ignore_ascii_case("python"))
    }

    /// The file as read.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// The number of the code cell holding an offset of the Python text.
    pub fn cell_number_at(&self, offset: usize) -> Option<usize> {
        self.cell_at(offset).map(|cell| cell.number)
    }

    /// The code cell holding an offset of the Python text.
    fn cell_at(&self, offset: usize) -> Option<&CodeCell> {
        let index = self
            .cells
            .partition_point(|cell| cell.start <= offset)
            .checked_sub(1)?;
        Some(&self.cells[index])
    }

    /// The cell number and the 1-based line and column in that cell of an
    /// offset of the Python text.
    pub fn position(&self, offset: usize) -> Option<(usize, Location)> {
        let cell = self.cell_at(offset.min(self.python.len()))?;
        let prefix = self.python.get(cell.start..offset)?;
        let line = prefix.matches('\n').count() + 1;
        let column = prefix.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        Some((cell.number, Location { line, column }))
    }

    /// Translates a position in the Python text (as the parser reports it) to its cell.
    pub fn cell_position(&self, location: Location) -> Option<(usize, Location)> {
        let line_start: usize = self
            .python
            .split_inclusive('\n')
            .take(location.line.saturating_sub(1))
            .map(str::len)
            .sum();
        let line = self.python.get(line_start..)?.split('\n').next()?;
        let column_bytes: usize = line
            .chars()
            .take(location.column.saturating_sub(1))
            .map(char::len_utf8)
            .sum();
        self.position(line_start + column_bytes)
    }

    /// The line of the notebook file holding a line of a cell (for tools
    /// that annotate the file itself): the line's string in a list-of-lines
    /// source, else where the source starts.
    pub fn file_line(&self, cell_number: usize, line: usize) -> Option<usize> {
        let cell = self.cells.iter().find(|cell| cell.number == cell_number)?;
        let offset = match &cell.layout {
            SourceLayout::Lines { elements } => elements
                .get(line.saturating_sub(1))
                .map_or(cell.source_span.start, |element| element.start),
            SourceLayout::Text => cell.source_span.start,
        };
        Some(self.raw[..offset].matches('\n').count() + 1)
    }

    /// Applies edits of the Python text to the cells they fall in, and writes
    /// the notebook back with only those cells' `source` changed.
    pub fn rewrite(&self, edits: &[Edit]) -> Result<NotebookRewrite, String> {
        let mut per_cell: Vec<Vec<Edit>> = vec![Vec::new(); self.cells.len()];
        for edit in edits {
            let index = self.owning_cell(edit)?;
            let cell = &self.cells[index];
            let local = edit.range.start - cell.start..edit.range.end - cell.start;
            if let Some(magic) =
                cell.magics.lines.iter().find(|line| {
                    !local.is_empty() && local.start < line.end && line.start < local.end
                })
            {
                let line = cell.text[..magic.start].matches('\n').count() + 1;
                return Err(format!(
                    "the rewrite would change the IPython line {line} of cell {} (a magic or shell command); nothing was rewritten",
                    cell.number
                ));
            }
            per_cell[index].push(Edit::replacement(local, edit.content.clone()));
        }
        let mut text = String::with_capacity(self.raw.len() + 1024);
        let mut cursor = 0;
        let mut changes = Vec::new();
        for (cell, edits) in self.cells.iter().zip(&per_cell) {
            if edits.is_empty() {
                continue;
            }
            let mut segment = cell.text.clone();
            if cell.added_newline {
                segment.push('\n');
            }
            let mut rewritten = apply_edits(&segment, edits).map_err(|_| {
                format!("internal error: two edits conflict in cell {}", cell.number)
            })?;
            if cell.added_newline && rewritten.ends_with('\n') {
                rewritten.pop();
            }
            if rewritten == cell.text {
                continue;
            }
            check_cell_parses(cell.number, &rewritten)?;
            text.push_str(&self.raw[cursor..cell.source_span.start]);
            text.push_str(&self.encode_source(cell, &rewritten));
            cursor = cell.source_span.end;
            changes.push(CellChange {
                number: cell.number,
                original: cell.text.clone(),
                rewritten,
            });
        }
        text.push_str(&self.raw[cursor..]);
        Ok(NotebookRewrite { text, changes })
    }

    /// The cell an edit belongs to. Whole lines inserted between two cells go
    /// at the end of the earlier one when it holds Python (code inserted after
    /// a cell's last statement stays with it); the start of a line (a guard
    /// `if ...:` and the indentation of the statement it guards) goes with
    /// the later cell, which holds the rest of that line.
    fn owning_cell(&self, edit: &Edit) -> Result<usize, String> {
        let Range { start, end } = edit.range;
        let ends_at = |cell: &CodeCell| cell.start + cell.len();
        let whole_lines = edit.content.is_empty() || edit.content.ends_with('\n');
        let found = if start == end && !whole_lines {
            self.cells.iter().position(|cell| {
                cell.magics.is_python && cell.start <= start && start < ends_at(cell)
            })
        } else if start == end {
            self.cells
                .iter()
                .position(|cell| {
                    cell.magics.is_python && cell.start < start && start <= ends_at(cell)
                })
                .or_else(|| {
                    self.cells
                        .iter()
                        .position(|cell| cell.magics.is_python && cell.start == start)
                })
        } else {
            self.cells
                .iter()
                .position(|cell| cell.start <= start && end <= ends_at(cell))
        };
        let Some(index) = found else {
            return Err(match self.cell_at(start) {
                Some(cell) => format!(
                    "internal error: an edit crosses the end of cell {}; nothing was rewritten (please report this)",
                    cell.number
                ),
                None => "internal error: an edit falls outside every code cell; nothing was rewritten (please report this)".into(),
            });
        };
        if !self.cells[index].magics.is_python {
            return Err(format!(
                "the rewrite would change cell {}, which runs a cell magic in another language; nothing was rewritten",
                self.cells[index].number
            ));
        }
        Ok(index)
    }

    /// The JSON of a cell's new source, in the layout the cell had: one
    /// string, or a list of lines in the list's own indentation. Lines that
    /// did not change keep their original JSON bytes.
    fn encode_source(&self, cell: &CodeCell, source: &str) -> String {
        let SourceLayout::Lines { elements } = &cell.layout else {
            return json_string(source);
        };
        let lines: Vec<&str> = source.split_inclusive('\n').collect();
        if lines.is_empty() {
            return "[]".into();
        }
        let (prefix, separator, suffix) = self.list_layout(cell, elements);
        let mut out = String::from("[");
        out.push_str(&prefix);
        for (index, line) in lines.iter().enumerate() {
            if index > 0 {
                out.push_str(&separator);
            }
            let original = elements.iter().find(|element| {
                serde_json::from_str::<String>(&self.raw[(*element).clone()])
                    .is_ok_and(|decoded| decoded == *line)
            });
            match original {
                Some(element) => out.push_str(&self.raw[element.clone()]),
                None => out.push_str(&json_string(line)),
            }
        }
        out.push_str(&suffix);
        out.push(']');
        out
    }

    /// What comes after `[`, between two lines, and before `]` in a cell's
    /// source list: its own, else another cell's, else nbformat's (one space
    /// deeper than the line holding the list).
    fn list_layout(&self, cell: &CodeCell, elements: &[Range<usize>]) -> (String, String, String) {
        let span = &cell.source_span;
        let layout_of = |span: &Range<usize>, elements: &[Range<usize>]| {
            let prefix = self.raw[span.start + 1..elements[0].start].to_string();
            let suffix = self.raw[elements[elements.len() - 1].end..span.end - 1].to_string();
            let separator = match elements {
                [first, second, ..] => self.raw[first.end..second.start].to_string(),
                _ => format!(",{prefix}"),
            };
            (prefix, separator, suffix)
        };
        if !elements.is_empty() {
            return layout_of(span, elements);
        }
        let borrowed = self.cells.iter().find_map(|other| match &other.layout {
            SourceLayout::Lines { elements } if !elements.is_empty() => {
                Some(layout_of(&other.source_span, elements))
            }
            _ => None,
        });
        borrowed.unwrap_or_else(|| {
            let line_start = self.raw[..span.start]
                .rfind('\n')
                .map_or(0, |index| index + 1);
            let line = &self.raw[line_start..span.start];
            let indentation = &line[..line.len() - line.trim_start().len()];
            (
                format!("\n{indentation} "),
                format!(",\n{indentation} "),
                format!("\n{indentation}"),
            )
        })
    }
}

/// Jupyter compiles each cell on its own: a rewritten cell must parse alone
/// (a statement split between two cells would not run).
fn check_cell_parses(number: usize, source: &str) -> Result<(), String> {
    let python = with_placeholders(source, &find_magics(source));
    super::parse::parse_module(&python, "cell").map(|_| ()).map_err(|error| {
        format!("internal error: rewritten cell {number} does not parse on its own ({error}); nothing was rewritten (please report this)")
    })
}

/// A JSON string literal, escaped as serde_json (and Python's json) do.
fn json_string(text: &str) -> String {
    serde_json::to_string(text).expect("a string serialises")
}

/// Decodes one cell's `source` (a string or a list of strings) and finds its magics.
fn read_cell(
    raw: &str,
    number: usize,
    source: &RawValue,
    start: usize,
) -> Result<CodeCell, String> {
    let source_text = source.get();
    let source_span = offset_in(raw, source_text)..offset_in(raw, source_text) + source_text.len();
    let invalid = |error: serde_json::Error| {
        format!("`source` is not a string or a list of strings: {error}")
    };
    let (text, layout) = if source_text.starts_with('[') {
        let elements: Vec<&RawValue> = serde_json::from_str(source_text).map_err(invalid)?;
        let mut text = String::new();
        let mut ranges = Vec::new();
        for element in elements {
            let line: String = serde_json::from_str(element.get()).map_err(invalid)?;
            text.push_str(&line);
            let offset = offset_in(raw, element.get());
            ranges.push(offset..offset + element.get().len());
        }
        (text, SourceLayout::Lines { elements: ranges })
    } else {
        let text: String = serde_json::from_str(source_text).map_err(invalid)?;
        (text, SourceLayout::Text)
    };
    let magics = find_magics(&text);
    Ok(CodeCell {
        number,
        added_newline: !text.is_empty() && !text.ends_with('\n'),
        text,
        source_span,
        layout,
        start,
        magics,
    })
}

#[cfg(test)]
#[path = "notebook_tests.rs"]
mod tests;
