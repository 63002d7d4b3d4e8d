//! `distribute github`: the pull-request bot, run by the GitHub Action.
//!
//! It reads the event GitHub Actions hands the step (`pull_request`, or an
//! `issue_comment` carrying `/distribute`), analyses the checked-out package
//! with the pull request's changed files as scope (the same engine as the
//! CLI), and acts on the pull request through the REST API: one summary
//! comment edited in place, review suggestions, or a pull request carrying
//! the rewrite. When the token cannot write (a pull request from a fork),
//! it falls back to workflow annotations and the job summary.

pub mod client;
pub mod command;
mod comment_command;
pub mod environment;
pub mod model;
mod pull_request;
mod review;
pub mod suggestions;
pub mod summary;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::json;

use self::client::{ApiError, GitHubClient, RetryPolicy};
use self::environment::Environment;
use self::model::{IssueComment, PullRequest, PullRequestEvent, PullRequestFile};
use self::summary::{FileDiff, RewriteLocation, SUMMARY_MARKER, Summary};
use crate::diagnostics::Severity;
use crate::engine::{self, RunOutcome, RunRequest};
use crate::report;
use crate::workspace::config::Config;
use crate::workspace::discover::relative_path;
use crate::workspace::git;

/// What the bot does with a rewrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// A summary comment and a review with ```suggestion blocks on the changed lines.
    Review,
    /// A pull request into the pull request's head branch carrying the rewrite.
    PullRequest,
    /// The summary comment only, with the whole rewrite as a diff.
    Comment,
}

#[derive(Debug, Clone)]
pub struct GithubOptions {
    /// The mode for `pull_request` events (commands choose their own).
    pub mode: Mode,
    /// The package root; default `GITHUB_WORKSPACE`, else the current directory.
    pub root: Option<PathBuf>,
    pub config: Option<PathBuf>,
    /// Exit 1 when a diagnostic this severe exists.
    pub fail_on: Option<Severity>,
    /// Read and write the result cache (`crate::cache`).
    pub use_cache: bool,
}

/// Runs the bot for the event of this job; returns the exit code.
pub fn run(options: &GithubOptions) -> Result<i32> {
    let (environment, token) = Environment::from_process()?;
    let root = options
        .root
        .clone()
        .or_else(|| environment.workspace.clone())
        .map_or_else(std::env::current_dir, Ok)
        .context("reading the current directory")?;
    let root = root
        .canonicalize()
        .with_context(|| format!("{}: package root not found", root.display()))?;
    let config = Config::load(
        &root,
        options.config.as_deref(),
        crate::registry::all_codes(),
    )
    .map_err(anyhow::Error::new)?;
    let repository_path = repository_path(&environment.repository)?;
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?
        .block_on(async {
            // octocrab spawns its connection worker: build it inside the runtime.
            let client = GitHubClient::new(
                &environment.api_url,
                token,
                RetryPolicy::from_environment()?,
            )?;
            let bot = Bot {
                client,
                environment,
                options: options.clone(),
                repository_path,
                repository_prefix: repository_prefix(&root),
                root,
                config,
            };
            bot.handle_event().await
        })
}

/// `/repos/{owner}/{repo}` for `owner/repo`.
fn repository_path(full_name: &str) -> Result<String> {
    let Some((owner, name)) = full_name.split_once('/') else {
        anyhow::bail!("GITHUB_REPOSITORY {full_name:?} is not owner/name");
    };
    Ok(format!("/repos/{}/{}", encode(owner), encode(name)))
}

/// Characters kept as they are in a path segment or query value (RFC 3986 unreserved).
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

pub(crate) fn encode(text: &str) -> String {
    utf8_percent_encode(text, UNRESERVED).to_string()
}

/// Where the package root sits in its git repository (`""` at the top), so
/// that the repository paths of the API map to the root's paths.
fn repository_prefix(root: &Path) -> String {
    git::top_level(root)
        .and_then(|top| top.canonicalize().ok())
        .and_then(|top| relative_path(&top, root))
        .filter(|prefix| !prefix.starts_with(".."))
        .unwrap_or_default()
}

pub(crate) struct Bot {
    client: GitHubClient,
    environment: Environment,
    options: GithubOptions,
    /// `/repos/{owner}/{repo}`.
    repository_path: String,
    /// The package root relative to the repository's top: `""` at the top, else like `ml/project`.
    repository_prefix: String,
    root: PathBuf,
    config: Config,
}

/// The pull request's scope, analysed (read-only API calls so far).
pub(crate) struct Analysed {
    pub files: Vec<PullRequestFile>,
    pub outcome: RunOutcome,
    /// Said at the top of the summary (scope widened, checkout mismatch...).
    pub notes: Vec<String>,
}

/// What acting on the pull request did.
pub(crate) struct Acted {
    pub job_summary: String,
    pub pull_request: Option<u64>,
}

