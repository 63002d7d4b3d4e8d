//! Reading and parsing one file, with the errors a user can act on: the file
//! and the line and column where it goes wrong.

use std::path::Path;

use rustpython_parser::ast::{self, Ranged};
use rustpython_parser::lexer::{LexResult, lex};
use rustpython_parser::{Mode, Tok, parse_tokens};

pub use super::pieces::ParsedInPieces;
use super::source::{LineIndex, Location, SourceFile};

/// CPython refuses more than 200 nested brackets ("too many nested
/// parentheses") and more than 100 indentation levels; code past these limits
/// cannot run, so it is reported as a syntax error instead of being walked
/// (walking it recursively could exhaust the stack).
const MAX_BRACKET_DEPTH: usize = 200;
const MAX_INDENT_DEPTH: usize = 100;

/// Why a file could not be analysed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum LoadError {
    #[error("cannot read file: {0}")]
    Unreadable(String),
    #[error("not valid UTF-8: Python source must be UTF-8")]
    InvalidUtf8 { location: Location },
    #[error(
        "encoding {encoding} declared: not supported (only UTF-8 sources are analysed; re-encode the file as UTF-8)"
    )]
    UnsupportedEncoding {
        location: Location,
        encoding: String,
    },
    #[error("syntax error: {message}")]
    Syntax { location: Location, message: String },
}

impl LoadError {
    pub fn location(&self) -> Option<Location> {
        match self {
            LoadError::Unreadable(_) => None,
            LoadError::InvalidUtf8 { location }
            | LoadError::UnsupportedEncoding { location, .. }
            | LoadError::Syntax { location, .. } => Some(*location),
        }
    }
}

/// Decodes the bytes of a file as UTF-8, naming the position of the first bad byte.
pub fn decode(bytes: Vec<u8>) -> Result<String, LoadError> {
    String::from_utf8(bytes).map_err(|error| {
        let valid = error.utf8_error().valid_up_to();
        let bytes = error.into_bytes();
        let prefix = std::str::from_utf8(&bytes[..valid]).unwrap_or_default();
        let line = prefix.matches('\n').count() + 1;
        let column = prefix.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        match declared_encoding(&bytes) {
            Some((encoding, declared_on)) => LoadError::UnsupportedEncoding {
                location: Location {
                    line: declared_on,
                    column: 1,
                },
                encoding,
            },
            None => LoadError::InvalidUtf8 {
                location: Location { line, column },
            },
        }
    })
}

/// A PEP 263 declaration (`# -*- coding: latin-1 -*-`) on the first or
/// second line, other than UTF-8: the encoding and its line.
fn declared_encoding(bytes: &[u8]) -> Option<(String, usize)> {
    for (index, line) in bytes.split(|byte| *byte == b'\n').take(2).enumerate() {
        let line = String::from_utf8_lossy(line);
        let line = line.trim_start();
        if !line.starts_with('#') {
            continue;
        }
        let Some(at) = line.find("coding").map(|at| at + "coding".len()) else {
            continue;
        };
        let rest = line[at..].trim_start_matches([':', '=']).trim_start();
        if !line[at..].starts_with([':', '=']) {
            continue;
        }
        let encoding: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            .collect();
        let is_utf8 = matches!(
            encoding.to_lowercase().replace('_', "-").as_str(),
            "utf-8" | "utf8"
        );
        if !encoding.is_empty() && !is_utf8 {
            return Some((encoding, index + 1));
        }
    }
    None
}

/// Reads a file from disk.
pub fn read_source(path: &Path, relative_path: String) -> Result<SourceFile, LoadError> {
    let bytes = std::fs::read(path).map_err(|error| LoadError::Unreadable(error.to_string()))?;
    let text = decode(bytes)?;
    Ok(SourceFile::new(relative_path, path.to_path_buf(), text))
}

/// The lexer's tokens, checked for nesting deeper than CPython accepts: the
/// stream ends at the first violation (kept in `violation`) and after a
/// lexical error (which the parser then reports, or an earlier syntax error).
/// Streamed into the parser, so that no file's tokens are held all at once.
pub(super) struct DepthCheckedTokens<I> {
    tokens: I,
    bracket_depth: usize,
    indent_depth: usize,
    /// Where nesting went too deep, and the message.
    pub(super) violation: Option<(usize, String)>,
    finished: bool,
}

impl<I> DepthCheckedTokens<I> {
    pub(super) fn new(tokens: I) -> Self {
        DepthCheckedTokens {
            tokens,
            bracket_depth: 0,
            indent_depth: 0,
            violation: None,
            finished: false,
        }
    }
}

impl<I: Iterator<Item = LexResult>> Iterator for DepthCheckedTokens<I> {
    type Item = LexResult;

