//! `distribute github` driven as GitHub Actions drives it: an event payload
//! (from `@octokit/webhooks-examples`, adapted to this test's repository) in
//! `GITHUB_EVENT_PATH`, and the REST API played by the emulator in
//! `tests/github/emulator`, which validates every request against GitHub's
//! OpenAPI description (`@octokit/openapi`) and keeps comments, reviews,
//! refs and pull requests. `scripts/setup-github-test-tools` installs both
//! npm packages when missing. Every test ends by checking that no request
//! broke the description and that the token never appeared anywhere.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;

use serde_json::{Value, json};

const REPOSITORY: &str = "octo-org/ml-models";
const WRITE_TOKEN: &str = "ghs_writeToken4f9a0c1d2e3b";
const READ_TOKEN: &str = "ghs_readOnlyToken77b1e2f3a4c5";
const BASE_SHA: &str = "1111111111111111111111111111111111111111";
const HEAD_SHA: &str = "2222222222222222222222222222222222222222";
const PULL: u64 = 7;
const SUMMARY_MARKER: &str = "<!-- distribute:summary -->";
const SUGGESTION_MARKER: &str = "<!-- distribute:suggestion -->";
const TRAIN: &str = "mnist_keras/train.py";

fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Installs the emulator's npm packages once per test binary.
fn setup_tools() {
    static READY: OnceLock<()> = OnceLock::new();
    READY.get_or_init(|| {
        let status = Command::new(repository_root().join("scripts/setup-github-test-tools"))
            .status()
            .expect("running scripts/setup-github-test-tools");
        assert!(status.success(), "scripts/setup-github-test-tools failed");
    });
}

/// The emulator, a child process on 127.0.0.1; it exits with its stdin.
struct Emulator {
    child: Child,
    _stdin: ChildStdin,
    url: String,
}