impl Bot {
    async fn handle_event(&self) -> Result<i32> {
        let payload = self.environment.read_event()?;
        match self.environment.event_name.as_str() {
            "pull_request" | "pull_request_target" => {
                let event: PullRequestEvent =
                    serde_json::from_value(payload).with_context(|| {
                        format!(
                            "{}: not a pull_request payload",
                            self.environment.event_path.display()
                        )
                    })?;
                if !matches!(
                    event.action.as_str(),
                    "opened" | "synchronize" | "reopened" | "ready_for_review"
                ) {
                    println!(
                        "distribute: nothing to do for a pull_request event with action {:?}",
                        event.action
                    );
                    return Ok(0);
                }
                self.run_and_report(self.options.mode, &event.pull_request)
                    .await
            }
            "issue_comment" => self.handle_comment(payload).await,
            other => {
                println!(
                    "::warning title=distribute::the {other} event is not handled; run the action on pull_request or issue_comment"
                );
                Ok(0)
            }
        }
    }

    /// Analyses the pull request, acts in `mode`, and reports through the
    /// job. A refusal to write (HTTP 403: the read-only token of a fork's
    /// pull request) falls back to annotations and the job summary, and is
    /// not a failure.
    pub(crate) async fn run_and_report(&self, mode: Mode, pull: &PullRequest) -> Result<i32> {
        let analysed = self.analyse_pull_request(pull).await?;
        match self.act(mode, pull, &analysed).await {
            Ok(acted) => self.report_locally(&analysed.outcome, &acted),
            Err(error) if error.is_forbidden() => {
                println!(
                    "::warning title=distribute::cannot write to the pull request ({error}); expected for a pull request from a fork, whose token is read-only. The findings are in these annotations and the job summary."
                );
                let mut notes = analysed.notes.clone();
                notes.push("This run's token cannot write to the pull request (a pull request from a fork gets a read-only token), so the findings are here only.".to_string());
                let summary = Summary {
                    outcome: &analysed.outcome,
                    head_sha: &pull.head.sha,
                    rewrite: RewriteLocation::Here(Self::file_diffs(&analysed.outcome)),
                    notes,
                };
                let acted = Acted {
                    job_summary: summary.job_summary(),
                    pull_request: None,
                };
                self.report_locally(&analysed.outcome, &acted)
            }
            Err(error) => Err(anyhow::Error::new(error)),
        }
    }

    /// Lists the pull request's files and analyses the package with them as scope.
    pub(crate) async fn analyse_pull_request(&self, pull: &PullRequest) -> Result<Analysed> {
        let files: Vec<PullRequestFile> = self
            .client
            .get_all(
                &format!("{}/pulls/{}/files", self.repository_path, pull.number),
                30,
            )
            .await?;
        let mut notes = Vec::new();
        // GitHub lists at most 3000 files of a pull request; past that, analyse everything.
        let listed_all = files.len() < 3000
            || pull
                .changed_files
                .is_none_or(|count| count as usize <= files.len());
        let scope = if listed_all {
            Some(
                files
                    .iter()
                    .filter(|file| {
                        file.status != "removed"
                            && crate::workspace::discover::is_python_source(Path::new(
                                &file.filename,
                            ))
                    })
                    .filter_map(|file| self.to_root_relative(&file.filename))
                    .collect::<HashSet<String>>(),
            )
        } else {
            notes.push(format!(
                "This pull request changes {} files, more than GitHub lists ({}): the whole package was analysed.",
                pull.changed_files.unwrap_or_default(),
                files.len()
            ));
            None
        };
        if let Some(note) = self.checkout_mismatch(pull) {
            notes.push(note);
        }
        let outcome = self.analyse(scope);
        Ok(Analysed {
            files,
            outcome,
            notes,
        })
    }

    async fn act(
        &self,
        mode: Mode,
        pull: &PullRequest,
        analysed: &Analysed,
    ) -> Result<Acted, ApiError> {
        match mode {
            Mode::Review => self.review(pull, analysed).await,
            Mode::Comment => self.comment_only(pull, analysed, Vec::new()).await,
            Mode::PullRequest if pull.is_from_fork() => {
                let note = format!(
                    "The head branch `{}` lives in a fork, where this repository's token cannot push: here is the rewrite as a diff instead of a pull request.",
                    pull.head.branch
                );
                self.comment_only(pull, analysed, vec![note]).await
            }
            Mode::PullRequest => self.pull_request(pull, analysed).await,
        }
    }

    /// A repository path of the API, relative to the package root (`None` outside it).
    fn to_root_relative(&self, repository_path: &str) -> Option<String> {
        if self.repository_prefix.is_empty() {
            return Some(repository_path.to_string());
        }
        repository_path
            .strip_prefix(&self.repository_prefix)?
            .strip_prefix('/')
            .map(String::from)
    }

    /// A package-root path as the repository sees it.
    fn to_repository_path(&self, root_relative: &str) -> String {
        if self.repository_prefix.is_empty() {
            root_relative.to_string()
        } else {
            format!("{}/{root_relative}", self.repository_prefix)
        }
    }

