//! Human-readable output, like a linter's: `path:line:col: CODE message`, the
//! suggestion under it, then the diff.

use std::fmt::Write;

use super::position;
use crate::analysis::package::FileProblem;
use crate::outcome::{ModuleOutcome, RunOutcome};

/// What to show besides the diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Diagnostics and a line per file that would change.
    Check,
    /// Diagnostics and the unified diff of each rewrite.
    Diff,
    /// Diagnostics and a line per file written.
    Fix,
}

pub fn render(outcome: &RunOutcome, detail: Detail) -> String {
    let mut out = String::new();
    for problem in &outcome.problems {
        write_file_problem(&mut out, problem);
    }
    for module in &outcome.modules {
        write_module(&mut out, module, detail);
    }
    write_totals(&mut out, outcome, detail);
    out
}

fn write_file_problem(out: &mut String, problem: &FileProblem) {
    let (severity, message, location) = (problem.severity(), problem.message(), problem.location());
    match location {
        Some(at) => writeln!(
            out,
            "{}: {}: {message}",
            position(&problem.relative_path, problem.cell(), at.line, at.column),
            severity.name()
        ),
        None => match problem.cell() {
            Some(cell) => writeln!(
                out,
                "{}:cell {cell}: {}: {message}",
                problem.relative_path,
                severity.name()
            ),
            None => writeln!(
                out,
                "{}: {}: {message}",
                problem.relative_path,
                severity.name()
            ),
        },
    }
    .ok();
}

/// A module's diagnostics with their suggestions, then its rewrite as `detail` says.
fn write_module(out: &mut String, module: &ModuleOutcome, detail: Detail) {
    for diagnostic in &module.diagnostics {
        writeln!(
            out,
            "{}: {} [{}] {}",
            position(
                &module.relative_path,
                diagnostic.cell,
                diagnostic.line,
                diagnostic.column
            ),
            diagnostic.code,
            diagnostic.severity.name(),
            diagnostic.message
        )
        .ok();
        if let Some(suggestion) = &diagnostic.suggestion {
            writeln!(out, "  suggestion: {suggestion}").ok();
        }
    }
    if let Some(error) = &module.rewrite_error {
        writeln!(out, "{}: error: {error}", module.relative_path).ok();
    }
    if module.changed() {
        write_rewrite(out, module, detail);
    } else if module.held_back.is_some() {
        writeln!(
            out,
            "{}: has an unsafe rewrite for Horovod ({}), not applied: the warnings above say what could not be shown (`--unsafe-fixes` applies it)",
            module.relative_path,
            module.classification.name()
        )
        .ok();
    }
}

/// ` (unsafe)` for an unsafe rewrite that is applied.
fn safety(module: &ModuleOutcome) -> &'static str {
    match module.applicability {
        Some(crate::checker::applicability::Applicability::Unsafe) => ", unsafe",
        _ => "",
    }
}

fn write_rewrite(out: &mut String, module: &ModuleOutcome, detail: Detail) {
    match detail {
        Detail::Check => writeln!(
            out,
            "{}: would be rewritten for Horovod ({}{})",
            module.relative_path,
            module.classification.name(),
            safety(module)
        ),
        Detail::Diff => write!(out, "{}", module.diff()),
        Detail::Fix => writeln!(
            out,
            "{}: rewritten for Horovod ({}{})",
            module.relative_path,
            module.classification.name(),
            safety(module)
        ),
    }
    .ok();
}

/// The closing line: modules found and rewritten, diagnostics, file errors.
fn write_totals(out: &mut String, outcome: &RunOutcome, detail: Detail) {
    let changed = outcome
        .modules
        .iter()
        .filter(|module| module.changed())
        .count();
    let diagnostics: usize = outcome
        .modules
        .iter()
        .map(|module| module.diagnostics.len())
        .sum();
    let verb = if detail == Detail::Fix {
        "rewritten"
    } else {
        "to rewrite"
    };
    writeln!(
        out,
        "{} training module{} found, {changed} {verb}, {diagnostics} diagnostic{}, {} file error{}",
        outcome.modules.len(),
        plural(outcome.modules.len()),
        plural(diagnostics),
        outcome.problems.len(),
        plural(outcome.problems.len())
    )
    .ok();
    let held_back = outcome.held_back();
    if held_back > 0 {
        writeln!(
            out,
            "{held_back} unsafe rewrite{} hidden: {} can be enabled with `--unsafe-fixes` (or `unsafe-fixes: true`)",
            plural(held_back),
            if held_back == 1 { "it" } else { "they" }
        )
        .ok();
    }
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}