impl Emulator {
    fn start() -> Emulator {
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

    fn control(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/_emulator/{path}", self.url);
        let mut response = match (method, body) {
            ("GET", _) => ureq::get(&url).call(),
            ("POST", Some(body)) => ureq::post(&url).send_json(body),
            _ => unreachable!(),
        }
        .unwrap_or_else(|error| panic!("{method} {url}: {error}"));
        response.body_mut().read_json().unwrap()
    }

    fn seed(&self, seed: Value) {
        self.control("POST", "seed", Some(seed));
    }

    fn inject_faults(&self, faults: Value) {
        self.control("POST", "faults", Some(faults));
    }

    fn state(&self) -> Value {
        self.control("GET", "state", None)
    }

    fn event(&self, query: &str) -> Value {
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
fn workspace() -> tempfile::TempDir {
    let directory = tempfile::tempdir().unwrap();
    support::copy_tree(
        &repository_root().join("examples/mnist_keras"),
        directory.path(),
    );
    directory
}

fn head_train_source() -> String {
    std::fs::read_to_string(repository_root().join("examples/mnist_keras").join(TRAIN)).unwrap()
}

/// The base branch's train.py: the pull request switched SGD to Adam.
fn base_train_source() -> String {
    let head = head_train_source();
    let base = head.replace("tf.keras.optimizers.Adam(", "tf.keras.optimizers.SGD(");
    assert_ne!(
        base, head,
        "the example's optimizer line changed: update this test"
    );
    base
}

/// GitHub's `patch` of a file: the hunks of a unified diff, no header.
fn patch(base: &str, head: &str) -> String {
    similar::TextDiff::from_lines(base, head)
        .unified_diff()
        .context_radius(3)
        .to_string()
}

fn added_patch(head: &str) -> String {
    patch("", head)
}

fn changed_file(filename: &str, patch: &str) -> Value {
    json!({"filename": filename, "status": "modified", "additions": 1, "deletions": 1, "patch": patch})
}

/// The repository, its collaborators, and pull request #7 from `feature` into `main`.
fn seed(files: Vec<Value>, head_repository: &str) -> Value {
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
fn optimizer_change_files() -> Vec<Value> {
    vec![
        changed_file(TRAIN, &patch(&base_train_source(), &head_train_source())),
        changed_file("README.md", "@@ -1 +1 @@\n-# old\n+# new"),
    ]
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    step_summary: String,
    outputs: String,
}

impl Run {
    fn output(&self, name: &str) -> Option<&str> {
        self.outputs
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{name}=")))
    }
}

/// Runs `distribute github` as the action does, in `workspace`.
fn run_bot(
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

fn run_bot_with(
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
fn on_pull_request(
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
fn on_comment(emulator: &Emulator, workspace: &Path, event: &Value) -> Run {
    run_bot(
        emulator,
        workspace,
        "issue_comment",
        event,
        WRITE_TOKEN,
        &[],
    )
}

fn pull_request_event(emulator: &Emulator, action: &str) -> Value {
    emulator.event(&format!(
        "name=pull_request&repo={REPOSITORY}&number={PULL}&action={action}"
    ))
}

/// Seeds the usual pull request plus a comment by `user` on `issue`, runs the
/// bot on that comment, and checks that it exited 0 and sent only valid requests.
fn run_command(emulator: &Emulator, issue: u64, user: &str, body: &str) -> Value {
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
fn comment_event(
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

fn items<'a>(state: &'a Value, key: &str) -> Vec<&'a Value> {
    state[key].as_array().unwrap().iter().collect()
}

fn bot_comments(state: &Value, issue: u64) -> Vec<&Value> {
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

fn summaries(state: &Value) -> Vec<&Value> {
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

fn reactions_on(state: &Value, comment_id: u64) -> Vec<String> {
    items(state, "reactions")
        .into_iter()
        .filter(|reaction| reaction["comment_id"] == comment_id)
        .map(|reaction| reaction["content"].as_str().unwrap().to_string())
        .collect()
}

fn bot_pulls(state: &Value) -> Vec<&Value> {
    items(state, "pulls")
        .into_iter()
        .filter(|pull| pull["head"]["ref"] == format!("distribute/pr-{PULL}"))
        .collect()
}

fn requests<'a>(state: &'a Value, method: &str, path_end: &str) -> Vec<&'a Value> {
    items(state, "requests")
        .into_iter()
        .filter(|request| {
            request["method"] == method && request["path"].as_str().unwrap().ends_with(path_end)
        })
        .collect()
}

/// What every scenario must leave: requests GitHub would accept, an
/// emulator that behaved like GitHub, and no token in anything posted.
fn assert_clean(state: &Value) {
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

#[test]
fn review_mode_posts_one_summary_and_suggestions_on_changed_lines_and_a_rerun_adds_nothing() {
    let emulator = Emulator::start();
    emulator.seed(seed(optimizer_change_files(), REPOSITORY));
    let workspace = workspace();

    let first = on_pull_request(&emulator, workspace.path(), "opened", WRITE_TOKEN, "review");
    assert_eq!(first.code, 0, "{}\n{}", first.stdout, first.stderr);
    let state = emulator.state();
    assert_clean(&state);

    // One review, whose one suggestion replaces the optimizer line the PR changed.
    assert_eq!(items(&state, "reviews").len(), 1);
    let review = items(&state, "reviews")[0];
    assert_eq!(review["commit_id"], HEAD_SHA);
    let comments = items(&state, "review_comments");
    assert_eq!(comments.len(), 1, "{comments:#?}");
    let suggestion = comments[0];
    let optimizer_line = head_train_source()
        .lines()
        .position(|line| line.contains("tf.keras.optimizers.Adam("))
        .unwrap() as u64
        + 1;
    assert_eq!(suggestion["path"], TRAIN);
    assert_eq!(suggestion["line"], optimizer_line);
    let body = suggestion["body"].as_str().unwrap();
    assert!(body.starts_with("```suggestion\n"), "{body}");
    assert!(
        body.contains("Adam(learning_rate=args.lr * hvd.size())"),
        "{body}"
    );
    assert!(
        body.contains("optimizer = hvd.DistributedOptimizer(optimizer)"),
        "{body}"
    );
    assert!(body.ends_with(SUGGESTION_MARKER));

    // One summary: the diagnostics, and the rest of the rewrite (on lines the PR did not change).
    let summary_comments = summaries(&state);
    assert_eq!(summary_comments.len(), 1);
    let summary = summary_comments[0]["body"].as_str().unwrap();
    assert!(summary.contains("DST102"), "{summary}");
    assert!(summary.contains(&format!("`{TRAIN}:")), "{summary}");
    assert!(summary.contains("1 suggestion"), "{summary}");
    assert!(
        summary.contains("+import horovod.tensorflow.keras as hvd"),
        "{summary}"
    );
    assert!(summary.contains("+hvd.init()"), "{summary}");
    assert!(
        !summary.contains("+    optimizer = hvd.DistributedOptimizer(optimizer)"),
        "the suggested hunk is repeated in the summary:\n{summary}"
    );
    assert_eq!(first.output("rewritten-files"), Some("1"));
    assert_eq!(first.output("diagnostics"), Some("1"));
    assert!(
        first.step_summary.contains("distribute: Horovod rewrite"),
        "{}",
        first.step_summary
    );

    // A re-run (a synchronize with the same code) changes nothing: no new comment, review or edit.
    let requests_before = items(&state, "requests").len();
    let again = on_pull_request(
        &emulator,
        workspace.path(),
        "synchronize",
        WRITE_TOKEN,
        "review",
    );
    assert_eq!(again.code, 0, "{}\n{}", again.stdout, again.stderr);
    let state = emulator.state();
    assert_clean(&state);
    assert_eq!(summaries(&state).len(), 1);
    assert_eq!(summaries(&state)[0]["id"], summary_comments[0]["id"]);
    assert_eq!(items(&state, "reviews").len(), 1);
    assert_eq!(items(&state, "review_comments").len(), 1);
    let writes: Vec<&Value> = items(&state, "requests")[requests_before..]
        .iter()
        .copied()
        .filter(|request| request["method"] != "GET")
        .collect();
    assert_eq!(
        writes,
        Vec::<&Value>::new(),
        "a re-run with nothing new wrote"
    );
}

#[test]
fn review_suggestions_that_no_longer_apply_are_deleted() {
    let emulator = Emulator::start();
    emulator.seed(seed(optimizer_change_files(), REPOSITORY));
    let workspace = workspace();
    let first = on_pull_request(&emulator, workspace.path(), "opened", WRITE_TOKEN, "review");
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(items(&emulator.state(), "review_comments").len(), 1);

    // The author writes the optimizer part by hand; the old suggestion is now wrong.
    let train = workspace.path().join(TRAIN);
    let source = std::fs::read_to_string(&train).unwrap();
    let distributed = source.replace(
        "    optimizer = tf.keras.optimizers.Adam(learning_rate=args.lr)\n",
        "    optimizer = tf.keras.optimizers.Adam(learning_rate=args.lr * hvd.size())\n    optimizer = hvd.DistributedOptimizer(optimizer)\n",
    );
    assert_ne!(distributed, source);
    std::fs::write(&train, distributed).unwrap();
    let again = on_pull_request(
        &emulator,
        workspace.path(),
        "synchronize",
        WRITE_TOKEN,
        "review",
    );
    assert_eq!(again.code, 0, "{}", again.stderr);
    let state = emulator.state();
    assert_clean(&state);
    assert_eq!(
        items(&state, "review_comments").len(),
        0,
        "the stale suggestion was left"
    );
    assert_eq!(requests(&state, "DELETE", "").len(), 1);
    assert_eq!(summaries(&state).len(), 1);
}

#[test]
fn pull_request_mode_opens_one_pull_request_and_a_rerun_updates_nothing() {
    let emulator = Emulator::start();
    emulator.seed(seed(optimizer_change_files(), REPOSITORY));
    let workspace = workspace();
    let first = on_pull_request(
        &emulator,
        workspace.path(),
        "opened",
        WRITE_TOKEN,
        "pull-request",
    );
    assert_eq!(first.code, 0, "{}\n{}", first.stdout, first.stderr);
    let state = emulator.state();
    assert_clean(&state);

    let pulls = bot_pulls(&state);
    assert_eq!(pulls.len(), 1, "{pulls:#?}");
    let bot_pull = pulls[0];
    assert_eq!(
        bot_pull["base"]["ref"], "feature",
        "the rewrite goes into the PR's head branch"
    );
    assert_eq!(bot_pull["state"], "open");
    let number = bot_pull["number"].as_u64().unwrap();
    assert_eq!(
        first.output("pull-request"),
        Some(number.to_string().as_str())
    );
    assert!(bot_pull["body"].as_str().unwrap().contains("DST102"));

    // The branch's commit has the PR head as parent, and its tree differs from the
    // head's by train.py, which is exactly what `distribute fix` writes.
    let commit_sha = state["refs"][REPOSITORY][format!("refs/heads/distribute/pr-{PULL}")]
        .as_str()
        .expect("the branch distribute/pr-7");
    let commit = items(&state, "commits")
        .into_iter()
        .find(|commit| commit["sha"] == commit_sha)
        .unwrap();
    assert_eq!(commit["parents"], json!([HEAD_SHA]));
    let tree = items(&state, "trees")
        .into_iter()
        .find(|tree| tree["sha"] == commit["tree"])
        .expect("the commit's tree");
    let pristine = crate::workspace();
    let fix = Command::new(env!("CARGO_BIN_EXE_distribute"))
        .args(["fix", "--root"])
        .arg(pristine.path())
        .output()
        .unwrap();
    assert_eq!(fix.status.code(), Some(1));
    for name in ["__init__.py", "data.py", "model.py", "train.py"] {
        let path = format!("mnist_keras/{name}");
        let expected = std::fs::read_to_string(pristine.path().join(&path)).unwrap();
        assert_eq!(
            tree["files"][&path]["content"], expected,
            "{path} in the bot's commit"
        );
    }
    assert_eq!(
        tree["sent"].as_array().map(Vec::len),
        Some(1),
        "only train.py is sent: {}",
        tree["sent"]
    );

    let summary = summaries(&state);
    assert_eq!(summary.len(), 1);
    assert!(
        summary[0]["body"]
            .as_str()
            .unwrap()
            .contains(&format!("#{number}"))
    );

    let commits_before = items(&state, "commits").len();
    let again = on_pull_request(
        &emulator,
        workspace.path(),
        "synchronize",
        WRITE_TOKEN,
        "pull-request",
    );
    assert_eq!(again.code, 0, "{}", again.stderr);
    let state = emulator.state();
    assert_clean(&state);
    assert_eq!(bot_pulls(&state).len(), 1);
    assert_eq!(summaries(&state).len(), 1);
    assert_eq!(
        items(&state, "commits").len(),
        commits_before,
        "a re-run made a new commit"
    );
    assert_eq!(
        requests(
            &state,
            "PATCH",
            &format!("/git/refs/heads/distribute/pr-{PULL}")
        )
        .len(),
        0
    );
    assert_eq!(requests(&state, "POST", "/pulls").len(), 1);
}

#[test]
fn a_command_from_a_user_without_write_permission_gets_a_polite_reply_and_nothing_else() {
    let emulator = Emulator::start();
    let state = run_command(&emulator, PULL, "bob", "/distribute");
    let replies = bot_comments(&state, PULL);
    assert_eq!(replies.len(), 1);
    let reply = replies[0]["body"].as_str().unwrap();
    assert!(
        reply.contains("@bob") && reply.contains("write access"),
        "{reply}"
    );
    assert_eq!(reactions_on(&state, 1001), Vec::<String>::new());
    assert!(bot_pulls(&state).is_empty());
    assert!(items(&state, "reviews").is_empty());
    assert!(
        requests(&state, "GET", "/files").is_empty(),
        "the refused command was analysed"
    );
}

#[test]
fn a_command_from_a_maintainer_opens_the_pull_request_and_reacts() {
    let emulator = Emulator::start();
    let state = run_command(&emulator, PULL, "carol", "/distribute");
    assert_eq!(reactions_on(&state, 1001), vec!["eyes", "rocket"]);
    assert_eq!(bot_pulls(&state).len(), 1);
    assert_eq!(summaries(&state).len(), 1);
}

#[test]
fn review_and_help_commands() {
    let emulator = Emulator::start();
    let state = run_command(&emulator, PULL, "alice", "/distribute review");
    assert_eq!(items(&state, "reviews").len(), 1);
    assert!(bot_pulls(&state).is_empty());
    assert_eq!(reactions_on(&state, 1001), vec!["eyes", "rocket"]);

    let state = run_command(&emulator, PULL, "alice", "/distribute help");
    let replies = bot_comments(&state, PULL);
    assert_eq!(replies.len(), 1);
    assert!(
        replies[0]["body"]
            .as_str()
            .unwrap()
            .contains("`/distribute review`")
    );
    assert!(requests(&state, "GET", "/files").is_empty());

    let state = run_command(&emulator, PULL, "alice", "/distribute now please");
    let replies = bot_comments(&state, PULL);
    assert_eq!(replies.len(), 1);
    assert!(
        replies[0]["body"]
            .as_str()
            .unwrap()
            .contains("I do not know `/distribute now please`")
    );
    assert_eq!(reactions_on(&state, 1001), vec!["eyes", "confused"]);
}

#[test]
fn a_command_on_an_issue_that_is_not_a_pull_request_is_answered() {
    let emulator = Emulator::start();
    let state = run_command(&emulator, 8, "alice", "/distribute");
    let replies = bot_comments(&state, 8);
    assert_eq!(replies.len(), 1);
    assert!(
        replies[0]["body"]
            .as_str()
            .unwrap()
            .contains("pull requests only")
    );
    assert_eq!(reactions_on(&state, 1001), vec!["eyes", "confused"]);
    assert!(bot_pulls(&state).is_empty());
}

#[test]
fn help_is_answered_on_an_issue_that_is_not_a_pull_request() {
    let emulator = Emulator::start();
    let state = run_command(&emulator, 8, "alice", "/distribute help");
    let replies = bot_comments(&state, 8);
    assert_eq!(replies.len(), 1);
    let body = replies[0]["body"].as_str().unwrap();
    assert!(body.contains("`/distribute review`"), "{body}");
    assert!(!body.contains("pull requests only"), "{body}");
    assert_eq!(reactions_on(&state, 1001), vec!["eyes", "rocket"]);
}

#[test]
fn a_fork_pull_request_with_a_read_only_token_falls_back_to_annotations_and_the_job_summary() {
    let emulator = Emulator::start();
    emulator.seed(seed(optimizer_change_files(), "someone/ml-models"));
    let run = on_pull_request(
        &emulator,
        workspace().path(),
        "opened",
        READ_TOKEN,
        "review",
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let state = emulator.state();
    assert_clean(&state);
    assert!(
        items(&state, "requests")
            .iter()
            .any(|request| request["status"] == 403)
    );
    assert!(bot_comments(&state, PULL).is_empty());
    assert!(items(&state, "reviews").is_empty());
    assert!(
        run.stdout
            .contains("::warning title=distribute::cannot write to the pull request"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(&format!("::notice file={TRAIN},")),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("DST102"), "{}", run.stdout);
    assert!(
        run.step_summary
            .contains("hvd.DistributedOptimizer(optimizer)"),
        "{}",
        run.step_summary
    );
    assert!(
        run.step_summary.contains("read-only token"),
        "{}",
        run.step_summary
    );
}

#[test]
fn a_server_error_then_success_is_retried_without_duplicating() {
    let emulator = Emulator::start();
    emulator.seed(seed(optimizer_change_files(), REPOSITORY));
    emulator.inject_faults(json!([
        {"method": "GET", "path": "^/repos/[^/]+/[^/]+/pulls/\\d+/files$", "status": 502, "times": 1, "body": {"message": "Bad Gateway"}},
        {"method": "POST", "path": "^/repos/[^/]+/[^/]+/issues/\\d+/comments$", "status": 500, "times": 1, "body": {"message": "Server Error"}},
    ]));
    let run = on_pull_request(
        &emulator,
        workspace().path(),
        "opened",
        WRITE_TOKEN,
        "review",
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let state = emulator.state();
    assert_clean(&state);
    assert_eq!(summaries(&state).len(), 1);
    let statuses: Vec<&Value> = requests(&state, "POST", &format!("/issues/{PULL}/comments"))
        .iter()
        .map(|request| &request["status"])
        .collect();
    assert_eq!(statuses, [&json!(500), &json!(201)]);
    assert!(
        run.stderr.contains("HTTP 500 (server error); retrying"),
        "{}",
        run.stderr
    );
}

#[test]
fn rate_limits_with_retry_after_or_a_reset_time_are_waited_out() {
    let emulator = Emulator::start();
    emulator.seed(seed(optimizer_change_files(), REPOSITORY));
    let reset = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 1;
    emulator.inject_faults(json!([
        {"method": "GET", "path": "^/repos/[^/]+/[^/]+/pulls/\\d+/files$", "status": 403, "times": 1,
         "headers": {"retry-after": "1"}, "body": {"message": "You have exceeded a secondary rate limit."}},
        {"method": "POST", "path": "^/repos/[^/]+/[^/]+/pulls/\\d+/reviews$", "status": 429, "times": 1,
         "headers": {"retry-after": "1"}, "body": {"message": "Too many requests"}},
        // The primary limit: no retry-after, the reset time instead.
        {"method": "GET", "path": "^/repos/[^/]+/[^/]+/issues/\\d+/comments$", "status": 403, "times": 1,
         "headers": {"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset.to_string()},
         "body": {"message": "API rate limit exceeded for installation ID 1."}},
    ]));
    let started = std::time::Instant::now();
    let run = on_pull_request(
        &emulator,
        workspace().path(),
        "opened",
        WRITE_TOKEN,
        "review",
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    // Honouring two `retry-after: 1` takes at least two seconds (a lower bound, not a timing test).
    assert!(started.elapsed() >= std::time::Duration::from_secs(2));
    let state = emulator.state();
    assert_clean(&state);
    assert_eq!(items(&state, "reviews").len(), 1);
    assert_eq!(summaries(&state).len(), 1);
    assert_eq!(requests(&state, "POST", "/reviews").len(), 2);
    assert_eq!(requests(&state, "GET", "/files").len(), 2);
    let comment_listings: Vec<&Value> =
        requests(&state, "GET", &format!("/issues/{PULL}/comments"))
            .iter()
            .map(|request| &request["status"])
            .collect();
    assert_eq!(comment_listings, [&json!(403), &json!(200)]);
}

#[test]
fn a_request_that_times_out_is_retried() {
    let emulator = Emulator::start();
    emulator.seed(seed(optimizer_change_files(), REPOSITORY));
    emulator.inject_faults(json!([
        {"method": "GET", "path": "^/repos/[^/]+/[^/]+/pulls/\\d+/files$", "delay_ms": 3000, "times": 1},
    ]));
    let run = run_bot_with(
        &emulator,
        workspace().path(),
        "pull_request",
        &pull_request_event(&emulator, "opened"),
        WRITE_TOKEN,
        &["--mode", "review"],
        &[("DISTRIBUTE_GITHUB_TIMEOUT_SECONDS", "1")],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("timed out; retrying"), "{}", run.stderr);
    let state = emulator.state();
    assert_clean(&state);
    assert_eq!(summaries(&state).len(), 1);
    assert_eq!(items(&state, "reviews").len(), 1);
}

#[test]
fn a_pull_request_without_training_code_gets_no_comment() {
    let emulator = Emulator::start();
    let data =
        std::fs::read_to_string(repository_root().join("examples/mnist_keras/mnist_keras/data.py"))
            .unwrap();
    emulator.seed(seed(
        vec![
            changed_file("mnist_keras/data.py", &added_patch(&data)),
            changed_file("README.md", "@@ -1 +1 @@\n-a\n+b"),
        ],
        REPOSITORY,
    ));
    let run = on_pull_request(
        &emulator,
        workspace().path(),
        "opened",
        WRITE_TOKEN,
        "review",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let state = emulator.state();
    assert_clean(&state);
    assert!(bot_comments(&state, PULL).is_empty());
    assert!(items(&state, "reviews").is_empty());
    assert!(
        run.step_summary.contains("Nothing to do"),
        "{}",
        run.step_summary
    );
    assert_eq!(run.output("rewritten-files"), Some("0"));
}

#[test]
fn a_pull_request_with_hundreds_of_files_and_one_too_large_to_comment_on() {
    let emulator = Emulator::start();
    let mut files: Vec<Value> = (0..340)
        .map(|index| {
            changed_file(
                &format!("configs/run_{index:03}.yaml"),
                "@@ -1 +1 @@\n-a: 1\n+a: 2",
            )
        })
        .collect();
    // GitHub omits the patch of a file whose diff is too large: nothing can be commented there.
    files.push(json!({"filename": TRAIN, "status": "modified", "additions": 900, "deletions": 2}));
    emulator.seed(seed(files, REPOSITORY));
    let run = on_pull_request(
        &emulator,
        workspace().path(),
        "opened",
        WRITE_TOKEN,
        "review",
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let state = emulator.state();
    assert_clean(&state);
    assert_eq!(
        requests(&state, "GET", "/files").len(),
        4,
        "341 files are 4 pages of 100"
    );
    assert!(items(&state, "reviews").is_empty());
    let summary = summaries(&state);
    assert_eq!(summary.len(), 1);
    let body = summary[0]["body"].as_str().unwrap();
    assert!(
        body.contains("+    optimizer = hvd.DistributedOptimizer(optimizer)"),
        "{body}"
    );
}

#[test]
fn comment_mode_puts_the_whole_rewrite_in_the_summary() {
    let emulator = Emulator::start();
    emulator.seed(seed(optimizer_change_files(), REPOSITORY));
    let run = on_pull_request(
        &emulator,
        workspace().path(),
        "opened",
        WRITE_TOKEN,
        "comment",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let state = emulator.state();
    assert_clean(&state);
    assert!(items(&state, "reviews").is_empty());
    let summary = summaries(&state);
    assert_eq!(summary.len(), 1);
    let body = summary[0]["body"].as_str().unwrap();
    assert!(
        body.contains("+    optimizer = hvd.DistributedOptimizer(optimizer)"),
        "{body}"
    );
    assert!(body.contains("+hvd.init()"), "{body}");
}

#[test]
fn when_actions_may_not_open_pull_requests_the_branch_is_pushed_and_the_summary_says_so() {
    let emulator = Emulator::start();
    let mut state = seed(optimizer_change_files(), REPOSITORY);
    state["repos"][0]["actions_can_create_and_approve_prs"] = json!(false);
    emulator.seed(state);
    let run = on_pull_request(
        &emulator,
        workspace().path(),
        "opened",
        WRITE_TOKEN,
        "pull-request",
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let state = emulator.state();
    assert_clean(&state);
    assert!(bot_pulls(&state).is_empty());
    assert!(state["refs"][REPOSITORY][format!("refs/heads/distribute/pr-{PULL}")].is_string());
    let summary = summaries(&state);
    assert_eq!(summary.len(), 1);
    let body = summary[0]["body"].as_str().unwrap();
    assert!(
        body.contains("Allow GitHub Actions to create and approve pull requests"),
        "{body}"
    );
    assert!(body.contains(&format!("distribute/pr-{PULL}")), "{body}");
    assert_eq!(run.output("pull-request"), Some(""));
}

#[test]
fn the_bot_pull_request_is_closed_once_nothing_is_left_to_rewrite() {
    let emulator = Emulator::start();
    emulator.seed(seed(optimizer_change_files(), REPOSITORY));
    let workspace = workspace();
    let first = on_pull_request(
        &emulator,
        workspace.path(),
        "opened",
        WRITE_TOKEN,
        "pull-request",
    );
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(bot_pulls(&emulator.state())[0]["state"], "open");

    // The author merges the rewrite: the next push has nothing left to rewrite.
    let fix = Command::new(env!("CARGO_BIN_EXE_distribute"))
        .args(["fix", "--root"])
        .arg(workspace.path())
        .output()
        .unwrap();
    assert_eq!(fix.status.code(), Some(1));
    let again = on_pull_request(
        &emulator,
        workspace.path(),
        "synchronize",
        WRITE_TOKEN,
        "pull-request",
    );
    assert_eq!(again.code, 0, "{}", again.stderr);
    let state = emulator.state();
    assert_clean(&state);
    let pulls = bot_pulls(&state);
    assert_eq!(pulls.len(), 1);
    assert_eq!(pulls[0]["state"], "closed");
    let summary = summaries(&state);
    assert_eq!(summary.len(), 1);
    assert!(
        !summary[0]["body"]
            .as_str()
            .unwrap()
            .contains("The rewrite is in"),
        "{}",
        summary[0]["body"]
    );
    assert_eq!(again.output("rewritten-files"), Some("0"));
}

#[test]
fn the_emulator_passes_its_own_checks() {
    setup_tools();
    let output = Command::new("node")
        .arg(repository_root().join("tests/github/emulator/selftest.mjs"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn a_pull_request_command_on_a_fork_puts_the_rewrite_in_the_summary_instead() {
    let emulator = Emulator::start();
    let event = comment_event(
        &emulator,
        seed(optimizer_change_files(), "someone/ml-models"),
        PULL,
        "alice",
        "/distribute pr",
    );
    let run = on_comment(&emulator, workspace().path(), &event);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let state = emulator.state();
    assert_clean(&state);
    assert!(bot_pulls(&state).is_empty());
    assert!(requests(&state, "POST", "/git/refs").is_empty());
    let summary = summaries(&state);
    assert_eq!(summary.len(), 1);
    let body = summary[0]["body"].as_str().unwrap();
    assert!(body.contains("lives in a fork"), "{body}");
    assert!(
        body.contains("+    optimizer = hvd.DistributedOptimizer(optimizer)"),
        "{body}"
    );
    assert_eq!(reactions_on(&state, 1001), vec!["eyes", "rocket"]);
}
