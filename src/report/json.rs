//! Machine-readable output; the schema is documented in `docs/json.md`.

use rayon::prelude::*;
use serde::Serialize;

use crate::outcome::{LocatedDiagnostic, RunOutcome};

/// Version of the JSON shape; bumped on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
struct Report<'a> {
    version: u32,
    modules: Vec<ModuleReport<'a>>,
    errors: Vec<FileError>,
}

#[derive(Serialize)]
struct ModuleReport<'a> {
    path: &'a str,
    pattern: &'static str,
    changed: bool,
    /// `safe`, `unsafe`, or `null` (no rewrite, or one the checker withdrew).
    applicability: Option<&'static str>,
    /// An unsafe rewrite this run did not apply (`--unsafe-fixes` applies it).
    held_back: bool,
    diagnostics: &'a [LocatedDiagnostic],
    diff: String,
    rewrite_error: Option<&'a str>,
}

#[derive(Serialize)]
struct FileError {
    path: String,
    severity: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cell: Option<usize>,
    line: Option<usize>,
    column: Option<usize>,
    message: String,
}

pub fn render(outcome: &RunOutcome) -> String {
    let report = Report {
        version: SCHEMA_VERSION,
        // Diffs in parallel: a report of a whole repository holds hundreds.
        modules: outcome
            .modules
            .par_iter()
            .map(|module| ModuleReport {
                path: &module.relative_path,
                pattern: module.classification.name(),
                changed: module.changed(),
                applicability: module
                    .applicability
                    .map(|applicability| applicability.name()),
                held_back: module.held_back.is_some(),
                diagnostics: &module.diagnostics,
                diff: module.diff(),
                rewrite_error: module.rewrite_error.as_deref(),
            })
            .collect(),
        errors: outcome
            .problems
            .iter()
            .map(|problem| {
                let (severity, message, location) =
                    (problem.severity(), problem.message(), problem.location());
                FileError {
                    path: problem.relative_path.clone(),
                    severity: severity.name(),
                    cell: problem.cell(),
                    line: location.map(|at| at.line),
                    column: location.map(|at| at.column),
                    message,
                }
            })
            .collect(),
    };
    let mut text = serde_json::to_string_pretty(&report).expect("the report serialises");
    text.push('\n');
    text
}
