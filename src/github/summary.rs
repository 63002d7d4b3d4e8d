//! The one summary comment per pull request (found again by its hidden
//! marker), and the job summary: the diagnostics table, where the rewrite
//! is, and the part of the rewrite that is not in review suggestions.

use std::fmt::Write;

use crate::outcome::RunOutcome;
use crate::report::markdown;

/// Hidden in the summary comment, so that later runs edit it.
pub const SUMMARY_MARKER: &str = "<!-- distribute:summary -->";
/// Hidden in each review suggestion, so that later runs find their own.
pub const SUGGESTION_MARKER: &str = "<!-- distribute:suggestion -->";
/// GitHub refuses comments longer than this (characters).
pub const COMMENT_LIMIT: usize = 65_536;

/// A file's diff, as shown in the summary.
#[derive(Debug, Clone)]
pub struct FileDiff {
    pub path: String,
    pub pattern: &'static str,
    pub diff: String,
}

/// Where the rewrite went, per mode.
#[derive(Debug, Clone)]
pub enum RewriteLocation {
    /// Review mode: `posted` suggestions are in reviews; `rest` are the diffs of what is not.
    Review {
        suggestions: usize,
        rest: Vec<FileDiff>,
    },
    /// Comment mode (and fallbacks): the whole rewrite here.
    Here(Vec<FileDiff>),
    /// Pull-request mode: the rewrite is in this pull request.
    PullRequest {
        number: u64,
        url: Option<String>,
        branch: String,
    },
}

pub struct Summary<'a> {
    pub outcome: &'a RunOutcome,
    pub head_sha: &'a str,
    pub rewrite: RewriteLocation,
    /// Said before everything else (scope widened, checkout mismatch, fallbacks).
    pub notes: Vec<String>,
}

impl Summary<'_> {
    pub fn rewritten_files(&self) -> usize {
        self.outcome
            .modules
            .iter()
            .filter(|module| module.changed())
            .count()
    }

    pub fn diagnostics(&self) -> usize {
        self.outcome
            .modules
            .iter()
            .map(|module| module.diagnostics.len())
            .sum()
    }

    /// Nothing to rewrite, nothing to say, no file that failed to read.
    pub fn is_nothing_to_do(&self) -> bool {
        self.rewritten_files() == 0 && self.diagnostics() == 0 && self.outcome.problems.is_empty()
    }

    /// The comment body, marker first, within GitHub's size limit: diffs are
    /// dropped first, then table rows.
    pub fn comment(&self) -> String {
        for (with_diffs, rows) in [(true, 200), (false, 200), (false, 20)] {
            let text = format!("{SUMMARY_MARKER}\n{}", self.render(with_diffs, rows));
            if text.chars().count() < COMMENT_LIMIT {
                return text;
            }
        }
        format!(
            "{SUMMARY_MARKER}\n### distribute\n\nThe findings are too many for a comment: see the job summary and annotations of this run (commit {}).\n",
            short(self.head_sha)
        )
    }

    /// The job summary (no marker, no size limit to speak of).
    pub fn job_summary(&self) -> String {
        self.render(true, usize::MAX)
    }

    fn render(&self, with_diffs: bool, max_rows: usize) -> String {
        let mut out = String::from("### distribute: Horovod rewrite\n\n");
        for note in &self.notes {
            writeln!(out, "> {note}\n").ok();
        }
        let modules = self.outcome.modules.len();
        if self.is_nothing_to_do() {
            let detail = if modules == 0 {
                "no file in scope trains a TensorFlow model".to_string()
            } else {
                format!(
                    "the {modules} training module{} in scope already train{} with Horovod",
                    plural(modules),
                    if modules == 1 { "s" } else { "" }
                )
            };
            writeln!(out, "Nothing to do at {}: {detail}.", short(self.head_sha)).ok();
            return out;
        }
        writeln!(
            out,
            "At {}: {} training module{} in scope, **{} to rewrite** for Horovod, {} diagnostic{}.\n",
            short(self.head_sha),
            modules,
            plural(modules),
            self.rewritten_files(),
            self.diagnostics(),
            plural(self.diagnostics()),
        )
        .ok();
        let table = markdown::diagnostics_table(self.outcome, max_rows);
        if !table.is_empty() {
            writeln!(out, "{table}").ok();
        }
        let problems = markdown::file_problems(self.outcome);
        if !problems.is_empty() {
            writeln!(out, "Files that could not be analysed:\n\n{problems}").ok();
        }
        self.render_rewrite(&mut out, with_diffs);
        self.render_held_back(&mut out, with_diffs);
        writeln!(
            out,
            "<sub>Comment `/distribute pr` to get the rewrite as a pull request into this branch, `/distribute review` for review suggestions, `/distribute help` for more. Locally: `distribute diff`.</sub>"
        )
        .ok();
        out
    }

    /// Where the rewrite is: in review comments and below, below, or in the
    /// bot's pull request.
    fn render_rewrite(&self, out: &mut String, with_diffs: bool) {
        match &self.rewrite {
            RewriteLocation::Review { suggestions, rest } => {
                if *suggestions > 0 {
                    writeln!(
                        out,
                        "**{suggestions} suggestion{}** of the rewrite {} in review comments on the lines this pull request changed.\n",
                        plural(*suggestions),
                        if *suggestions == 1 { "is" } else { "are" },
                    )
                    .ok();
                }
                if !rest.is_empty() {
                    writeln!(out, "{}\n", rest_heading(*suggestions, rest)).ok();
                    render_diffs(out, rest, with_diffs);
                }
            }
            RewriteLocation::Here(diffs) if !diffs.is_empty() => {
                writeln!(out, "The rewrite:\n").ok();
                render_diffs(out, diffs, with_diffs);
            }
            RewriteLocation::Here(_) => {}
            RewriteLocation::PullRequest {
                number,
                url,
                branch,
            } => {
                let link = url
                    .as_ref()
                    .map(|url| format!("[#{number}]({url})"))
                    .unwrap_or_else(|| format!("#{number}"));
                writeln!(
                    out,
                    "The rewrite is in {link} (branch `{branch}`): merge it into this branch to train with `horovodrun`.\n"
                )
                .ok();
            }
        }
    }
}

