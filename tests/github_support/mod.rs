//! What the GitHub bot tests share: the emulator of GitHub's REST API (a
//! child process on 127.0.0.1), the seeded repository and pull request,
//! running `distribute github` as the action does, and reading the
//! emulator's state. Each test binary uses a part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;

use serde_json::{Value, json};

pub const REPOSITORY: &str = "octo-org/ml-models";
pub const WRITE_TOKEN: &str = "ghs_writeToken4f9a0c1d2e3b";
pub const READ_TOKEN: &str = "ghs_readOnlyToken77b1e2f3a4c5";
pub const BASE_SHA: &str = "1111111111111111111111111111111111111111";
pub const HEAD_SHA: &str = "2222222222222222222222222222222222222222";
pub const PULL: u64 = 7;
pub const SUMMARY_MARKER: &str = "<!-- distribute:summary -->";
pub const SUGGESTION_MARKER: &str = "<!-- distribute:suggestion -->";
pub const TRAIN: &str = "mnist_keras/train.py";

pub fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Installs the emulator's npm packages once per test binary.
pub fn setup_tools() {
    static READY: OnceLock<()> = OnceLock::new();
    READY.get_or_init(|| {
        let status = Command::new(repository_root().join("scripts/setup-github-test-tools"))
            .status()
            .expect("running scripts/setup-github-test-tools");
        assert!(status.success(), "scripts/setup-github-test-tools failed");
    });
}

/// The emulator, a child process on 127.0.0.1; it exits with its stdin.
pub struct Emulator {
    pub child: Child,
    pub _stdin: ChildStdin,
    pub url: String,
}

