//! The parts of GitHub's webhook payloads and REST objects the bot reads.
//! Only the fields it uses, and those tolerant (defaults for what may be
//! absent), so that an object with fewer fields than github.com sends, or
//! more, still reads.

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize, Default)]
pub struct User {
    #[serde(default)]
    pub login: String,
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
}

impl User {
    pub fn is_bot(&self) -> bool {
        self.kind.as_deref() == Some("Bot") || self.login.ends_with("[bot]")
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Repository {
    pub full_name: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct BranchTip {
    #[serde(rename = "ref")]
    pub branch: String,
    pub sha: String,
    /// Absent when the fork was deleted.
    #[serde(default)]
    pub repo: Option<Repository>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PullRequest {
    pub number: u64,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub html_url: Option<String>,
    pub head: BranchTip,
    pub base: BranchTip,
    #[serde(default)]
    pub changed_files: Option<u64>,
    #[serde(default)]
    pub body: Option<String>,
}

impl PullRequest {
    /// The head branch lives in another repository (a fork), or is gone.
    pub fn is_from_fork(&self) -> bool {
        match (&self.head.repo, &self.base.repo) {
            (Some(head), Some(base)) => head.full_name != base.full_name,
            _ => true,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct PullRequestFile {
    pub filename: String,
    #[serde(default)]
    pub status: String,
    /// Absent when the file's diff is too large (or binary).
    #[serde(default)]
    pub patch: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct IssueComment {
    pub id: u64,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub user: Option<User>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ReviewComment {
    pub id: u64,
    #[serde(default)]
    pub path: String,
    /// `None` once the comment is outdated.
    #[serde(default)]
    pub line: Option<u64>,
    #[serde(default)]
    pub start_line: Option<u64>,
    #[serde(default)]
    pub body: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Permission {
    #[serde(default)]
    pub permission: Option<String>,
    #[serde(default)]
    pub role_name: Option<String>,
}

impl Permission {
    /// Write, maintain or admin. `role_name` is the finer one (maintain
    /// shows as `write` in `permission`); anything unknown fails closed.
    pub fn can_write(&self) -> bool {
        let allowed =
            |name: &Option<String>| matches!(name.as_deref(), Some("admin" | "maintain" | "write"));
        allowed(&self.role_name) || allowed(&self.permission)
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct ShaOnly {
    pub sha: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct GitReference {
    pub object: ShaOnly,
}

#[derive(Debug, Clone, Deserialize)]
pub struct GitCommit {
    pub sha: String,
    pub tree: ShaOnly,
    #[serde(default)]
    pub parents: Vec<ShaOnly>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CreatedPullRequest {
    pub number: u64,
    #[serde(default)]
    pub html_url: Option<String>,
}

/// The `issue` of an `issue_comment` event.
#[derive(Debug, Clone, Deserialize)]
pub struct Issue {
    pub number: u64,
}

/// `pull_request` webhook payload.
#[derive(Debug, Clone, Deserialize)]
pub struct PullRequestEvent {
    pub action: String,
    pub pull_request: PullRequest,
    pub repository: Repository,
}

/// `issue_comment` webhook payload.
#[derive(Debug, Clone, Deserialize)]
pub struct IssueCommentEvent {
    pub action: String,
    pub issue: Issue,
    pub comment: IssueComment,
    pub repository: Repository,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_fails_closed() {
        let permission = |permission: Option<&str>, role: Option<&str>| Permission {
            permission: permission.map(String::from),
            role_name: role.map(String::from),
        };
        assert!(permission(Some("admin"), Some("admin")).can_write());
        assert!(permission(Some("write"), Some("maintain")).can_write());
        assert!(permission(Some("write"), None).can_write());
        assert!(!permission(Some("read"), Some("triage")).can_write());
        assert!(!permission(Some("none"), None).can_write());
        assert!(!permission(None, None).can_write());
    }

    #[test]
    fn a_pull_request_from_another_repository_is_a_fork() {
        let pull: PullRequest = serde_json::from_value(serde_json::json!({
            "number": 3,
            "head": {"ref": "f", "sha": "a", "repo": {"full_name": "someone/ml"}},
            "base": {"ref": "main", "sha": "b", "repo": {"full_name": "org/ml"}},
        }))
        .unwrap();
        assert!(pull.is_from_fork());
        let deleted_fork: PullRequest = serde_json::from_value(serde_json::json!({
            "number": 3,
            "head": {"ref": "f", "sha": "a", "repo": null},
            "base": {"ref": "main", "sha": "b", "repo": {"full_name": "org/ml"}},
        }))
        .unwrap();
        assert!(deleted_fork.is_from_fork());
    }
}
