//! Review mode: the parts of the rewrite on lines the pull request changed
//! become ```suggestion comments of one review; the rest goes in the summary
//! comment. Re-runs keep suggestions that still apply, delete those that no
//! longer do, and post a review only for new ones.

use std::collections::HashMap;

use serde_json::json;

use super::client::ApiError;
use super::model::{PullRequest, ReviewComment};
use super::suggestions::{self, DiffLines, Suggestion};
use super::summary::{FileDiff, RewriteLocation, SUGGESTION_MARKER, Summary};
use super::{Acted, Analysed, Bot, normalise};
use crate::report;
use crate::workspace::config::OutputMode;

/// Inline suggestions per run, at most (the rest go in the summary).
const SUGGESTION_LIMIT: usize = 50;

impl Bot {
    pub(crate) async fn review(
        &self,
        pull: &PullRequest,
        analysed: &Analysed,
    ) -> Result<Acted, ApiError> {
        let outcome = &analysed.outcome;
        let (wanted, mut rest) = self.split_into_suggestions(analysed);
        let existing = self.existing_suggestions(pull).await?;
        for stale in existing
            .iter()
            .filter(|comment| !wanted.iter().any(|suggestion| same(comment, suggestion)))
        {
            self.client
                .delete(&format!(
                    "{}/pulls/comments/{}",
                    self.repository_path, stale.id
                ))
                .await?;
        }
        let new: Vec<&Suggestion> = wanted
            .iter()
            .filter(|suggestion| !existing.iter().any(|comment| same(comment, suggestion)))
            .collect();
        let mut notes = analysed.notes.clone();
        let mut posted = wanted.len();
        if !new.is_empty()
            && let Err(refusal) = self.post_review(pull, &new).await?
        {
            // GitHub did not place a comment in the diff (the checkout and
            // the pull request disagree): show the whole rewrite instead.
            notes.push(format!(
                "GitHub refused the review suggestions ({refusal}); the whole rewrite is below."
            ));
            posted = wanted.len() - new.len();
            rest = Self::file_diffs(outcome);
        }
        let summary = Summary {
            outcome,
            head_sha: &pull.head.sha,
            rewrite: RewriteLocation::Review {
                suggestions: posted,
                rest,
            },
            notes,
        };
        self.upsert_summary(pull.number, &summary).await?;
        Ok(Acted {
            job_summary: summary.job_summary(),
            pull_request: None,
        })
    }

    /// The rewrite as suggestions on lines the pull request changed, and the
    /// rest of it as diffs for the summary.
    fn split_into_suggestions(&self, analysed: &Analysed) -> (Vec<Suggestion>, Vec<FileDiff>) {
        let diff_lines: HashMap<&str, DiffLines> = analysed
            .files
            .iter()
            .filter_map(|file| {
                Some((
                    file.filename.as_str(),
                    DiffLines::from_patch(file.patch.as_ref()?),
                ))
            })
            .collect();
        // Suggestions only make sense when the rewrite replaces the file itself.
        let in_place = matches!(self.config.output, OutputMode::InPlace);
        let mut wanted: Vec<Suggestion> = Vec::new();
        let mut rest: Vec<FileDiff> = Vec::new();
        for module in &analysed.outcome.modules {
            let Some(rewritten) = &module.rewritten else {
                continue;
            };
            if let Some(notebook) = notebook_rewrite(module) {
                rest.push(notebook);
                continue;
            }
            let repository_path = self.to_repository_path(&module.relative_path);
            let lines = diff_lines
                .get(repository_path.as_str())
                .filter(|_| in_place);
            let split = suggestions::split(
                &repository_path,
                &module.original,
                rewritten,
                lines,
                SUGGESTION_LIMIT.saturating_sub(wanted.len()),
            );
            wanted.extend(split.suggestions);
            if split.remainder != module.original {
                rest.push(FileDiff {
                    path: module.relative_path.clone(),
                    pattern: module.classification.name(),
                    diff: report::unified_diff(
                        &module.relative_path,
                        &module.original,
                        &split.remainder,
                    ),
                });
            }
        }
        (wanted, rest)
    }

    /// The bot's suggestion comments already on the pull request.
    async fn existing_suggestions(
        &self,
        pull: &PullRequest,
    ) -> Result<Vec<ReviewComment>, ApiError> {
        let existing: Vec<ReviewComment> = self
            .client
            .get_all(
                &format!("{}/pulls/{}/comments", self.repository_path, pull.number),
                50,
            )
            .await?;
        Ok(existing
            .into_iter()
            .filter(|comment| comment.body.contains(SUGGESTION_MARKER))
            .collect())
    }

    /// Posts one review with the new suggestions; `Err(refusal)` inside when
    /// GitHub cannot place them in the diff (HTTP 422).
    async fn post_review(
        &self,
        pull: &PullRequest,
        new: &[&Suggestion],
    ) -> Result<Result<(), ApiError>, ApiError> {
        let comments: Vec<serde_json::Value> = new
            .iter()
            .map(|suggestion| review_comment(suggestion))
            .collect();
        let body = format!(
            "distribute: {} suggestion{} for training with Horovod; the summary comment has the diagnostics and the rest of the rewrite.",
            new.len(),
            if new.len() == 1 { "" } else { "s" }
        );
        let result: Result<serde_json::Value, _> = self
            .client
            .post(
                &format!("{}/pulls/{}/reviews", self.repository_path, pull.number),
                &json!({
                    "commit_id": pull.head.sha,
                    "body": body,
                    "event": "COMMENT",
                    "comments": comments,
                }),
            )
            .await;
        match result {
            Ok(_) => Ok(Ok(())),
            Err(error) if error.status() == Some(http::StatusCode::UNPROCESSABLE_ENTITY) => {
                Ok(Err(error))
            }
            Err(error) => Err(error),
        }
    }
}

/// Whether a posted comment is this suggestion (same place, same text).
fn same(comment: &ReviewComment, suggestion: &Suggestion) -> bool {
    comment.path == suggestion.path
        && comment.line == Some(suggestion.line)
        && comment.start_line == suggestion.start_line
        && normalise(&comment.body) == normalise(&suggestion.body(SUGGESTION_MARKER))
}

fn review_comment(suggestion: &Suggestion) -> serde_json::Value {
    let mut comment = json!({
        "path": suggestion.path,
        "line": suggestion.line,
        "side": "RIGHT",
        "body": suggestion.body(SUGGESTION_MARKER),
    });
    if let Some(start_line) = suggestion.start_line {
        comment["start_line"] = json!(start_line);
        comment["start_side"] = json!("RIGHT");
    }
    comment
}

/// A notebook's rewrite, cell by cell, for the summary comment: a suggestion
/// on a notebook's JSON is of no use to a reviewer.
fn notebook_rewrite(module: &crate::outcome::ModuleOutcome) -> Option<FileDiff> {
    (!module.cell_changes.is_empty()).then(|| FileDiff {
        path: module.relative_path.clone(),
        pattern: module.classification.name(),
        diff: module.diff(),
    })
}
