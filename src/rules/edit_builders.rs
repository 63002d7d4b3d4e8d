//! The recurring moves of a rewrite, as free functions from the original text
//! to edits: insert statements after or before one, put statements under a
//! guard, remove a statement, add a keyword argument to a call. Each keeps the
//! file's layout, so the rewrite reads as if a person had typed it.

use std::ops::Range;

use rustpython_parser::ast::{self, Constant, Expr, Stmt};

use super::stylist::Stylist;
use crate::analysis::walk::walk_statement_expressions;
use crate::python::edit::Edit;
use crate::python::parse::span;
use crate::python::source::{indentation_at, line_end_including_newline, line_start};

/// The offset just past the last line of a statement (its newline included).
fn after_last_line(text: &str, range: &Range<usize>) -> usize {
    line_end_including_newline(text, range.end.saturating_sub(1).max(range.start))
}

/// Whether a statement starts its line and no other statement follows on its last line.
pub fn owns_its_lines(text: &str, range: &Range<usize>) -> bool {
    let start = line_start(text, range.start);
    let before = &text[start..range.start];
    let after = text[range.end..after_last_line(text, range)].trim_start();
    before.trim().is_empty() && (after.is_empty() || after.starts_with('#'))
}

/// Statements inserted after the statement at `range`, at its indentation.
pub fn insert_after_statement(
    text: &str,
    stylist: &Stylist,
    range: &Range<usize>,
    lines: &[String],
) -> Edit {
    let indentation = indentation_at(text, range.start);
    let offset = after_last_line(text, range);
    let mut block = stylist.indented_lines(indentation, lines);
    if offset == text.len() && !text.ends_with('\n') {
        block.insert_str(0, stylist.newline);
    }
    Edit::insertion(offset, block)
}

/// Statements inserted before the statement at `range`, at its indentation.
pub fn insert_before_statement(
    text: &str,
    stylist: &Stylist,
    range: &Range<usize>,
    lines: &[String],
) -> Edit {
    let indentation = indentation_at(text, range.start);
    let block = stylist.indented_lines(indentation, lines);
    Edit::insertion(line_start(text, range.start), block)
}

/// Consecutive statements of one block put under a single `if <test>:`;
/// lines inside multi-line strings and blank lines are not re-indented.
pub fn guard_statements(
    text: &str,
    stylist: &Stylist,
    statements: &[&Stmt],
    test: &str,
) -> Vec<Edit> {
    let (Some(first), Some(last)) = (statements.first(), statements.last()) else {
        return Vec::new();
    };
    let range = span(*first).start..span(*last).end;
    let indentation = indentation_at(text, range.start);
    let multiline_strings = multiline_strings(text, statements);
    let unit = stylist.unit_before(&text[line_start(text, range.start)..range.end]);
    let mut edits = vec![Edit::insertion(
        line_start(text, range.start),
        format!("{indentation}if {test}:{}{unit}", stylist.newline),
    )];
    let mut offset = line_end_including_newline(text, range.start);
    while offset < range.end {
        let inside_string = multiline_strings
            .iter()
            .any(|string| string.start < offset && offset < string.end);
        let line_end = line_end_including_newline(text, offset);
        let blank = text[offset..line_end].trim().is_empty();
        if !inside_string && !blank {
            edits.push(Edit::insertion(offset, unit.to_string()));
        }
        offset = line_end;
    }
    edits
}

fn multiline_strings(text: &str, statements: &[&Stmt]) -> Vec<Range<usize>> {
    let mut strings = Vec::new();
    for stmt in statements {
        walk_statement_expressions(stmt, &mut |expr| {
            let is_string = matches!(
                expr,
                Expr::Constant(ast::ExprConstant {
                    value: Constant::Str(_) | Constant::Bytes(_),
                    ..
                }) | Expr::JoinedStr(_)
            );
            if is_string && text[span(expr)].contains('\n') {
                strings.push(span(expr));
            }
        });
    }
    strings
}

/// A whole statement (its lines) deleted; `pass` left in its place when its
/// block would otherwise be empty.
pub fn remove_statement(
    text: &str,
    stylist: &Stylist,
    range: &Range<usize>,
    only_statement_in_block: bool,
) -> Edit {
    let start = line_start(text, range.start);
    let end = after_last_line(text, range);
    if only_statement_in_block {
        let indentation = indentation_at(text, range.start);
        Edit::replacement(start..end, format!("{indentation}pass{}", stylist.newline))
    } else {
        Edit::deletion(start..end)
    }
}

