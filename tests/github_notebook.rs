//! The pull-request bot on a pull request that adds a training notebook,
//! driven as in `tests/github_bot.rs` (an event payload, the REST API played
//! by `tests/github/emulator`, which validates every request against GitHub's
//! OpenAPI description). A suggestion block on a notebook's JSON would be of no
//! use to a reviewer: review mode puts the notebook's rewrite, cell by cell,
//! in the summary comment; pull-request mode commits the rewritten notebook.

mod github_support;
mod support;

use std::path::Path;
use std::process::Command;

use github_support::{Emulator, items, repository_root};
use serde_json::{Value, json};

const REPOSITORY: &str = "octo-org/ml-notebooks";
const TOKEN: &str = "ghs_notebookWriteToken5d6e7f";
const BASE_SHA: &str = "3333333333333333333333333333333333333333";
const HEAD_SHA: &str = "4444444444444444444444444444444444444444";
const PULL: u64 = 12;
const SUMMARY_MARKER: &str = "<!-- distribute:summary -->";
/// The package of the end-to-end notebook case: a notebook importing its model from a module.
const PACKAGE_FILES: [&str; 2] = ["train.ipynb", "model_def.py"];

fn case_file(name: &str) -> String {
    std::fs::read_to_string(
        repository_root()
            .join("tests/e2e/keras_notebook_cells")
            .join(name),
    )
    .unwrap()
}

/// The repository and pull request #12, which adds the notebook and its model module.
fn seed() -> Value {
    let files: serde_json::Map<String, Value> = PACKAGE_FILES
        .iter()
        .map(|name| (name.to_string(), Value::String(case_file(name))))
        .collect();
    let changed: Vec<Value> = PACKAGE_FILES
        .iter()
        .map(|name| {
            let patch = similar::TextDiff::from_lines("", case_file(name).as_str())
                .unified_diff()
                .to_string();
            json!({"filename": name, "status": "added", "additions": 1, "deletions": 0, "patch": patch})
        })
        .collect();
    json!({
        "tokens": {TOKEN: {"user": "github-actions[bot]", "can_write": true}},
        "users": {"alice": {"type": "User"}},
        "repos": [{"full_name": REPOSITORY, "default_branch": "main", "private": false}],
        "permissions": {REPOSITORY: {"alice": "admin"}},
        "branches": {REPOSITORY: {"main": BASE_SHA, "notebook": HEAD_SHA}},
        "commits": {HEAD_SHA: {"parents": [BASE_SHA], "message": "Add the training notebook", "files": files}},
        "pulls": [{
            "repo": REPOSITORY, "number": PULL, "title": "Training notebook", "body": "Trains the classifier.",
            "user": "alice", "state": "open",
            "head": {"repo": REPOSITORY, "ref": "notebook", "sha": HEAD_SHA},
            "base": {"repo": REPOSITORY, "ref": "main", "sha": BASE_SHA},
            "files": changed,
        }],
    })
}

/// The checked-out pull request.
fn workspace() -> tempfile::TempDir {
    let directory = tempfile::tempdir().unwrap();
    for name in PACKAGE_FILES {
        std::fs::write(directory.path().join(name), case_file(name)).unwrap();
    }
    // Without the warm-up callback the scaled rate keeps its DST102 advice:
    // a diagnostic in a cell, which the summary must locate by cell.
    std::fs::write(
        directory.path().join(".distribute.yml"),
        "warmup_epochs: 0\n",
    )
    .unwrap();
    directory
}

