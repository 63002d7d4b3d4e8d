//! Pull-request mode: the rewrite is committed (through the Git data API:
//! tree, commit, ref) on one branch per pull request, `distribute/pr-<N>`,
//! and a pull request from it into the pull request's head branch is opened
//! or updated, never duplicated. A re-run with the same rewrite changes
//! nothing; when nothing is left to rewrite, the bot's pull request is closed.

use serde::Deserialize;
use serde_json::json;

use super::client::ApiError;
use super::model::{CreatedPullRequest, GitCommit, GitReference, PullRequest, ShaOnly};
use super::summary::{RewriteLocation, Summary};
use super::{Acted, Analysed, Bot, encode, normalise};
use crate::report::markdown;

/// The marker in the bot's pull request body.
const PULL_REQUEST_MARKER: &str = "<!-- distribute:pull-request -->";

#[derive(Deserialize)]
struct OpenPullRequest {
    number: u64,
    head: BranchName,
    base: BranchName,
    #[serde(default)]
    html_url: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    body: Option<String>,
}

#[derive(Deserialize)]
struct BranchName {
    #[serde(rename = "ref")]
    branch: String,
}

/// The bot's pull request, or why GitHub would not open it.
enum BotPullRequest {
    Open { number: u64, url: Option<String> },
    Refused(String),
}

/// A file of the rewrite: its path in the repository, content and mode.
type RewrittenFile<'a> = (String, &'a str, &'static str);

impl Bot {
    pub(crate) async fn pull_request(
        &self,
        pull: &PullRequest,
        analysed: &Analysed,
    ) -> Result<Acted, ApiError> {
        let branch = format!("distribute/pr-{}", pull.number);
        let existing = self.bots_open_pull_request(pull, &branch).await?;
        let files = self.rewritten_files(analysed);
        if files.is_empty() {
            return self.nothing_left_to_rewrite(pull, analysed, existing).await;
        }
        self.commit_rewrite(pull, &branch, &files).await?;
        let (number, url) = match self
            .open_or_update_pull_request(pull, analysed, &branch, &files, existing)
            .await?
        {
            BotPullRequest::Open { number, url } => (number, url),
            BotPullRequest::Refused(refusal) => {
                return self
                    .report_branch_only(pull, analysed, &branch, &refusal)
                    .await;
            }
        };
        let summary = Summary {
            outcome: &analysed.outcome,
            head_sha: &pull.head.sha,
            rewrite: RewriteLocation::PullRequest {
                number,
                url,
                branch,
            },
            notes: analysed.notes.clone(),
        };
        self.upsert_summary(pull.number, &summary).await?;
        Ok(Acted {
            job_summary: summary.job_summary(),
            pull_request: Some(number),
        })
    }

    /// The bot's open pull request from `branch` into the pull request's head.
    async fn bots_open_pull_request(
        &self,
        pull: &PullRequest,
        branch: &str,
    ) -> Result<Option<OpenPullRequest>, ApiError> {
        let owner = self
            .environment
            .repository
            .split_once('/')
            .map_or("", |(owner, _)| owner);
        let open: Vec<OpenPullRequest> = self
            .client
            .get_all(
                &format!(
                    "{}/pulls?state=open&head={}&base={}",
                    self.repository_path,
                    encode(&format!("{owner}:{branch}")),
                    encode(&pull.head.branch)
                ),
                1,
            )
            .await?;
        // The filters are the server's; checking them again here keeps the
        // bot from ever editing someone else's pull request.
        Ok(open.into_iter().find(|candidate| {
            candidate.head.branch == branch && candidate.base.branch == pull.head.branch
        }))
    }

