//! The `/distribute` command in a pull-request comment. The permission check
//! comes first and fails closed: someone without write access gets a polite
//! reply and nothing else happens. Otherwise the command comment gets an
//! eyes reaction on receipt, then rocket on success or confused on failure.

use anyhow::{Context, Result};
use serde_json::json;

use super::command::{self, Command, Parsed, USAGE};
use super::model::{IssueCommentEvent, Permission, PullRequest};
use super::{Bot, Mode, encode};

impl Bot {
    pub(crate) async fn handle_comment(&self, payload: serde_json::Value) -> Result<i32> {
        let event: IssueCommentEvent = serde_json::from_value(payload).with_context(|| {
            format!(
                "{}: not an issue_comment payload",
                self.environment.event_path.display()
            )
        })?;
        let Some(parsed) = self.command_of(&event) else {
            return Ok(0);
        };
        let number = event.issue.number;
        let author = event.comment.user.clone().unwrap_or_default();
        if !self.can_write(&author.login).await? {
            println!(
                "distribute: {} has no write access; the command is refused",
                author.login
            );
            self.post_comment(
                number,
                &format!(
                    "@{}, thank you for asking! `/distribute` runs only for collaborators with write access to this repository, so I did not run it. A maintainer can comment `/distribute` to run it.",
                    author.login
                ),
            )
            .await?;
            return Ok(0);
        }
        self.react(event.comment.id, "eyes").await;
        let mode = match parsed {
            // Help needs no pull request: it is answered wherever it is asked.
            Parsed::Command(Command::Help) => {
                self.post_comment(number, &format!("**`/distribute` commands**\n\n{USAGE}"))
                    .await?;
                self.react(event.comment.id, "rocket").await;
                return Ok(0);
            }
            Parsed::Malformed(text) => {
                let reply = format!("I do not know `/distribute {text}`.\n\n{USAGE}");
                return self.refuse(event.comment.id, number, &reply).await;
            }
            Parsed::Command(Command::PullRequest) => Mode::PullRequest,
            Parsed::Command(Command::Review) => Mode::Review,
            Parsed::NotMine => unreachable!("command_of returns commands only"),
        };
        // The payload marks pull requests, but ask the API: it is the authority.
        let pull: Option<PullRequest> = self
            .client
            .get_optional(&format!("{}/pulls/{number}", self.repository_path))
            .await?;
        let Some(pull) = pull else {
            let reply = "`/distribute` works on pull requests only: comment it on the pull request whose training code should be rewritten.";
            return self.refuse(event.comment.id, number, reply).await;
        };
        if pull.state.as_deref() == Some("closed") {
            let reply = "This pull request is closed: reopen it to run `/distribute`.";
            return self.refuse(event.comment.id, number, reply).await;
        }
        self.run_command(event.comment.id, number, mode, &pull)
            .await
    }

    /// The command a new comment by a person gives; `None` for anything else.
    fn command_of(&self, event: &IssueCommentEvent) -> Option<Parsed> {
        if event.action != "created" {
            println!(
                "distribute: nothing to do for a comment {} (only new comments are commands)",
                event.action
            );
            return None;
        }
        if event
            .comment
            .user
            .as_ref()
            .is_some_and(|user| user.is_bot())
        {
            return None;
        }
        let parsed = command::parse(event.comment.body.as_deref().unwrap_or(""));
        if parsed == Parsed::NotMine {
            println!("distribute: the comment is not a /distribute command");
            return None;
        }
        Some(parsed)
    }

    /// Replies why the command does not run, and marks it confused.
    async fn refuse(&self, comment: u64, number: u64, reply: &str) -> Result<i32> {
        self.post_comment(number, reply).await?;
        self.react(comment, "confused").await;
        Ok(0)
    }

    /// Runs the command; rocket on success; on failure, confused and a reply
    /// that shows no internal detail publicly.
    async fn run_command(
        &self,
        comment: u64,
        number: u64,
        mode: Mode,
        pull: &PullRequest,
    ) -> Result<i32> {
        match self.run_and_report(mode, pull).await {
            Ok(code) => {
                self.react(comment, "rocket").await;
                Ok(code)
            }
            Err(error) => {
                eprintln!("distribute: error: {error:#}");
                self.react(comment, "confused").await;
                let logs = self
                    .environment
                    .run_url
                    .as_ref()
                    .map(|url| format!(" ([the run's log]({url}) has the details)"))
                    .unwrap_or_default();
                // Internal errors are not shown publicly, only where they happened.
                let _ = self
                    .post_comment(
                        number,
                        &format!("Sorry, `/distribute` failed: an internal error occurred{logs}."),
                    )
                    .await;
                Err(error)
            }
        }
    }

    /// Write, maintain or admin on this repository. Not a collaborator (404) is no.
    async fn can_write(&self, login: &str) -> Result<bool> {
        if login.is_empty() {
            return Ok(false);
        }
        let permission: Option<Permission> = self
            .client
            .get_optional(&format!(
                "{}/collaborators/{}/permission",
                self.repository_path,
                encode(login)
            ))
            .await?;
        Ok(permission.is_some_and(|permission| permission.can_write()))
    }

    /// A reaction is a courtesy: failing to add one does not fail the run.
    async fn react(&self, comment_id: u64, content: &str) {
        let result: Result<serde_json::Value, _> = self
            .client
            .post(
                &format!(
                    "{}/issues/comments/{comment_id}/reactions",
                    self.repository_path
                ),
                &json!({ "content": content }),
            )
            .await;
        if let Err(error) = result {
            eprintln!("distribute: could not react with {content}: {error}");
        }
    }
}
