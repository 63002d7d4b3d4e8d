//! GitHub Actions workflow commands: each diagnostic becomes an annotation on
//! its line (`::warning file=...,line=...,col=...::message`), file errors
//! become `::error`, and each pending rewrite a `::notice`.

use std::fmt::Write;

use crate::analysis::package::FileProblem;
use crate::diagnostics::Severity;
use crate::outcome::{LocatedDiagnostic, RunOutcome};

/// Escapes a message for a workflow command (GitHub's rules for data).
fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a property value (`file=`, `title=`): also `:` and `,`.
fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

fn command(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "notice",
    }
}

pub fn render(outcome: &RunOutcome) -> String {
    let mut out = String::new();
    for problem in &outcome.problems {
        write_problem(&mut out, problem);
    }
    for module in &outcome.modules {
        let file = escape_property(&module.relative_path);
        for diagnostic in &module.diagnostics {
            write_diagnostic(&mut out, &file, diagnostic);
        }
        if let Some(error) = &module.rewrite_error {
            writeln!(
                out,
                "::error file={file},title=distribute::{}",
                escape_data(error)
            )
            .ok();
        }
        if module.changed() {
            let safety = match module.applicability {
                Some(crate::checker::applicability::Applicability::Unsafe) => "unsafe ",
                _ => "",
            };
            writeln!(
                out,
                "::notice file={file},title=distribute::{}",
                escape_data(&format!("this module trains on one GPU ({}); run `distribute diff` to see its {safety}Horovod rewrite", module.classification.name()))
            )
            .ok();
        }
        if module.held_back.is_some() {
            writeln!(
                out,
                "::notice file={file},title=distribute::{}",
                escape_data(&format!("this module trains on one GPU ({}); its Horovod rewrite is unsafe (see the warnings): run `distribute diff --unsafe-fixes` to see it", module.classification.name()))
            )
            .ok();
        }
    }
    out
}

fn write_problem(out: &mut String, problem: &FileProblem) {
    let (severity, mut message, location) =
        (problem.severity(), problem.message(), problem.location());
    let mut position = location
        .map(|at| format!(",line={},col={}", at.line, at.column))
        .unwrap_or_default();
    if let Some(cell) = problem.cell() {
        // Lines of a notebook's cell are not lines of its file.
        let at = location
            .map(|at| format!(", line {}, column {}", at.line, at.column))
            .unwrap_or_default();
        message = format!("cell {cell}{at}: {message}");
        position.clear();
    }
    writeln!(
        out,
        "::{} file={}{position},title=distribute::{}",
        command(severity),
        escape_property(&problem.relative_path),
        escape_data(&message)
    )
    .ok();
}

fn write_diagnostic(out: &mut String, file: &str, diagnostic: &LocatedDiagnostic) {
    let mut message = diagnostic.message.clone();
    if let Some(suggestion) = &diagnostic.suggestion {
        message.push_str("\nSuggestion: ");
        message.push_str(suggestion);
    }
    let title = format!("{} {}", diagnostic.code, diagnostic.name);
    let (position, title) = match (diagnostic.cell, diagnostic.file_lines) {
        // In a notebook: the annotation goes on the JSON lines of the cell's
        // source, and the title names the cell and the line in it.
        (Some(cell), Some((start, end))) => (
            format!("line={start},endLine={end}"),
            format!(
                "{title} (cell {cell}, line {}, column {})",
                diagnostic.line, diagnostic.column
            ),
        ),
        _ => (
            format!(
                "line={},col={},endLine={},endColumn={}",
                diagnostic.line, diagnostic.column, diagnostic.end_line, diagnostic.end_column
            ),
            title,
        ),
    };
    writeln!(
        out,
        "::{} file={file},{position},title={}::{}",
        command(diagnostic.severity),
        escape_property(&title),
        escape_data(&message)
    )
    .ok();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_and_properties_are_escaped() {
        assert_eq!(escape_data("50%\nnext"), "50%25%0Anext");
        assert_eq!(escape_property("a:b,c"), "a%3Ab%2Cc");
    }
}