    fn rewritten_files<'a>(&self, analysed: &'a Analysed) -> Vec<RewrittenFile<'a>> {
        analysed
            .outcome
            .modules
            .iter()
            .filter_map(|module| {
                let rewritten = module.rewritten.as_deref()?;
                let output = self.config.output_path(&module.relative_path);
                let output = output.to_string_lossy().replace('\\', "/");
                Some((
                    self.to_repository_path(&output),
                    rewritten,
                    file_mode(&self.root.join(&module.relative_path)),
                ))
            })
            .collect()
    }

    /// Nothing to rewrite: the bot's pull request, if any, is closed, and the
    /// summary says so.
    async fn nothing_left_to_rewrite(
        &self,
        pull: &PullRequest,
        analysed: &Analysed,
        existing: Option<OpenPullRequest>,
    ) -> Result<Acted, ApiError> {
        if let Some(existing) = &existing {
            let _: serde_json::Value = self
                .client
                .patch(
                    &format!("{}/pulls/{}", self.repository_path, existing.number),
                    &json!({
                        "state": "closed",
                        "body": format!("Closed by distribute: at {} nothing in #{} needs a rewrite any more.\n\n{PULL_REQUEST_MARKER}", pull.head.sha, pull.number),
                    }),
                )
                .await?;
        }
        let summary = Summary {
            outcome: &analysed.outcome,
            head_sha: &pull.head.sha,
            rewrite: RewriteLocation::Here(Vec::new()),
            notes: analysed.notes.clone(),
        };
        self.upsert_summary(pull.number, &summary).await?;
        Ok(Acted {
            job_summary: summary.job_summary(),
            pull_request: None,
        })
    }

    /// Commits the rewrite on `branch`, on top of the pull request's head,
    /// unless the branch already holds exactly that commit.
    async fn commit_rewrite(
        &self,
        pull: &PullRequest,
        branch: &str,
        files: &[RewrittenFile<'_>],
    ) -> Result<(), ApiError> {
        let head_commit: GitCommit = self
            .client
            .get(&format!(
                "{}/git/commits/{}",
                self.repository_path, pull.head.sha
            ))
            .await?;
        let tree_entries: Vec<serde_json::Value> = files
            .iter()
            .map(|(path, content, mode)| {
                json!({ "path": path, "mode": mode, "type": "blob", "content": content })
            })
            .collect();
        let tree: ShaOnly = self
            .client
            .post(
                &format!("{}/git/trees", self.repository_path),
                &json!({ "base_tree": head_commit.tree.sha, "tree": tree_entries }),
            )
            .await?;
        let reference_path = format!("{}/git/ref/heads/{branch}", self.repository_path);
        let current: Option<GitReference> = self.client.get_optional(&reference_path).await?;
        if self.branch_holds(current.as_ref(), &tree.sha, pull).await? {
            return Ok(());
        }
        let commit: ShaOnly = self
            .client
            .post(
                &format!("{}/git/commits", self.repository_path),
                &json!({
                    "message": format!(
                        "Train with Horovod: distribute's rewrite of #{}\n\nMade by `distribute github` from {}.",
                        pull.number, pull.head.sha
                    ),
                    "tree": tree.sha,
                    "parents": [pull.head.sha],
                }),
            )
            .await?;
        self.point_branch_at(branch, &commit.sha, current.is_some())
            .await
    }

    /// Whether the branch's commit has this tree and the pull request's head
    /// as its only parent: a re-run with the same rewrite changes nothing.
    async fn branch_holds(
        &self,
        current: Option<&GitReference>,
        tree: &str,
        pull: &PullRequest,
    ) -> Result<bool, ApiError> {
        let Some(reference) = current else {
            return Ok(false);
        };
        let commit: GitCommit = self
            .client
            .get(&format!(
                "{}/git/commits/{}",
                self.repository_path, reference.object.sha
            ))
            .await?;
        Ok(commit.tree.sha == tree
            && commit.parents.len() == 1
            && commit.parents[0].sha == pull.head.sha)
    }

    async fn point_branch_at(&self, branch: &str, sha: &str, exists: bool) -> Result<(), ApiError> {
        let _: serde_json::Value = if exists {
            self.client
                .patch(
                    &format!("{}/git/refs/heads/{branch}", self.repository_path),
                    &json!({ "sha": sha, "force": true }),
                )
                .await?
        } else {
            self.client
                .post(
                    &format!("{}/git/refs", self.repository_path),
                    &json!({ "ref": format!("refs/heads/{branch}"), "sha": sha }),
                )
                .await?
        };
        Ok(())
    }

    /// The bot's pull request, updated or opened, or GitHub's refusal to let
    /// the workflow open one.
    async fn open_or_update_pull_request(
        &self,
        pull: &PullRequest,
        analysed: &Analysed,
        branch: &str,
        files: &[RewrittenFile<'_>],
        existing: Option<OpenPullRequest>,
    ) -> Result<BotPullRequest, ApiError> {
        let title = format!(
            "Train with Horovod: rewrite of #{} ({})",
            pull.number,
            pull.title.as_deref().unwrap_or(&pull.head.branch)
        );
        let body = self.pull_request_body(pull, analysed, files);
        if let Some(existing) = existing {
            let unchanged = existing.title.as_deref() == Some(title.as_str())
                && normalise(existing.body.as_deref().unwrap_or("")) == normalise(&body);
            if !unchanged {
                let _: serde_json::Value = self
                    .client
                    .patch(
                        &format!("{}/pulls/{}", self.repository_path, existing.number),
                        &json!({ "title": title, "body": body }),
                    )
                    .await?;
            }
            return Ok(BotPullRequest::Open {
                number: existing.number,
                url: existing.html_url,
            });
        }
        let created: Result<CreatedPullRequest, _> = self
            .client
            .post(
                &format!("{}/pulls", self.repository_path),
                &json!({ "title": title, "head": branch, "base": pull.head.branch, "body": body }),
            )
            .await;
        match created {
            Ok(created) => Ok(BotPullRequest::Open {
                number: created.number,
                url: created.html_url,
            }),
            // New repositories do not let GitHub Actions open pull requests.
            Err(error) if error.is_forbidden() => Ok(BotPullRequest::Refused(error.to_string())),
            Err(error) => Err(error),
        }
    }

    /// The branch is pushed but no pull request could be opened: the summary
    /// carries the rewrite and says how to go on.
    async fn report_branch_only(
        &self,
        pull: &PullRequest,
        analysed: &Analysed,
        branch: &str,
        refusal: &str,
    ) -> Result<Acted, ApiError> {
        let mut notes = analysed.notes.clone();
        notes.push(format!(
            "The rewrite is committed on branch `{branch}`, but GitHub refused to open the pull request ({refusal}). Open it from that branch into `{}`, or allow it under Settings → Actions → General → Workflow permissions → \"Allow GitHub Actions to create and approve pull requests\".",
            pull.head.branch
        ));
        let summary = Summary {
            outcome: &analysed.outcome,
            head_sha: &pull.head.sha,
            rewrite: RewriteLocation::Here(Self::file_diffs(&analysed.outcome)),
            notes,
        };
        self.upsert_summary(pull.number, &summary).await?;
        Ok(Acted {
            job_summary: summary.job_summary(),
            pull_request: None,
        })
    }

    fn pull_request_body(
        &self,
        pull: &PullRequest,
        analysed: &Analysed,
        files: &[(String, &str, &str)],
    ) -> String {
        let mut body = format!(
            "This pull request makes #{} train on many GPUs and machines with [Horovod](https://horovod.ai). It was made by `distribute` from {} and is updated when #{} changes.\n\nMerge it into `{}`, then start training with `horovodrun -np <processes> -H <host>:<slots>,... python <script>`.\n\n",
            pull.number, pull.head.sha, pull.number, pull.head.branch
        );
        body.push_str("Rewritten files:\n\n");
        for (path, _, _) in files {
            body.push_str(&format!("- `{path}`\n"));
        }
        let table = markdown::diagnostics_table(&analysed.outcome, 100);
        if !table.is_empty() {
            body.push_str("\nWhat the rewrite assumes, and what to check:\n\n");
            body.push_str(&table);
        }
        body.push('\n');
        body.push_str(PULL_REQUEST_MARKER);
        body
    }
}

/// The git mode of a file: executable or not.
fn file_mode(path: &std::path::Path) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if std::fs::metadata(path).is_ok_and(|metadata| metadata.permissions().mode() & 0o111 != 0)
        {
            return "100755";
        }
    }
    let _ = path;
    "100644"
}
