//! The file's own style, read once, so generated code looks like the code
//! around it: the indentation step, the quote character, the newline and the
//! line length past which added arguments go on lines of their own.

use rustpython_parser::ast::{self, Constant, Expr, Stmt};

use crate::analysis::walk::{for_each_statement, nested_bodies, walk_statement_expressions};
use crate::python::parse::span;
use crate::python::source::{indentation_at, line_start, newline_style};

/// How one file writes Python.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stylist {
    /// What one level of indentation adds (`"    "`, `"  "`, `"\t"`).
    pub indent_unit: String,
    /// The quote character most string literals use.
    pub quote: char,
    pub newline: &'static str,
    /// Lines longer than this get added keyword arguments on a line of their own.
    pub line_length: usize,
}

/// black's default: the most common limit in the code this tool meets.
const DEFAULT_LINE_LENGTH: usize = 88;

impl Stylist {
    pub fn detect(text: &str, body: &[Stmt]) -> Stylist {
        Stylist {
            indent_unit: indent_unit(text, body),
            quote: quote_style(body, text),
            newline: newline_style(text),
            line_length: DEFAULT_LINE_LENGTH,
        }
    }

    /// A string literal in the file's quote style.
    pub fn string(&self, value: &str) -> String {
        format!("{0}{value}{0}", self.quote)
    }

    /// The step to put in front of each line of `text` to indent it once
    /// more: a tab where its lines are indented with tabs, since spaces
    /// before a tab do not parse.
    pub fn unit_before(&self, text: &str) -> &str {
        let tab_indented = text
            .lines()
            .any(|line| line[..line.len() - line.trim_start().len()].contains('\t'));
        match tab_indented {
            true => "\t",
            false => &self.indent_unit,
        }
    }

    /// `lines` (each may hold several physical lines) at `indentation`, each
    /// ended by the file's newline; empty lines stay empty.
    pub fn indented_lines(&self, indentation: &str, lines: &[String]) -> String {
        let mut block = String::new();
        for line in lines {
            for physical in line.split('\n') {
                if !physical.is_empty() {
                    block.push_str(indentation);
                    block.push_str(physical);
                }
                block.push_str(self.newline);
            }
        }
        block
    }
}

/// The indentation one level adds in this file: the step from the first
/// block opener to its body, read from the statements (a line ending in a
/// colon may be a `lambda x:` continued on the next line); 4 spaces when the
/// file has no block.
fn indent_unit(text: &str, body: &[Stmt]) -> String {
    let mut unit = None;
    for_each_statement(body, true, &mut |statement| {
        if unit.is_some() {
            return;
        }
        let Some(first) = nested_bodies(statement)
            .into_iter()
            .find_map(|block| block.first())
        else {
            return;
        };
        let opener = indentation_at(text, span(statement).start);
        let inner = indentation_at(text, span(first).start);
        if line_start(text, span(first).start) != line_start(text, span(statement).start)
            && inner.len() > opener.len()
            && let Some(step) = inner.strip_prefix(opener)
        {
            unit = Some(step.to_string());
        }
    });
    unit.unwrap_or_else(|| "    ".to_string())
}

/// The quote character most string literals of the file use.
fn quote_style(body: &[Stmt], text: &str) -> char {
    let (mut single, mut double) = (0usize, 0usize);
    for_each_statement(body, true, &mut |stmt| {
        walk_statement_expressions(stmt, &mut |expr| {
            if let Expr::Constant(ast::ExprConstant {
                value: Constant::Str(_),
                ..
            }) = expr
            {
                let literal = &text[span(expr)];
                match literal
                    .trim_start_matches(|c: char| c.is_ascii_alphabetic())
                    .chars()
                    .next()
                {
                    Some('\'') => single += 1,
                    Some('"') => double += 1,
                    _ => {}
                }
            }
        });
    });
    if single > double { '\'' } else { '"' }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::python::parse::parse_module;

    fn stylist_of(text: &str) -> Stylist {
        Stylist::detect(text, &parse_module(text, "t.py").unwrap())
    }

    #[test]
    fn reads_the_style_of_the_file() {
        let cases: &[(&str, &str, char, &str)] = &[
            ("x = 1\n", "    ", '"', "\n"),
            ("if x:\n  y = 'a'\n", "  ", '\'', "\n"),
            ("def f():\n\treturn \"a\"\n", "\t", '"', "\n"),
            (
                "if x:\r\n    y = 'a' + 'b' + \"c\"\r\n",
                "    ",
                '\'',
                "\r\n",
            ),
            // A colon inside a string is no block opener.
            ("'a:'\nif x:\n   pass\n", "   ", '\'', "\n"),
            // Nor is a lambda's, whose body continues on the next line.
            (
                "d = ds.map(lambda x:\n                  x + 1)\nfor y in d:\n    pass\n",
                "    ",
                '"',
                "\n",
            ),
        ];
        for (text, indent, quote, newline) in cases {
            let stylist = stylist_of(text);
            assert_eq!(stylist.indent_unit, *indent, "{text:?}");
            assert_eq!(stylist.quote, *quote, "{text:?}");
            assert_eq!(stylist.newline, *newline, "{text:?}");
        }
    }

    #[test]
    fn lines_indented_with_tabs_are_indented_once_more_with_a_tab() {
        let stylist = stylist_of("def f():\n    if x:\n        pass\n");
        assert_eq!(stylist.unit_before("print(1)\n"), "    ");
        assert_eq!(stylist.unit_before("\tprint(1)\n"), "\t");
        assert_eq!(stylist.unit_before("for x in y:\n\t\tprint(x)\n"), "\t");
    }

    #[test]
    fn indented_lines_keep_blank_lines_empty() {
        let stylist = stylist_of("x = 1\n");
        let lines = ["a".to_string(), String::new(), "b\nc".to_string()];
        assert_eq!(stylist.indented_lines("  ", &lines), "  a\n\n  b\n  c\n");
        assert_eq!(stylist.string("GPU"), "\"GPU\"");
    }
}