/// What adding a keyword produced: the edits, and whether the call now
/// continues its arguments on lines of their own (a second keyword added to
/// the same call must follow it there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeywordEdits {
    pub edits: Vec<Edit>,
    pub continued: bool,
}

/// `name=value` added to a call after its last argument, following the
/// call's layout: one argument per line, all on one line, or, when the line
/// would grow past the file's length (or an earlier addition already did),
/// on a continuation line aligned under the first argument.
pub fn add_keyword(
    text: &str,
    stylist: &Stylist,
    call: &ast::ExprCall,
    name: &str,
    value: &str,
    already_continued: bool,
) -> KeywordEdits {
    let argument_ranges: Vec<Range<usize>> = call
        .args
        .iter()
        .map(span)
        .chain(call.keywords.iter().map(span))
        .collect();
    let Some(end) = argument_ranges.iter().map(|range| range.end).max() else {
        // `f()`: insert before the closing parenthesis.
        return KeywordEdits {
            edits: vec![Edit::insertion(
                span(call).end - 1,
                format!("{name}={value}"),
            )],
            continued: already_continued,
        };
    };
    let first_argument_start = argument_ranges.iter().map(|range| range.start).min();
    let first_argument_start = first_argument_start.unwrap_or(end);
    let open_line = line_start(text, span(&*call.func).end);
    if line_start(text, first_argument_start) != open_line {
        let indentation = indentation_at(text, first_argument_start);
        let edits = keyword_on_its_own_line(text, stylist, end, indentation, name, value);
        return KeywordEdits {
            edits,
            continued: already_continued,
        };
    }
    let line_length = text[line_start(text, end)..line_end_including_newline(text, end)]
        .trim_end()
        .chars()
        .count();
    let too_long = line_length + name.len() + value.len() + 3 > stylist.line_length;
    // Inside a one-line f-string a line break is a syntax error before
    // Python 3.12: the keyword stays on the line, however long.
    let may_break = !inside_one_line_string(text, span(call).start);
    if (too_long || already_continued) && may_break && line_start(text, end) == open_line {
        // Continue under the first argument, as PEP 8's aligned style does.
        let column = text[open_line..first_argument_start].chars().count();
        let alignment = " ".repeat(column);
        let content = format!(",{}{alignment}{name}={value}", stylist.newline);
        return KeywordEdits {
            edits: vec![Edit::insertion(end, content)],
            continued: true,
        };
    }
    KeywordEdits {
        edits: vec![Edit::insertion(end, format!(", {name}={value}"))],
        continued: already_continued,
    }
}

/// Whether `offset` lies inside a string literal opened earlier on its own
/// line with one quote (an f-string's replacement field): quotes are
/// followed from the line's start, escapes skipped.
fn inside_one_line_string(text: &str, offset: usize) -> bool {
    let mut open: Option<u8> = None;
    let mut bytes = text.as_bytes()[line_start(text, offset)..offset].iter();
    while let Some(&byte) = bytes.next() {
        match open {
            Some(_) if byte == b'\\' => {
                bytes.next();
            }
            Some(quote) if byte == quote => open = None,
            Some(_) => {}
            None if byte == b'#' => return false,
            None if byte == b'"' || byte == b'\'' => open = Some(byte),
            None => {}
        }
    }
    open.is_some()
}

/// A keyword added to a call whose arguments stand one per line.
fn keyword_on_its_own_line(
    text: &str,
    stylist: &Stylist,
    last_argument_end: usize,
    indentation: &str,
    name: &str,
    value: &str,
) -> Vec<Edit> {
    let end = last_argument_end;
    let next_line = line_end_including_newline(text, end);
    let rest_of_line = &text[end..next_line];
    let line_is_finished = |rest: &str| {
        let rest = rest.trim();
        rest.is_empty() || rest.starts_with('#')
    };
    let newline = stylist.newline;
    match rest_of_line.trim_start().strip_prefix(',') {
        // `arg,  # comment`: the new argument gets a line of its own below.
        Some(rest) if line_is_finished(rest) => vec![Edit::insertion(
            next_line,
            format!("{indentation}{name}={value},{newline}"),
        )],
        None if line_is_finished(rest_of_line) && rest_of_line.trim_start().starts_with('#') => {
            vec![
                Edit::insertion(end, ","),
                Edit::insertion(next_line, format!("{indentation}{name}={value}{newline}")),
            ]
        }
        _ => vec![Edit::insertion(
            end,
            format!(",{newline}{indentation}{name}={value}"),
        )],
    }
}

#[cfg(test)]
#[path = "edit_builders_tests.rs"]
mod tests;
