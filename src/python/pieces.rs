//! Parsing one large file in pieces, in parallel: a generated or vendored
//! module of megabytes would otherwise hold one core while the others idle.
//!
//! A piece starts at a top-level `def`, `class` or decorator line. That line
//! only begins a new statement when the text before it ends outside any
//! string, bracket or continuation; this is checked, not assumed: if every
//! piece parses on its own, each ended in that neutral state (an unterminated
//! string or bracket is a syntax error), so by induction every piece starts
//! where the whole-file lexer would also be at a fresh top-level statement,
//! and the statements are those of the whole file. A piece that fails (it may
//! end inside a docstring that holds a `def` line) is parsed again joined with
//! the next ones; only the pieces after a piece that parsed are trusted. When
//! that does not help, the caller parses the file as a whole, which also
//! words its error.

use rayon::prelude::*;
use rustpython_parser::ast;
use rustpython_parser::lexer::lex_starts_at;
use rustpython_parser::text_size::TextSize;
use rustpython_parser::{Mode, parse_tokens};

use super::parse::DepthCheckedTokens;

/// Files under twice this size are parsed whole; larger ones in pieces of
/// about this size.
const PIECE_BYTES: usize = 256 * 1024;

/// How many following pieces a failed piece is joined with before giving up
/// (a real syntax error fails every join, and each join parses again).
const MAX_JOINED_PIECES: usize = 3;

/// The statements of a large file parsed piece by piece, or `None` when the
/// file is small, does not split, or a piece does not parse on its own.
pub(super) fn parse_in_pieces(text: &str, path: &str) -> Option<Vec<ast::Stmt>> {
    if text.len() < 2 * PIECE_BYTES {
        return None;
    }
    let starts = piece_starts(text);
    if starts.len() < 2 {
        return None;
    }
    let ends = starts.iter().skip(1).copied().chain([text.len()]);
    let pieces: Vec<(usize, usize)> = starts.iter().copied().zip(ends).collect();
    let mut parsed: Vec<Option<Vec<ast::Stmt>>> = pieces
        .par_iter()
        .map(|&(start, end)| parse_piece(text, start, end, path))
        .collect();
    let mut body = Vec::new();
    let mut index = 0;
    while index < pieces.len() {
        let start = pieces[index].0;
        let mut statements = parsed[index].take();
        let mut joined = 0;
        while statements.is_none() {
            index += 1;
            joined += 1;
            if joined > MAX_JOINED_PIECES {
                return None;
            }
            let end = pieces.get(index)?.1;
            statements = parse_piece(text, start, end, path);
        }
        body.extend(statements?);
        index += 1;
    }
    Some(body)
}

/// One piece's statements, with offsets into the whole text.
fn parse_piece(text: &str, start: usize, end: usize, path: &str) -> Option<Vec<ast::Stmt>> {
    let offset = TextSize::try_from(start).ok()?;
    let mut tokens =
        DepthCheckedTokens::new(lex_starts_at(&text[start..end], Mode::Module, offset));
    let parsed = parse_tokens(&mut tokens, Mode::Module, path).ok()?;
    if tokens.violation.is_some() {
        return None;
    }
    match parsed {
        ast::Mod::Module(module) => Some(module.body),
        _ => None,
    }
}

/// Byte offsets where pieces start: 0, then, once a piece has reached its
/// size, the next line that opens a top-level definition (a decorator, or a
/// `def` or `class` no decorator line precedes), unless the line before it
/// continues with a backslash.
fn piece_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    let mut previous_line = "";
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let due = line_start >= starts[starts.len() - 1] + PIECE_BYTES;
        if due && opens_definition(line, previous_line) {
            starts.push(line_start);
        }
        previous_line = line;
        line_start += line.len();
    }
    starts
}

fn opens_definition(line: &str, previous_line: &str) -> bool {
    let previous = previous_line.trim_end_matches(['\n', '\r']);
    if previous.ends_with('\\') {
        return false;
    }
    line.starts_with('@')
        || (["def ", "async def ", "class "]
            .iter()
            .any(|keyword| line.starts_with(keyword))
            && !previous.starts_with('@'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustpython_parser::ast::Ranged;

    /// A module of many top-level definitions, some with decorators and
    /// docstrings holding `def` lines at column 0, well over two pieces.
    fn large_module() -> String {
        let mut text = String::from("import tensorflow as tf\n");
        let mut index = 0;
        while text.len() < 5 * PIECE_BYTES {
            text.push_str(&format!(
                "@tf.function\ndef step_{index}(x):\n    return x * {index}\n\nclass Layer{index}:\n    '''Docs.\ndef not_a_function():\n    '''\n    size = ({index},\n        2)\n\n"
            ));
            index += 1;
        }
        text
    }

    fn whole(text: &str) -> Vec<ast::Stmt> {
        match rustpython_parser::parse(text, Mode::Module, "module.py").unwrap() {
            ast::Mod::Module(module) => module.body,
            _ => unreachable!(),
        }
    }

    #[test]
    fn a_large_module_parses_in_pieces_to_the_same_statements() {
        let text = large_module();
        let pieces = parse_in_pieces(&text, "module.py").expect("splits and parses");
        assert!(piece_starts(&text).len() > 2);
        let expected = whole(&text);
        assert_eq!(pieces.len(), expected.len());
        for (piece, whole) in pieces.iter().zip(&expected) {
            assert_eq!(piece.range(), whole.range());
        }
        assert_eq!(format!("{pieces:?}"), format!("{expected:?}"));
    }

    /// A triple-quoted string of about `size` bytes whose inside looks like
    /// definitions at column 0, then a real function.
    fn module_with_long_string(size: usize) -> String {
        let mut text = String::from("DOC = '''\n");
        while text.len() < size {
            text.push_str("def looks_like_code():\n    pass\n");
        }
        text.push_str("'''\ndef real():\n    pass\n");
        text
    }

    #[test]
    fn a_piece_ending_inside_a_string_is_joined_with_the_next() {
        let text = module_with_long_string(3 * PIECE_BYTES);
        assert!(
            piece_starts(&text).len() > 2,
            "boundaries fall inside the string"
        );
        let pieces = parse_in_pieces(&text, "module.py").expect("joined pieces parse");
        assert_eq!(format!("{pieces:?}"), format!("{:?}", whole(&text)));
        assert_eq!(pieces.len(), 2, "the assignment of one string, and `real`");
    }

    #[test]
    fn a_string_longer_than_the_joins_falls_back_to_the_whole_file() {
        let text = module_with_long_string((MAX_JOINED_PIECES + 3) * PIECE_BYTES);
        assert!(parse_in_pieces(&text, "module.py").is_none());
        let body = super::super::parse::parse_module(&text, "module.py").unwrap();
        assert_eq!(body.len(), 2);
    }

    #[test]
    fn a_split_after_a_continuation_line_or_decorator_is_not_made() {
        assert!(!opens_definition("def f():\n", "x = 1 + \\\n"));
        assert!(!opens_definition("def f():\n", "@decorator\n"));
        assert!(opens_definition("@decorator\n", "\n"));
        assert!(opens_definition("class A:\n", "pass\n"));
        assert!(!opens_definition("    def method(self):\n", "\n"));
    }
}