    fn next(&mut self) -> Option<LexResult> {
        if self.finished {
            return None;
        }
        let token = self.tokens.next()?;
        let Ok((tok, range)) = &token else {
            self.finished = true;
            return Some(token);
        };
        match tok {
            Tok::Lpar | Tok::Lsqb | Tok::Lbrace => self.bracket_depth += 1,
            Tok::Rpar | Tok::Rsqb | Tok::Rbrace => {
                self.bracket_depth = self.bracket_depth.saturating_sub(1)
            }
            Tok::Indent => self.indent_depth += 1,
            Tok::Dedent => self.indent_depth = self.indent_depth.saturating_sub(1),
            _ => {}
        }
        let message = if self.bracket_depth > MAX_BRACKET_DEPTH {
            format!(
                "too many nested parentheses (more than {MAX_BRACKET_DEPTH}, as CPython refuses)"
            )
        } else if self.indent_depth > MAX_INDENT_DEPTH {
            format!(
                "too many levels of indentation (more than {MAX_INDENT_DEPTH}, as CPython refuses)"
            )
        } else {
            return Some(token);
        };
        self.violation = Some((range.start().to_usize(), message));
        self.finished = true;
        None
    }
}

/// Parses Python source into statements. A large file is parsed in pieces in
/// parallel when it splits cleanly (`super::pieces`); otherwise, and to report
/// an error, as a whole.
pub fn parse_module(text: &str, path: &str) -> Result<Vec<ast::Stmt>, LoadError> {
    parse_module_in_pieces(text, path).map(|parsed| parsed.body)
}

/// `parse_module`, with the ranges of the text that parsed on their own
/// (none when the file was parsed whole).
pub fn parse_module_in_pieces(text: &str, path: &str) -> Result<ParsedInPieces, LoadError> {
    if let Some(parsed) = super::pieces::parse_in_pieces(text, path) {
        return Ok(parsed);
    }
    parse_whole_module(text, path).map(|body| ParsedInPieces {
        body,
        pieces: Vec::new(),
    })
}

/// Whether a rewrite of `original` made by `edits` parses: for a file parsed
/// in pieces, only the pieces the edits changed are parsed again
/// (`super::pieces`); otherwise, and to word an error, the whole text.
pub fn check_rewrite_parses(
    rewritten: &str,
    original: &str,
    original_pieces: &[std::ops::Range<usize>],
    edits: &[super::edit::Edit],
    path: &str,
) -> Result<(), LoadError> {
    let reused =
        super::pieces::rewrite_parses_in_pieces(rewritten, original, original_pieces, edits, path);
    if reused.is_some() {
        return Ok(());
    }
    parse_module(rewritten, path).map(drop)
}

fn parse_whole_module(text: &str, path: &str) -> Result<Vec<ast::Stmt>, LoadError> {
    // Lines are indexed only to place an error: most files have none.
    let syntax_error = |offset: usize, message: String| LoadError::Syntax {
        location: LineIndex::new(text).location(text, offset),
        message,
    };
    let mut tokens = DepthCheckedTokens::new(lex(text, Mode::Module));
    let parsed = parse_tokens(&mut tokens, Mode::Module, path);
    if parsed.is_err() {
        // Too deep nesting anywhere before a lexical error is reported
        // first, as when every token was checked before parsing.
        tokens.by_ref().for_each(drop);
    }
    if let Some((offset, message)) = tokens.violation {
        return Err(syntax_error(offset, message));
    }
    match parsed {
        Ok(ast::Mod::Module(module)) => Ok(module.body),
        Ok(_) => Ok(Vec::new()),
        Err(error) => {
            let offset = error.offset.to_usize();
            let location = LineIndex::new(text).location(text, offset.min(text.len()));
            let line = text
                .lines()
                .nth(location.line.saturating_sub(1))
                .unwrap_or("");
            let message = if reuses_quotes_inside_f_string(line) {
                format!(
                    "this file uses syntax newer than the parser supports: an f-string that reuses its own quotes inside `{{...}}` (Python 3.12, PEP 701) on line {}; it is valid Python 3.12, not a mistake in your code",
                    location.line
                )
            } else if is_python_2_print(line) {
                format!(
                    "this is Python 2 syntax, a `print` statement without parentheses; the tool reads Python 3 only ({})",
                    error.error
                )
            } else {
                error.error.to_string()
            };
            Err(syntax_error(offset, message))
        }
    }
}

/// `print "x"` or `print x, y`: Python 2's print statement.
fn is_python_2_print(line: &str) -> bool {
    let Some(rest) = line.trim_start().strip_prefix("print") else {
        return false;
    };
    rest.starts_with([' ', '\t'])
        && !rest
            .trim_start()
            .starts_with(['(', '=', '.', '[', ',', ')'])
        && !rest.trim_start().is_empty()
}

