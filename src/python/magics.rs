//! IPython syntax in notebook cells: line magics (`%timeit f()`), shell
//! escapes (`!pip install x`, `files = !ls`), help (`model.fit?`) and cell
//! magics (`%%bash`). These lines are not Python: they are kept verbatim in
//! the notebook and stand in the analysed source as placeholders of the same
//! byte length that parse, so offsets need no translation.

use std::ops::Range;

/// Cell magics whose body is Python that runs once, as it is written: only
/// their first line is IPython syntax.
const PYTHON_BODY_CELL_MAGICS: &[&str] = &["time", "capture"];

/// The IPython lines of one cell, as byte ranges of the cell text (without
/// their line ending), and whether the cell's body is Python at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellMagics {
    pub lines: Vec<Range<usize>>,
    /// False for a cell magic in another language (`%%bash`, `%%writefile`):
    /// every line of the cell is opaque and no Python may be added to it.
    pub is_python: bool,
}

/// Each line of `text` with its byte range, without the `\n` or `\r\n`.
fn lines_with_ranges(text: &str) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let content = line.trim_end_matches('\n').trim_end_matches('\r');
        ranges.push(start..start + content.len());
        start += line.len();
    }
    ranges
}

/// Line magics IPython runs without their `%` (its "automagic", on by
/// default) that write nothing where they run: `pip install x`, `cd data`.
/// Magics that are shell aliases and write (`mkdir`, `rm`) are left out: as
/// Python they stay a syntax error, which is said, rather than opaque lines
/// every worker would run unseen.
const AUTOMAGICS: &[&str] = &[
    "pip",
    "conda",
    "cd",
    "pwd",
    "ls",
    "env",
    "load_ext",
    "reload_ext",
    "autoreload",
    "matplotlib",
    "time",
    "timeit",
    "run",
    "pylab",
    "tensorflow_version",
    "who",
    "whos",
    "history",
    "config",
];

/// Python keywords that may follow a name in a valid statement
/// (`pip if x else y`, `time in window`).
const KEYWORDS_AFTER_A_NAME: &[&str] = &["in", "is", "and", "or", "not", "if", "else", "for", "as"];

/// `pip install x`: an automagic's name followed by a word. Two names side
/// by side are never Python, unless the second is a keyword.
fn is_automagic_line(text: &str) -> bool {
    let mut words = text.split_whitespace();
    let (Some(first), Some(second)) = (words.next(), words.next()) else {
        return false;
    };
    let starts_a_word = second
        .chars()
        .next()
        .is_some_and(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '/' | '~'));
    AUTOMAGICS.contains(&first) && starts_a_word && !KEYWORDS_AFTER_A_NAME.contains(&second)
}

/// Whether a line starting a statement is IPython syntax rather than Python.
fn is_magic_line(line: &str) -> bool {
    let text = line.trim();
    if text.starts_with('%') || text.starts_with('?') || is_automagic_line(text) {
        return true;
    }
    if text.starts_with('!') && !text.starts_with("!=") {
        return true;
    }
    // `model.fit?`, `tf.keras??`: help on a dotted name.
    let before_help = text.trim_end_matches('?');
    if before_help.len() < text.len()
        && !before_help.is_empty()
        && before_help
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
    {
        return true;
    }
    // `files = !ls`, `timing = %timeit -o f()`.
    if let Some(equals) = text.find('=') {
        let (target, value) = (&text[..equals], &text[equals + 1..]);
        let is_target = !target.trim().is_empty()
            && target
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == ',' || c == ' ');
        let value = value.trim_start();
        return is_target
            && !value.starts_with('=')
            && (value.starts_with('%') || (value.starts_with('!') && !value.starts_with("!=")));
    }
    false
}

/// Where a logical line of Python stands after a physical line: inside
/// brackets, inside a triple-quoted string, or continued by a backslash.
#[derive(Debug, Default)]
struct LineState {
    bracket_depth: usize,
    triple_quote: Option<&'static str>,
    continued: bool,
}

impl LineState {
    fn at_statement_start(&self) -> bool {
        self.bracket_depth == 0 && self.triple_quote.is_none() && !self.continued
    }