impl Emulator {
    pub fn start() -> Emulator {
        setup_tools();
        let mut child = Command::new("node")
            .arg(repository_root().join("tests/github/emulator/server.mjs"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting node tests/github/emulator/server.mjs");
        let stdin = child.stdin.take().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("the emulator said {line:?}"))
            .to_string();
        Emulator {
            child,
            _stdin: stdin,
            url,
        }
    }

    pub fn control(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/_emulator/{path}", self.url);
        let mut response = match (method, body) {
            ("GET", _) => ureq::get(&url).call(),
            ("POST", Some(body)) => ureq::post(&url).send_json(body),
            _ => unreachable!(),
        }
        .unwrap_or_else(|error| panic!("{method} {url}: {error}"));
        response.body_mut().read_json().unwrap()
    }

    pub fn seed(&self, seed: Value) {
        self.control("POST", "seed", Some(seed));
    }

    pub fn inject_faults(&self, faults: Value) {
        self.control("POST", "faults", Some(faults));
    }

    pub fn state(&self) -> Value {
        self.control("GET", "state", None)
    }

    pub fn event(&self, query: &str) -> Value {
        self.control("GET", &format!("event?{query}"), None)
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The checked-out pull request: the shipped example package.
pub fn workspace() -> tempfile::TempDir {
    let directory = tempfile::tempdir().unwrap();
    crate::support::copy_tree(
        &repository_root().join("examples/mnist_keras"),
        directory.path(),
    );
    directory
}

pub fn head_train_source() -> String {
    std::fs::read_to_string(repository_root().join("examples/mnist_keras").join(TRAIN)).unwrap()
}

/// The base branch's train.py: the pull request switched SGD to Adam.
pub fn base_train_source() -> String {
    let head = head_train_source();
    let base = head.replace("tf.keras.optimizers.Adam(", "tf.keras.optimizers.SGD(");
    assert_ne!(
        base, head,
        "the example's optimizer line changed: update this test"
    );
    base
}

/// GitHub's `patch` of a file: the hunks of a unified diff, no header.
pub fn patch(base: &str, head: &str) -> String {
    similar::TextDiff::from_lines(base, head)
        .unified_diff()
        .context_radius(3)
        .to_string()
}

pub fn added_patch(head: &str) -> String {
    patch("", head)
}

pub fn changed_file(filename: &str, patch: &str) -> Value {
    json!({"filename": filename, "status": "modified", "additions": 1, "deletions": 1, "patch": patch})
}

/// The repository, its collaborators, and pull request #7 from `feature` into `main`.
pub fn seed(files: Vec<Value>, head_repository: &str) -> Value {
    let workspace_files: serde_json::Map<String, Value> =
        ["__init__.py", "data.py", "model.py", "train.py"]
            .iter()
            .map(|name| {
                let path = format!("mnist_keras/{name}");
                let text = std::fs::read_to_string(
                    repository_root().join("examples/mnist_keras").join(&path),
                )
                .unwrap();
                (path, Value::String(text))
            })
            .collect();
    json!({
        "tokens": {
            WRITE_TOKEN: {"user": "github-actions[bot]", "can_write": true},
            READ_TOKEN: {"user": "github-actions[bot]", "can_write": false},
        },
        "users": {"alice": {"type": "User"}, "bob": {"type": "User"}, "carol": {"type": "User"}},
        "repos": [{"full_name": REPOSITORY, "default_branch": "main", "private": false}],
        "permissions": {REPOSITORY: {"alice": "admin", "carol": "maintain", "bob": "read"}},
        "branches": {REPOSITORY: {"main": BASE_SHA, "feature": HEAD_SHA}},
        "commits": {HEAD_SHA: {"parents": [BASE_SHA], "message": "Switch to Adam", "files": workspace_files}},
        "pulls": [{
            "repo": REPOSITORY, "number": PULL, "title": "Switch to Adam", "body": "Adam converges faster.",
            "user": "alice", "state": "open",
            "head": {"repo": head_repository, "ref": "feature", "sha": HEAD_SHA},
            "base": {"repo": REPOSITORY, "ref": "main", "sha": BASE_SHA},
            "files": files,
        }],
        "issues": [{"repo": REPOSITORY, "number": 8, "title": "Training is slow", "user": "alice"}],
    })
}

/// The usual pull request: train.py's optimizer line changed, and the README.
pub fn optimizer_change_files() -> Vec<Value> {
    vec![
        changed_file(TRAIN, &patch(&base_train_source(), &head_train_source())),
        changed_file("README.md", "@@ -1 +1 @@\n-# old\n+# new"),
    ]
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub step_summary: String,
    pub outputs: String,
}

impl Run {
    pub fn output(&self, name: &str) -> Option<&str> {
        self.outputs
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{name}=")))
    }
}

/// Runs `distribute github` as the action does, in `workspace`.
pub fn run_bot(
    emulator: &Emulator,
    workspace: &Path,
    event_name: &str,
    payload: &Value,
    token: &str,
    arguments: &[&str],
) -> Run {
    run_bot_with(
        emulator,
        workspace,
        event_name,
        payload,
        token,
        arguments,
        &[],
    )
}

pub fn run_bot_with(
    emulator: &Emulator,
    workspace: &Path,
    event_name: &str,
    payload: &Value,
    token: &str,
    arguments: &[&str],
    environment: &[(&str, &str)],
) -> Run {
    let job = tempfile::tempdir().unwrap();
    let event_path = job.path().join("event.json");
    std::fs::write(&event_path, serde_json::to_string(payload).unwrap()).unwrap();
    let summary_path = job.path().join("summary.md");
    let output_path = job.path().join("output.txt");
    let output = Command::new(env!("CARGO_BIN_EXE_distribute"))
        .arg("github")
        .args(arguments)
        .current_dir(workspace)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_EVENT_NAME", event_name)
        .env("GITHUB_EVENT_PATH", &event_path)
        .env("GITHUB_REPOSITORY", REPOSITORY)
        .env("GITHUB_API_URL", &emulator.url)
        .env("GITHUB_SERVER_URL", "https://github.com")
        .env("GITHUB_RUN_ID", "4242")
        .env("GITHUB_TOKEN", token)
        .env("GITHUB_STEP_SUMMARY", &summary_path)
        .env("GITHUB_OUTPUT", &output_path)
        .env("GITHUB_WORKSPACE", workspace)
        .envs(environment.iter().copied())
        .output()
        .unwrap();
    let run = Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        step_summary: std::fs::read_to_string(&summary_path).unwrap_or_default(),
        outputs: std::fs::read_to_string(&output_path).unwrap_or_default(),
    };
    for (what, text) in [
        ("stdout", &run.stdout),
        ("stderr", &run.stderr),
        ("job summary", &run.step_summary),
        ("outputs", &run.outputs),
    ] {
        assert!(
            !text.contains(WRITE_TOKEN) && !text.contains(READ_TOKEN),
            "the token appeared in the {what}"
        );
    }
    run
}

/// A `pull_request` event with `action` for #7, handled in `mode`.
pub fn on_pull_request(
    emulator: &Emulator,
    workspace: &Path,
    action: &str,
    token: &str,
    mode: &str,
) -> Run {
    let event = pull_request_event(emulator, action);
    run_bot(
        emulator,
        workspace,
        "pull_request",
        &event,
        token,
        &["--mode", mode],
    )
}

/// An `issue_comment` event, handled with the action's default options.
pub fn on_comment(emulator: &Emulator, workspace: &Path, event: &Value) -> Run {
    run_bot(
        emulator,
        workspace,
        "issue_comment",
        event,
        WRITE_TOKEN,
        &[],
    )
}

pub fn pull_request_event(emulator: &Emulator, action: &str) -> Value {
    emulator.event(&format!(
        "name=pull_request&repo={REPOSITORY}&number={PULL}&action={action}"
    ))
}

/// Seeds the usual pull request plus a comment by `user` on `issue`, runs the
/// bot on that comment, and checks that it exited 0 and sent only valid requests.
pub fn run_command(emulator: &Emulator, issue: u64, user: &str, body: &str) -> Value {
    let event = comment_event(
        emulator,
        seed(optimizer_change_files(), REPOSITORY),
        issue,
        user,
        body,
    );
    let run = on_comment(emulator, workspace().path(), &event);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let state = emulator.state();
    assert_clean(&state);
    state
}

/// Adds a comment to the state and returns its `issue_comment` event.
pub fn comment_event(
    emulator: &Emulator,
    mut seed: Value,
    issue: u64,
    user: &str,
    body: &str,
) -> Value {
    seed["issue_comments"] = json!([{"repo": REPOSITORY, "issue_number": issue, "id": 1001, "user": user, "body": body}]);
    emulator.seed(seed);
    emulator.event(&format!(
        "name=issue_comment&repo={REPOSITORY}&comment_id=1001"
    ))
}

pub fn items<'a>(state: &'a Value, key: &str) -> Vec<&'a Value> {
    state[key].as_array().unwrap().iter().collect()
}