impl Summary<'_> {
    /// Unsafe rewrites, collapsed: offered for reading, not applied.
    fn render_held_back(&self, out: &mut String, with_diffs: bool) {
        let held: Vec<_> = self
            .outcome
            .modules
            .iter()
            .filter(|module| module.held_back.is_some())
            .collect();
        if held.is_empty() {
            return;
        }
        writeln!(
            out,
            "**{} unsafe rewrite{}** not applied: the checker could not show every invariant of a correct Horovod program (the warnings above say which). Set `unsafe-fixes: true` in `.distribute.yml` to apply {}.\n",
            held.len(),
            plural(held.len()),
            if held.len() == 1 { "it" } else { "them" }
        )
        .ok();
        for module in held {
            if with_diffs {
                writeln!(
                    out,
                    "<details><summary>{} ({}, unsafe)</summary>\n\n{}</details>\n",
                    module.relative_path,
                    module.classification.name(),
                    markdown::diff_block(&module.relative_path, &module.held_back_diff(), true)
                )
                .ok();
            } else {
                writeln!(
                    out,
                    "- `{}` ({}, unsafe)",
                    module.relative_path,
                    module.classification.name()
                )
                .ok();
            }
        }
        out.push('\n');
    }
}

/// The heading of the rewrite that review comments do not carry.
fn rest_heading(suggestions: usize, rest: &[FileDiff]) -> &'static str {
    let notebooks = rest.iter().any(|diff| diff.path.ends_with(".ipynb"));
    match (suggestions > 0, notebooks) {
        (true, true) => {
            "The rest of the rewrite (notebooks, cell by cell, and lines this pull request did not change):"
        }
        (true, false) => "The rest of the rewrite, on lines this pull request did not change:",
        (false, _) => "The rewrite:",
    }
}

fn render_diffs(out: &mut String, diffs: &[FileDiff], with_diffs: bool) {
    for file in diffs {
        if with_diffs {
            out.push_str(&markdown::diff_block(
                &format!("{} ({})", file.path, file.pattern),
                &file.diff,
                diffs.len() == 1,
            ));
        } else {
            let changed = file
                .diff
                .lines()
                .filter(|line| {
                    (line.starts_with('+') || line.starts_with('-'))
                        && !line.starts_with("+++")
                        && !line.starts_with("---")
                })
                .count();
            writeln!(
                out,
                "- `{}` ({}): {changed} changed lines, too large for a comment; run `distribute diff {}` or comment `/distribute pr`",
                file.path, file.pattern, file.path
            )
            .ok();
        }
    }
    out.push('\n');
}

fn short(sha: &str) -> &str {
    &sha[..sha.len().min(7)]
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}