    /// Follows strings, comments and brackets through one physical line.
    fn advance(&mut self, line: &str) {
        let bytes = line.as_bytes();
        let mut index = 0;
        while index < bytes.len() {
            if let Some(quote) = self.triple_quote {
                match line[index..].find(quote) {
                    Some(found) => {
                        index += found + 3;
                        self.triple_quote = None;
                    }
                    None => index = bytes.len(),
                }
                continue;
            }
            match bytes[index] {
                b'#' => break,
                b'(' | b'[' | b'{' => self.bracket_depth += 1,
                b')' | b']' | b'}' => self.bracket_depth = self.bracket_depth.saturating_sub(1),
                quote @ (b'"' | b'\'') => {
                    let triple = if quote == b'"' { "\"\"\"" } else { "'''" };
                    if line[index..].starts_with(triple) {
                        self.triple_quote = Some(triple);
                        index += 3;
                        continue;
                    }
                    index += 1;
                    while index < bytes.len() && bytes[index] != quote {
                        index += if bytes[index] == b'\\' { 2 } else { 1 };
                    }
                }
                _ => {}
            }
            index += 1;
        }
        self.continued = self.triple_quote.is_none() && line.trim_end().ends_with('\\');
    }
}

/// Finds the IPython lines of a cell. A line is IPython syntax only where a
/// statement starts (not inside brackets or strings); a magic ending with a
/// backslash continues on the next line.
pub fn find_magics(text: &str) -> CellMagics {
    let lines = lines_with_ranges(text);
    let first = lines
        .iter()
        .map(|range| &text[range.clone()])
        .find(|line| !line.trim().is_empty());
    if let Some(first) = first
        && let Some(magic) = first.trim_start().strip_prefix("%%")
    {
        let name = magic.split_whitespace().next().unwrap_or_default();
        if !PYTHON_BODY_CELL_MAGICS.contains(&name) {
            let lines = lines
                .into_iter()
                .filter(|range| !range.is_empty())
                .collect();
            return CellMagics {
                lines,
                is_python: false,
            };
        }
    }
    let mut magic_lines = Vec::new();
    let mut state = LineState::default();
    let mut in_magic_continuation = false;
    for range in lines {
        let line = &text[range.clone()];
        if in_magic_continuation || (state.at_statement_start() && is_magic_line(line)) {
            in_magic_continuation = line.trim_end().ends_with('\\');
            if !line.trim().is_empty() {
                magic_lines.push(range);
            }
            continue;
        }
        state.advance(line);
    }
    CellMagics {
        lines: magic_lines,
        is_python: true,
    }
}

/// The text with every IPython line replaced by a placeholder of the same byte
/// length: `pass` where a statement starts in a block (so that a magic alone
/// in a block still parses), else a comment (at the top level a `pass` would
/// be code before the imports).
pub fn with_placeholders(text: &str, magics: &CellMagics) -> String {
    let mut output = text.to_string();
    let mut previous_continues = false;
    for range in &magics.lines {
        let line = &text[range.clone()];
        let indentation = line.len() - line.trim_start().len();
        let body = line.len() - indentation;
        // IPython strips a cell's leading indent before it looks for a cell
        // magic: an indented `%%time` first line is no statement of a block.
        let is_cell_magic = line.trim_start().starts_with("%%");
        let statement =
            magics.is_python && !previous_continues && indentation > 0 && !is_cell_magic;
        let placeholder = if statement && body >= 4 {
            format!("pass{}", " ".repeat(body - 4))
        } else {
            format!("#{}", " ".repeat(body - 1))
        };
        output.replace_range(range.start + indentation..range.end, &placeholder);
        previous_continues = line.trim_end().ends_with('\\');
    }
    output
}