/// Runs `distribute github --mode <mode>` on the `opened` event as the action does.
fn run_bot(emulator: &Emulator, workspace: &Path, mode: &str) -> Value {
    let event = emulator.event(&format!(
        "name=pull_request&repo={REPOSITORY}&number={PULL}&action=opened"
    ));
    let job = tempfile::tempdir().unwrap();
    let event_path = job.path().join("event.json");
    std::fs::write(&event_path, serde_json::to_string(&event).unwrap()).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_distribute"))
        .args(["github", "--mode", mode])
        .current_dir(workspace)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_EVENT_NAME", "pull_request")
        .env("GITHUB_EVENT_PATH", &event_path)
        .env("GITHUB_REPOSITORY", REPOSITORY)
        .env("GITHUB_API_URL", &emulator.url)
        .env("GITHUB_SERVER_URL", "https://github.com")
        .env("GITHUB_RUN_ID", "4343")
        .env("GITHUB_TOKEN", TOKEN)
        .env("GITHUB_STEP_SUMMARY", job.path().join("summary.md"))
        .env("GITHUB_OUTPUT", job.path().join("output.txt"))
        .env("GITHUB_WORKSPACE", workspace)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let state = emulator.state();
    assert_eq!(
        state["violations"],
        json!([]),
        "requests GitHub would refuse"
    );
    assert_eq!(state["emulator_errors"], json!([]));
    state
}

fn summary(state: &Value) -> String {
    let summaries: Vec<&str> = items(state, "issue_comments")
        .into_iter()
        .filter_map(|comment| comment["body"].as_str())
        .filter(|body| body.starts_with(SUMMARY_MARKER))
        .collect();
    assert_eq!(summaries.len(), 1, "one summary comment");
    summaries[0].to_string()
}

#[test]
fn review_mode_puts_a_notebooks_rewrite_in_the_summary_cell_by_cell() {
    let emulator = Emulator::start();
    emulator.seed(seed());
    let workspace = workspace();
    let state = run_bot(&emulator, workspace.path(), "review");

    assert_eq!(
        items(&state, "review_comments").len(),
        0,
        "no suggestion on the notebook's JSON"
    );
    let summary = summary(&state);
    assert!(summary.contains("`train.ipynb:cell 6:2`"), "{summary}");
    assert!(summary.contains("The rewrite:"), "{summary}");
    assert!(summary.contains(" cell 6\n"), "{summary}");
    assert!(
        summary.contains("+optimizer = hvd.DistributedOptimizer(optimizer)"),
        "{summary}"
    );
    assert!(
        !summary.contains("\"source\""),
        "the summary shows cells, not JSON:\n{summary}"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("train.ipynb")).unwrap(),
        case_file("train.ipynb"),
        "the bot never writes the checkout"
    );
}

#[test]
fn pull_request_mode_commits_the_rewritten_notebook() {
    let emulator = Emulator::start();
    emulator.seed(seed());
    let workspace = workspace();
    let state = run_bot(&emulator, workspace.path(), "pull-request");

    let commit_sha = state["refs"][REPOSITORY][format!("refs/heads/distribute/pr-{PULL}")]
        .as_str()
        .expect("the branch distribute/pr-12");
    let commit = items(&state, "commits")
        .into_iter()
        .find(|commit| commit["sha"] == commit_sha)
        .unwrap();
    let tree = items(&state, "trees")
        .into_iter()
        .find(|tree| tree["sha"] == commit["tree"])
        .expect("the commit's tree");

    // The committed notebook is what `distribute fix` writes.
    let pristine = crate::workspace();
    let fix = Command::new(env!("CARGO_BIN_EXE_distribute"))
        .args(["fix", "--root"])
        .arg(pristine.path())
        .output()
        .unwrap();
    assert_eq!(fix.status.code(), Some(1));
    let expected = std::fs::read_to_string(pristine.path().join("train.ipynb")).unwrap();
    assert_ne!(expected, case_file("train.ipynb"));
    assert_eq!(tree["files"]["train.ipynb"]["content"], expected);
    assert_eq!(
        tree["files"]["model_def.py"]["content"],
        case_file("model_def.py")
    );
    assert_eq!(
        tree["sent"].as_array().map(Vec::len),
        Some(1),
        "only the notebook is sent: {}",
        tree["sent"]
    );
}
