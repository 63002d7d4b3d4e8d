//! Markdown pieces for pull-request comments and job summaries: the
//! diagnostics as a table, file errors as a list, a diff as a collapsible
//! block. GitHub renders these; nothing here posts them.

use std::fmt::Write;

use crate::outcome::RunOutcome;

/// A table of every diagnostic (`file:line`, code, message, suggestion), at
/// most `max_rows` rows and a line saying how many were left out.
pub fn diagnostics_table(outcome: &RunOutcome, max_rows: usize) -> String {
    let rows: Vec<String> = outcome
        .modules
        .iter()
        .flat_map(|module| {
            module.diagnostics.iter().map(move |diagnostic| {
                let line = match diagnostic.cell {
                    Some(cell_number) => format!("cell {cell_number}:{}", diagnostic.line),
                    None => diagnostic.line.to_string(),
                };
                format!(
                    "| {} | `{}:{line}` | {} `{}` | {} | {} |",
                    diagnostic.severity.name(),
                    module.relative_path,
                    diagnostic.code,
                    diagnostic.name,
                    cell(&diagnostic.message),
                    diagnostic
                        .suggestion
                        .as_deref()
                        .map(cell)
                        .unwrap_or_default()
                )
            })
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out =
        String::from("| severity | where | code | why | what to do |\n|---|---|---|---|---|\n");
    for row in rows.iter().take(max_rows) {
        out.push_str(row);
        out.push('\n');
    }
    if rows.len() > max_rows {
        writeln!(
            out,
            "\n… and {} more (all of them are in the job's annotations).",
            rows.len() - max_rows
        )
        .ok();
    }
    out
}

/// Files that could not be analysed, one bullet each.
pub fn file_problems(outcome: &RunOutcome) -> String {
    let mut out = String::new();
    for problem in &outcome.problems {
        let cell_label = problem
            .cell()
            .map(|number| format!(":cell {number}"))
            .unwrap_or_default();
        let location = problem
            .location()
            .map(|at| format!("{cell_label}:{}:{}", at.line, at.column))
            .unwrap_or(cell_label);
        writeln!(
            out,
            "- {} `{}{location}`: {}",
            problem.severity().name(),
            problem.relative_path,
            cell(&problem.message())
        )
        .ok();
    }
    out
}

/// A unified diff in a collapsible block.
pub fn diff_block(title: &str, diff: &str, open: bool) -> String {
    let fence = fence_for(diff);
    format!(
        "<details{}><summary>{}</summary>\n\n{fence}diff\n{}{}{fence}\n\n</details>\n",
        if open { " open" } else { "" },
        html_escape(title),
        diff,
        if diff.ends_with('\n') { "" } else { "\n" },
    )
}

/// A backtick fence longer than any run of backticks in `text`.
fn fence_for(text: &str) -> String {
    let longest = text
        .split(|character| character != '`')
        .map(str::len)
        .max()
        .unwrap_or(0);
    "`".repeat((longest + 1).max(3))
}

/// Text that stays inside one table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\r', '\n'], " ")
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_keep_to_one_cell() {
        assert_eq!(cell("a | b\nc"), "a \\| b c");
    }

    #[test]
    fn diff_fence_outlasts_backticks_in_the_diff() {
        let block = diff_block("train.py", "+s = '```'\n", false);
        assert!(block.contains("````diff\n+s = '```'\n````"));
        assert!(block.starts_with("<details><summary>train.py</summary>"));
    }
}