/// After a rewrite put IPython lines in a block (`if hvd.rank() == 0:` above
/// a shell line, which it indents), their placeholders must be statements,
/// as `with_placeholders` makes them for lines written in a block: the
/// comment placeholder of a line the rewrite indented becomes `pass` of the
/// same length. `moves` pairs where each IPython line starts in `original`
/// and in `rewritten`; lines continuing another with `\\` are not among
/// them (their placeholder stays a comment).
pub fn placeholders_in_blocks(
    original: &str,
    rewritten: &mut String,
    moves: impl IntoIterator<Item = (usize, usize)>,
) {
    let line_at = |text: &str, offset: usize| {
        let start = text[..offset].rfind('\n').map_or(0, |newline| newline + 1);
        let end = text[start..]
            .find('\n')
            .map_or(text.len(), |newline| start + newline);
        start..end
    };
    let indentation = |line: &str| line.len() - line.trim_start().len();
    for (before, after) in moves {
        if before > original.len() || after > rewritten.len() {
            continue;
        }
        let was = indentation(&original[line_at(original, before)]);
        let line = line_at(rewritten, after);
        let text = &rewritten[line.clone()];
        let body = text.trim_start();
        let now = text.len() - body.len();
        let is_comment_placeholder = body.starts_with('#') && body[1..].trim().is_empty();
        if now > was && is_comment_placeholder && body.len() >= 4 {
            let placeholder = format!("pass{}", " ".repeat(body.len() - 4));
            rewritten.replace_range(line.start + now..line.end, &placeholder);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn magic_lines(text: &str) -> Vec<&str> {
        find_magics(text)
            .lines
            .iter()
            .map(|range| &text[range.clone()])
            .collect()
    }

    #[test]
    fn line_magics_shell_escapes_and_help_are_found() {
        let text = "%matplotlib inline\n!pip install x \\\n  y\nfiles = !ls\nmodel.fit?\n?tf\nx = a != b\nprint(x % 2)\n";
        assert_eq!(
            magic_lines(text),
            vec![
                "%matplotlib inline",
                "!pip install x \\",
                "  y",
                "files = !ls",
                "model.fit?",
                "?tf"
            ]
        );
    }

    #[test]
    fn automagic_lines_are_found_and_python_with_those_names_is_not() {
        let text = "pip install tf-nightly\ncd data\nls -la\ntime = 3\npip.main(['list'])\nenv if ok else other\nrun = run + 1\nrm -rf logs\n";
        assert_eq!(
            magic_lines(text),
            vec!["pip install tf-nightly", "cd data", "ls -la"]
        );
    }

    #[test]
    fn lines_inside_brackets_and_strings_are_python() {
        let text = "x = (1\n     % 2)\ndoc = \"\"\"\n%not a magic\n\"\"\"\ny = [a\n  != b]\nz = '(' # (\n!ls\n";
        assert_eq!(magic_lines(text), vec!["!ls"]);
    }

    #[test]
    fn cell_magics_in_other_languages_make_the_whole_cell_opaque() {
        let bash = find_magics("%%bash\necho hi\n\nls\n");
        assert!(!bash.is_python);
        assert_eq!(bash.lines.len(), 3);
        let timed = find_magics("%%time\nmodel.fit(x)\n");
        assert!(timed.is_python);
        assert_eq!(timed.lines, vec![0..6]);
    }

    #[test]
    fn an_indented_cell_magic_line_is_no_statement() {
        let text = " %%time\n\nmodel.fit(x)\n";
        let replaced = with_placeholders(text, &find_magics(text));
        assert_eq!(replaced.len(), text.len());
        assert!(replaced.starts_with(" #"), "{replaced:?}");
        assert!(
            rustpython_parser::parse(&replaced, rustpython_parser::Mode::Module, "<cell>").is_ok()
        );
    }

    #[test]
    fn a_shell_line_put_in_a_block_gets_a_statement_placeholder() {
        let written = "import os\n!wget -q http://example.com/data.zip\nprint(1)\n";
        let mut text = with_placeholders(written, &find_magics(written));
        let original = text.clone();
        let line = text.find('#').unwrap();
        text.insert_str(line, "if rank == 0:\n    ");
        let moved = line + "if rank == 0:\n    ".len();
        placeholders_in_blocks(&original, &mut text, [(line, moved)]);
        assert!(text.contains("if rank == 0:\n    pass "), "{text}");
        assert!(rustpython_parser::parse(&text, rustpython_parser::Mode::Module, "<cell>").is_ok());
        // A line the rewrite did not indent keeps its placeholder.
        let mut same = original.clone();
        placeholders_in_blocks(&original, &mut same, [(line, line)]);
        assert_eq!(same, original);
    }

    #[test]
    fn placeholders_keep_lengths_and_parse() {
        let text = "for i in range(2):\n    !echo é\n%ls\nx = 1\n";
        let magics = find_magics(text);
        let replaced = with_placeholders(text, &magics);
        assert_eq!(replaced.len(), text.len());
        assert_eq!(replaced, "for i in range(2):\n    pass    \n#  \nx = 1\n");
        crate::python::parse::parse_module(&replaced, "t.py").expect("placeholders parse");
    }
}