    /// When the checkout is a git repository whose HEAD is not the pull
    /// request's head commit (e.g. the default merge commit), says so.
    fn checkout_mismatch(&self, pull: &PullRequest) -> Option<String> {
        let head = git::head_commit(&self.root)?;
        (head != pull.head.sha).then(|| {
            format!(
                "The checkout is at {}, not at the pull request's head {}: line numbers may be off, and a pull request made from it carries the checkout's version of each file it rewrites (check its diff; the README's workflow checks out the head).",
                &head[..head.len().min(7)],
                &pull.head.sha[..pull.head.sha.len().min(7)]
            )
        })
    }

    fn analyse(&self, scope: Option<HashSet<String>>) -> RunOutcome {
        let request = RunRequest {
            root: self.root.clone(),
            scope,
            expand_scope_to_dependents: true,
            config: self.config.clone(),
            use_cache: self.options.use_cache,
            codes: crate::registry::all_codes(),
        };
        let unsafe_fixes = self.config.unsafe_fixes;
        let mut outcome = engine::with_large_stack(move || engine::run(&request));
        outcome.hold_back_unsafe(unsafe_fixes);
        outcome
    }

    fn file_diffs(outcome: &RunOutcome) -> Vec<FileDiff> {
        outcome
            .modules
            .iter()
            .filter_map(|module| {
                module.rewritten.as_ref()?;
                Some(FileDiff {
                    path: module.relative_path.clone(),
                    pattern: module.classification.name(),
                    diff: module.diff(),
                })
            })
            .collect()
    }

    /// Comment mode: the summary comment with the whole rewrite.
    async fn comment_only(
        &self,
        pull: &PullRequest,
        analysed: &Analysed,
        extra_notes: Vec<String>,
    ) -> Result<Acted, ApiError> {
        let mut notes = analysed.notes.clone();
        notes.extend(extra_notes);
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

    /// Creates or edits the one summary comment. When there is nothing to
    /// do and no earlier summary, nothing is posted; an earlier summary is
    /// edited to say there is nothing left. Duplicates (a retried creation
    /// that had gone through) are deleted.
    pub(crate) async fn upsert_summary(
        &self,
        number: u64,
        summary: &Summary<'_>,
    ) -> Result<(), ApiError> {
        let comments: Vec<IssueComment> = self
            .client
            .get_all(
                &format!("{}/issues/{number}/comments", self.repository_path),
                50,
            )
            .await?;
        let mut mine = comments.into_iter().filter(|comment| {
            comment
                .body
                .as_deref()
                .is_some_and(|body| body.starts_with(SUMMARY_MARKER))
        });
        let body = summary.comment();
        match mine.next() {
            None if summary.is_nothing_to_do() => {}
            None => self.post_comment(number, &body).await?,
            Some(existing) => {
                if normalise(existing.body.as_deref().unwrap_or("")) != normalise(&body) {
                    let _: serde_json::Value = self
                        .client
                        .patch(
                            &format!("{}/issues/comments/{}", self.repository_path, existing.id),
                            &json!({ "body": body }),
                        )
                        .await?;
                }
                for duplicate in mine {
                    self.client
                        .delete(&format!(
                            "{}/issues/comments/{}",
                            self.repository_path, duplicate.id
                        ))
                        .await?;
                }
            }
        }
        Ok(())
    }

    /// A new comment on an issue or pull request.
    pub(crate) async fn post_comment(&self, number: u64, body: &str) -> Result<(), ApiError> {
        let _: serde_json::Value = self
            .client
            .post(
                &format!("{}/issues/{number}/comments", self.repository_path),
                &json!({ "body": body }),
            )
            .await?;
        Ok(())
    }

    /// Annotations, job summary, step outputs and the exit code.
    fn report_locally(&self, outcome: &RunOutcome, acted: &Acted) -> Result<i32> {
        print!("{}", report::github::render(outcome));
        self.environment.append_step_summary(&acted.job_summary)?;
        let diagnostics: usize = outcome
            .modules
            .iter()
            .map(|module| module.diagnostics.len())
            .sum();
        let rewritten = outcome
            .modules
            .iter()
            .filter(|module| module.changed())
            .count();
        self.environment.set_outputs(&[
            ("rewritten-files", rewritten.to_string()),
            ("diagnostics", diagnostics.to_string()),
            (
                "pull-request",
                acted
                    .pull_request
                    .map(|number| number.to_string())
                    .unwrap_or_default(),
            ),
        ])?;
        println!(
            "distribute: {rewritten} file{} to rewrite, {diagnostics} diagnostic{}{}",
            if rewritten == 1 { "" } else { "s" },
            if diagnostics == 1 { "" } else { "s" },
            acted
                .pull_request
                .map(|number| format!(", the rewrite is in pull request #{number}"))
                .unwrap_or_default()
        );
        let failing = self
            .options
            .fail_on
            .is_some_and(|threshold| engine::has_diagnostic_at_least(outcome, threshold));
        Ok(if failing { 1 } else { 0 })
    }
}

/// Bodies compared as GitHub stores them (it may turn `\n` into `\r\n`).
pub(crate) fn normalise(body: &str) -> String {
    body.replace("\r\n", "\n").trim_end().to_string()
}