/// Whether a line holds an f-string whose replacement field uses the
/// string's own quote (`f"{d["k"]}"`), which Python accepts only from 3.12.
fn reuses_quotes_inside_f_string(line: &str) -> bool {
    let bytes = line.as_bytes();
    for (start, window) in bytes.windows(2).enumerate() {
        let is_prefix = matches!(window[0], b'f' | b'F')
            && matches!(window[1], b'"' | b'\'')
            && (start == 0
                || !bytes[start - 1].is_ascii_alphanumeric()
                || matches!(bytes[start - 1], b'r' | b'R'));
        if !is_prefix || bytes.get(start + 2) == Some(&window[1]) {
            continue;
        }
        let quote = window[1];
        let mut depth = 0usize;
        for &byte in &bytes[start + 2..] {
            match byte {
                b'{' => depth += 1,
                b'}' => depth = depth.saturating_sub(1),
                _ if byte == quote && depth > 0 => return true,
                _ if byte == quote => break,
                _ => {}
            }
        }
    }
    false
}

/// Byte range of any node.
pub fn span(node: &impl Ranged) -> std::ops::Range<usize> {
    node.start().to_usize()..node.end().to_usize()
}

/// A statement's range from its first decorator, if it has any: what is
/// inserted before a decorated `def` or `class` must go above the decorators.
pub fn span_with_decorators(stmt: &ast::Stmt) -> std::ops::Range<usize> {
    let decorators = match stmt {
        ast::Stmt::FunctionDef(function) => &function.decorator_list,
        ast::Stmt::AsyncFunctionDef(function) => &function.decorator_list,
        ast::Stmt::ClassDef(class) => &class.decorator_list,
        _ => return span(stmt),
    };
    let start = decorators
        .iter()
        .map(|decorator| span(decorator).start)
        .min()
        .map_or(span(stmt).start, |start| start.min(span(stmt).start));
    start..span(stmt).end
}

#[cfg(test)]
mod newer_syntax_tests {
    use super::*;

    #[test]
    fn a_declared_encoding_is_named_as_not_supported() {
        let bytes = b"# -*- coding: latin-1 -*-\nx = '\xe9'\n".to_vec();
        let error = decode(bytes).unwrap_err();
        assert_eq!(
            error.to_string(),
            "encoding latin-1 declared: not supported (only UTF-8 sources are analysed; re-encode the file as UTF-8)"
        );
        assert_eq!(error.location().map(|at| at.line), Some(1));
        let undeclared = decode(b"x = '\xe9'\n".to_vec()).unwrap_err();
        assert!(undeclared.to_string().starts_with("not valid UTF-8"));
        assert_eq!(
            decode(b"# coding: utf-8\nx = 1\n".to_vec()).unwrap(),
            "# coding: utf-8\nx = 1\n"
        );
    }

    #[test]
    fn a_decorated_definition_starts_at_its_first_decorator() {
        let text = "x = 1\n@tf.function\n@other\ndef step():\n    pass\n";
        let body = parse_module(text, "d.py").unwrap();
        // The decorator expression starts after its `@`, on the decorator's line.
        assert_eq!(
            span_with_decorators(&body[1]).start,
            text.find("tf.function").unwrap()
        );
        assert_eq!(span_with_decorators(&body[0]), span(&body[0]));
    }

    #[test]
    fn python_2_print_statements_are_named() {
        let error = parse_module("x = 1\nprint \"Epoch:\", x\n", "old.py").unwrap_err();
        let error = error.to_string();
        assert!(error.contains("Python 2 syntax"), "{error}");
        let plain = parse_module("print = 3\nprint (x\n", "p.py")
            .unwrap_err()
            .to_string();
        assert!(!plain.contains("Python 2"), "{plain}");
    }

    #[test]
    fn pep_701_f_strings_are_named_as_newer_syntax() {
        let text = "d = {\"k\": 1}\nprint(f\"{d[\"k\"]}\")\n";
        let error = parse_module(text, "new.py").unwrap_err().to_string();
        assert!(error.contains("newer than the parser supports"), "{error}");
        assert!(
            error.contains("PEP 701") && error.contains("line 2"),
            "{error}"
        );
        let plain = parse_module("x = (\n", "old.py").unwrap_err().to_string();
        assert!(!plain.contains("PEP 701"), "{plain}");
        assert!(!reuses_quotes_inside_f_string("print(f\"{d['k']}\")"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_name_line_and_column() {
        let error = parse_module("x = 1\ny = (2 +\n", "t.py").unwrap_err();
        assert!(matches!(error, LoadError::Syntax { location, .. } if location.line >= 2));
    }

    #[test]
    fn invalid_utf8_names_the_position() {
        let error = decode(b"a = 1\n# \xff\n".to_vec()).unwrap_err();
        assert_eq!(
            error,
            LoadError::InvalidUtf8 {
                location: Location { line: 2, column: 3 }
            }
        );
    }

    #[test]
    fn deep_nesting_is_a_syntax_error_not_a_crash() {
        let source = format!("x = {}1{}\n", "(".repeat(5000), ")".repeat(5000));
        let error = parse_module(&source, "deep.py").unwrap_err();
        assert!(error.to_string().contains("too many nested parentheses"));
    }
}