pub fn bot_comments(state: &Value, issue: u64) -> Vec<&Value> {
    items(state, "issue_comments")
        .into_iter()
        .filter(|comment| {
            comment["user"]["login"] == "github-actions[bot]"
                && comment["issue_url"]
                    .as_str()
                    .is_some_and(|url| url.ends_with(&format!("/issues/{issue}")))
        })
        .collect()
}

pub fn summaries(state: &Value) -> Vec<&Value> {
    bot_comments(state, PULL)
        .into_iter()
        .filter(|comment| {
            comment["body"]
                .as_str()
                .unwrap()
                .starts_with(SUMMARY_MARKER)
        })
        .collect()
}

pub fn reactions_on(state: &Value, comment_id: u64) -> Vec<String> {
    items(state, "reactions")
        .into_iter()
        .filter(|reaction| reaction["comment_id"] == comment_id)
        .map(|reaction| reaction["content"].as_str().unwrap().to_string())
        .collect()
}

pub fn bot_pulls(state: &Value) -> Vec<&Value> {
    items(state, "pulls")
        .into_iter()
        .filter(|pull| pull["head"]["ref"] == format!("distribute/pr-{PULL}"))
        .collect()
}

pub fn requests<'a>(state: &'a Value, method: &str, path_end: &str) -> Vec<&'a Value> {
    items(state, "requests")
        .into_iter()
        .filter(|request| {
            request["method"] == method && request["path"].as_str().unwrap().ends_with(path_end)
        })
        .collect()
}

/// What every scenario must leave: requests GitHub would accept, an
/// emulator that behaved like GitHub, and no token in anything posted.
pub fn assert_clean(state: &Value) {
    assert_eq!(
        state["violations"],
        json!([]),
        "requests that break GitHub's OpenAPI description"
    );
    assert_eq!(
        state["emulator_errors"],
        json!([]),
        "the emulator misbehaved"
    );
    let posted = serde_json::to_string(&json!([
        state["issue_comments"],
        state["review_comments"],
        state["reviews"],
        state["pulls"],
        state["commits"]
    ]))
    .unwrap();
    assert!(
        !posted.contains(WRITE_TOKEN) && !posted.contains(READ_TOKEN),
        "the token was posted"
    );
}
