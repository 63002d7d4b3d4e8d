//! What GitHub Actions gives a step: the event, the repository, the API
//! address and token, and the files a step writes its outputs and job
//! summary to.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};

use super::client::Token;

#[derive(Debug)]
pub struct Environment {
    pub event_name: String,
    pub event_path: PathBuf,
    /// `owner/name`.
    pub repository: String,
    pub api_url: String,
    pub step_summary: Option<PathBuf>,
    pub output: Option<PathBuf>,
    /// The page of this workflow run, for "see the logs" links.
    pub run_url: Option<String>,
    pub workspace: Option<PathBuf>,
}

impl Environment {
    /// Reads the step's environment; the token comes back apart, to be handed to the client.
    pub fn from_process() -> Result<(Environment, Token)> {
        let required = |name: &str| -> Result<String> {
            match std::env::var(name) {
                Ok(value) if !value.is_empty() => Ok(value),
                _ => bail!(
                    "{name} is not set: `distribute github` runs inside a GitHub Actions job (see the README's workflow files)"
                ),
            }
        };
        let optional = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        let run_url = match (
            optional("GITHUB_SERVER_URL"),
            optional("GITHUB_REPOSITORY"),
            optional("GITHUB_RUN_ID"),
        ) {
            (Some(server), Some(repository), Some(run)) => {
                Some(format!("{server}/{repository}/actions/runs/{run}"))
            }
            _ => None,
        };
        let token = Token::new(required("GITHUB_TOKEN").context(
            "pass the token as GITHUB_TOKEN (the action does this from its `github-token` input)",
        )?);
        let environment = Environment {
            event_name: required("GITHUB_EVENT_NAME")?,
            event_path: required("GITHUB_EVENT_PATH")?.into(),
            repository: required("GITHUB_REPOSITORY")?,
            api_url: optional("GITHUB_API_URL").unwrap_or_else(|| "https://api.github.com".into()),
            step_summary: optional("GITHUB_STEP_SUMMARY").map(PathBuf::from),
            output: optional("GITHUB_OUTPUT").map(PathBuf::from),
            run_url,
            workspace: optional("GITHUB_WORKSPACE").map(PathBuf::from),
        };
        Ok((environment, token))
    }

    pub fn read_event(&self) -> Result<serde_json::Value> {
        let text = std::fs::read_to_string(&self.event_path)
            .with_context(|| format!("{}: reading the event payload", self.event_path.display()))?;
        serde_json::from_str(&text).with_context(|| {
            format!(
                "{}: the event payload is not JSON",
                self.event_path.display()
            )
        })
    }

    /// Appends Markdown to the job summary, when the step has one.
    pub fn append_step_summary(&self, markdown: &str) -> Result<()> {
        let Some(path) = &self.step_summary else {
            return Ok(());
        };
        append(path, markdown)
    }

    /// Sets step outputs (`name=value` lines; values here are single-line).
    pub fn set_outputs(&self, outputs: &[(&str, String)]) -> Result<()> {
        let Some(path) = &self.output else {
            return Ok(());
        };
        let mut text = String::new();
        for (name, value) in outputs {
            text.push_str(&format!("{name}={}\n", value.replace('\n', " ")));
        }
        append(path, &text)
    }
}

fn append(path: &PathBuf, text: &str) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("{}: opening", path.display()))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("{}: writing", path.display()))
}
