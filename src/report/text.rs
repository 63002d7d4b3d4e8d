//! Human-readable output, like a linter's: `path:line:col: CODE message`, the
//! suggestion under it, then the diff.

use std::fmt::Write;

use super::unified_diff;
use crate::engine::RunOutcome;

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
        let (severity, message, location) =
            (problem.severity(), problem.message(), problem.location());
        match location {
            Some(at) => writeln!(
                out,
                "{}:{}:{}: {}: {message}",
                problem.relative_path,
                at.line,
                at.column,
                severity.name()
            ),
            None => writeln!(
                out,
                "{}: {}: {message}",
                problem.relative_path,
                severity.name()
            ),
        }
        .ok();
    }
    for module in &outcome.modules {
        for diagnostic in &module.diagnostics {
            writeln!(
                out,
                "{}:{}:{}: {} [{}] {}",
                module.relative_path,
                diagnostic.line,
                diagnostic.column,
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
        if let Some(rewritten) = &module.rewritten {
            match detail {
                Detail::Check => writeln!(
                    out,
                    "{}: would be rewritten for Horovod ({})",
                    module.relative_path,
                    module.classification.name()
                ),
                Detail::Diff => write!(
                    out,
                    "{}",
                    unified_diff(&module.relative_path, &module.original, rewritten)
                ),
                Detail::Fix => writeln!(
                    out,
                    "{}: rewritten for Horovod ({})",
                    module.relative_path,
                    module.classification.name()
                ),
            }
            .ok();
        }
    }
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
    out
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}
