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

use std::ops::Range;

use rayon::prelude::*;
use rustpython_parser::ast;
use rustpython_parser::lexer::lex_starts_at;
use rustpython_parser::text_size::TextSize;
use rustpython_parser::{Mode, parse_tokens};

use super::edit::{Edit, shifted_offsets};
use super::parse::DepthCheckedTokens;

/// Files under twice this size are parsed whole; larger ones in pieces of
/// about this size.
const PIECE_BYTES: usize = 256 * 1024;

/// How many following pieces a failed piece is joined with before giving up
/// (a real syntax error fails every join, and each join parses again).
const MAX_JOINED_PIECES: usize = 3;

/// A large file parsed piece by piece: its statements, and the ranges of the
/// text that parsed on their own (a rewrite's unchanged pieces need no
/// second parse).
pub struct ParsedInPieces {
    pub body: Vec<ast::Stmt>,
    pub pieces: Vec<Range<usize>>,
}

/// The statements of a large file parsed piece by piece, or `None` when the
/// file is small, does not split, or a piece does not parse on its own.
pub(super) fn parse_in_pieces(text: &str, path: &str) -> Option<ParsedInPieces> {
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
    let mut parsed_alone = Vec::with_capacity(pieces.len());
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
        parsed_alone.push(start..pieces[index].1);
        index += 1;
    }
    Some(ParsedInPieces {
        body,
        pieces: parsed_alone,
    })
}

/// Whether a rewrite of a file parsed in pieces parses, found by parsing only
/// the pieces the edits changed: the rewrite is split where the original's
/// pieces start (shifted by the edits), and a piece equal byte for byte to
/// the original piece that parsed on its own is not parsed again. If every
/// piece parses on its own, the whole text does (the module's comment says
/// why). `None` when that cannot be shown: a changed piece does not parse on
/// its own, or the file was not parsed in pieces.
pub(super) fn rewrite_parses_in_pieces(
    rewritten: &str,
    original: &str,
    original_pieces: &[Range<usize>],
    edits: &[Edit],
    path: &str,
) -> Option<()> {
    if original_pieces.is_empty() {
        return None;
    }
    let original_starts: Vec<usize> = original_pieces.iter().map(|piece| piece.start).collect();
    let shifted_starts = shifted_offsets(original, edits, &original_starts);
    // The rewrite's pieces: each kept start with the original piece it came
    // from; a start inside an edit, or no longer at a line start, is dropped
    // (its piece joins the one before).
    let mut starts: Vec<(usize, usize)> = Vec::new();
    for (index, shifted) in shifted_starts.iter().enumerate() {
        let Some(start) = *shifted else { continue };
        let at_line_start = start == 0 || rewritten.as_bytes().get(start - 1) == Some(&b'\n');
        if at_line_start && starts.last().is_none_or(|&(last, _)| last < start) {
            starts.push((start, index));
        }
    }
    if starts.first().is_none_or(|&(start, _)| start != 0) {
        return None;
    }
    let ends = starts
        .iter()
        .skip(1)
        .map(|&(start, _)| start)
        .chain([rewritten.len()]);
    let changed: Vec<(usize, usize)> = starts
        .iter()
        .zip(ends)
        .filter(|&(&(start, index), end)| {
            original.get(original_pieces[index].clone()) != rewritten.get(start..end)
        })
        .map(|(&(start, _), end)| (start, end))
        .collect();
    changed
        .par_iter()
        .all(|&(start, end)| parse_piece(rewritten, start, end, path).is_some())
        .then_some(())
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
        let pieces = parse_in_pieces(&text, "module.py")
            .expect("splits and parses")
            .body;
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
        let parsed = parse_in_pieces(&text, "module.py").expect("joined pieces parse");
        let real = text.find("def real").unwrap();
        assert_eq!(
            parsed.pieces,
            [0..real, real..text.len()],
            "the pieces of the string joined, then the piece of `real`"
        );
        let pieces = parsed.body;
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

    /// An insertion of `line` at the top level: before the first decorator
    /// line after `at`.
    fn insert_line(text: &str, at: usize, line: &str) -> Edit {
        let start = at + text[at..].find("\n@tf.function").unwrap() + 1;
        Edit::insertion(start, line)
    }

    #[test]
    fn a_rewrite_parses_as_its_whole_text_does_though_only_changed_pieces_are_parsed() {
        let original = large_module();
        let parsed = parse_in_pieces(&original, "module.py").expect("splits and parses");
        assert!(parsed.pieces.len() > 2);
        let middle = original.len() / 2;
        let top = Edit::insertion(0, "import horovod.tensorflow as hvd\nhvd.init()\n");
        let end = Edit::insertion(original.len(), "\nif hvd.rank() == 0:\n    print('done')\n");
        // A piece's first line replaced: the piece starts inside no edit.
        let first_def = original.find("\ndef step_0").unwrap() + 1;
        let renamed = Edit::replacement(first_def..first_def + 3, "async def");
        let rewrites = [
            // Lines a rewrite adds: at the top, inside a piece, at the end,
            // at the start of every piece.
            vec![top.clone()],
            vec![
                top.clone(),
                insert_line(&original, middle, "hvd.shutdown()\n"),
                end,
            ],
            parsed
                .pieces
                .iter()
                .map(|piece| Edit::insertion(piece.start, "# moved\n"))
                .collect(),
            vec![renamed],
            // Broken ones: an open bracket, a bad signature, and a string
            // opened in a changed piece that only closes in an unchanged one
            // (the pieces after it parse on their own; the text does not).
            vec![top.clone(), insert_line(&original, middle, "x = (\n")],
            vec![insert_line(&original, middle, "def broken(:\n    pass\n")],
            vec![top, insert_line(&original, middle, "x = '''\n")],
        ];
        for (index, edits) in rewrites.iter().enumerate() {
            let rewritten = crate::python::edit::apply_edits(&original, edits).unwrap();
            let checked = super::super::parse::check_rewrite_parses(
                &rewritten,
                &original,
                &parsed.pieces,
                edits,
                "module.py",
            );
            let whole = rustpython_parser::parse(&rewritten, Mode::Module, "module.py");
            assert_eq!(
                checked.is_ok(),
                whole.is_ok(),
                "rewrite {index}: {checked:?}"
            );
            assert_eq!(checked.is_ok(), index < 4, "rewrite {index}: {checked:?}");
        }
    }

    #[test]
    fn offsets_shift_past_the_edits_before_them_and_are_lost_inside_one() {
        let text = "0123456789".repeat(4);
        let edits = [
            Edit::insertion(0, "ab"),
            Edit::insertion(0, "ab"),
            Edit::replacement(10..14, "x"),
            Edit::insertion(20, "cdef"),
        ];
        assert_eq!(
            shifted_offsets(&text, &edits, &[0, 5, 10, 12, 14, 20, 30]),
            [
                Some(2),
                Some(7),
                Some(12),
                None,
                Some(13),
                Some(23),
                Some(33)
            ]
        );
    }
}
