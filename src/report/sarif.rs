//! SARIF 2.1.0 (for GitHub code scanning): one result per diagnostic, with
//! the rule table, and file errors as tool execution notifications.

use serde_json::{Value, json};

use crate::analysis::package::FileProblem;
use crate::diagnostics::{Code, Severity};
use crate::outcome::{LocatedDiagnostic, ModuleOutcome, RunOutcome};

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// `codes` is every code the tool can emit (the rule table lists them all).
pub fn render(outcome: &RunOutcome, codes: &[Code]) -> String {
    let results: Vec<Value> = outcome
        .modules
        .iter()
        .flat_map(|module| {
            module
                .diagnostics
                .iter()
                .map(|diagnostic| result(codes, module, diagnostic))
        })
        .collect();
    let notifications: Vec<Value> = outcome.problems.iter().map(notification).collect();
    let file_errors = outcome
        .problems
        .iter()
        .any(|problem| problem.severity() == Severity::Error);
    let document = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "distribute",
                    "version": env!("CARGO_PKG_VERSION"),
                    "rules": rules(codes),
                }
            },
            "invocations": [{
                "executionSuccessful": !file_errors,
                "toolExecutionNotifications": notifications,
            }],
            "originalUriBaseIds": { "%SRCROOT%": { "description": { "text": "The package root." } } },
            "results": results,
        }]
    });
    let mut text = serde_json::to_string_pretty(&document).expect("the SARIF document serialises");
    text.push('\n');
    text
}

/// The rule table: every diagnostic code, whether this run reported it or not.
fn rules(codes: &[Code]) -> Vec<Value> {
    codes
        .iter()
        .map(|code| {
            let (id, name, severity, summary) =
                (code.id(), code.name(), code.default_severity(), code.summary());
            json!({
                "id": id,
                "name": name,
                "shortDescription": { "text": summary },
                "defaultConfiguration": { "level": level(severity) },
                "help": { "text": format!("{summary} See the Diagnostics table of distribute's README.") },
            })
        })
        .collect()
}

/// One diagnostic as a result, with the suggestion appended to its message.
fn result(codes: &[Code], module: &ModuleOutcome, diagnostic: &LocatedDiagnostic) -> Value {
    let mut text = diagnostic.message.clone();
    if let Some(cell) = diagnostic.cell {
        text = format!(
            "cell {cell}, line {}, column {}: {text}",
            diagnostic.line, diagnostic.column
        );
    }
    if let Some(suggestion) = &diagnostic.suggestion {
        text.push_str(". Suggestion: ");
        text.push_str(suggestion);
    }
    let mut result = json!({
        "ruleId": diagnostic.code,
        "level": level(diagnostic.severity),
        "message": { "text": text },
        "locations": [{
            "physicalLocation": {
                "artifactLocation": { "uri": module.relative_path, "uriBaseId": "%SRCROOT%" },
                "region": {
                    "startLine": diagnostic.line,
                    "startColumn": diagnostic.column,
                    "endLine": diagnostic.end_line,
                    "endColumn": diagnostic.end_column,
                }
            }
        }],
    });
    if let Some(index) = codes.iter().position(|code| code.id() == diagnostic.code) {
        result["ruleIndex"] = json!(index);
    }
    // In a notebook the region is in the file's JSON lines (where code scanning
    // shows it); the cell and the position in it are properties.
    if let Some(cell) = diagnostic.cell {
        let (start, end) = diagnostic.file_lines.unwrap_or((1, 1));
        result["locations"][0]["physicalLocation"]["region"] =
            json!({ "startLine": start, "endLine": end });
        result["properties"] = json!({
            "cell": cell,
            "cellLine": diagnostic.line,
            "cellColumn": diagnostic.column,
            "cellEndLine": diagnostic.end_line,
            "cellEndColumn": diagnostic.end_column,
        });
    }
    result
}

/// A file problem as a tool execution notification.
fn notification(problem: &FileProblem) -> Value {
    let (severity, mut message) = (problem.severity(), problem.message());
    let mut location = json!({
        "physicalLocation": { "artifactLocation": { "uri": problem.relative_path, "uriBaseId": "%SRCROOT%" } }
    });
    if let Some(cell) = problem.cell() {
        // The position is in the cell, not in the file's lines: it goes in the message.
        let at = problem
            .location()
            .map(|at| format!(", line {}, column {}", at.line, at.column))
            .unwrap_or_default();
        message = format!("cell {cell}{at}: {message}");
    } else if let Some(at) = problem.location() {
        location["physicalLocation"]["region"] =
            json!({ "startLine": at.line, "startColumn": at.column });
    }
    json!({ "level": level(severity), "message": { "text": message }, "locations": [location] })
}
