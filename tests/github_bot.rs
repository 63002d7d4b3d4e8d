//! `distribute github` driven as GitHub Actions drives it: an event payload
//! (from `@octokit/webhooks-examples`, adapted to this test's repository) in
//! `GITHUB_EVENT_PATH`, and the REST API played by the emulator in
//! `tests/github/emulator`, which validates every request against GitHub's
//! OpenAPI description (`@octokit/openapi`) and keeps comments, reviews,
//! refs and pull requests. `scripts/setup-github-test-tools` installs both
//! npm packages when missing. Every test ends by checking that no request
//! broke the description and that the token never appeared anywhere.

mod github_support;
mod support;

use std::process::Command;

use github_support::*;
use serde_json::{Value, json};

#[test]
fn review_mode_posts_one_summary_and_suggestions_on_changed_lines_and_a_rerun_adds_nothing() {
    let emulator = Emulator::start();
    emulator.seed(seed(optimizer_change_files(), REPOSITORY));
    let workspace = workspace();

    let first = on_pull_request(&emulator, workspace.path(), "opened", WRITE_TOKEN, "review");
    assert_eq!(first.code, 0, "{}\n{}", first.stdout, first.stderr);
    let state = emulator.state();
    assert_clean(&state);

    assert_one_suggestion_on_the_optimizer_line(&state);
    let summary_comments = summaries(&state);
    assert_summary_holds_the_rest_of_the_rewrite(&summary_comments);
    assert_eq!(first.output("rewritten-files"), Some("1"));
    // The optimizer's note and the DST200 diagnostic the rewrite belongs to.
    assert_eq!(first.output("diagnostics"), Some("2"));
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
    assert_no_writes_since(&state, requests_before);
}

/// One review, whose one suggestion replaces the optimizer line the PR changed.
fn assert_one_suggestion_on_the_optimizer_line(state: &Value) {
    assert_eq!(items(state, "reviews").len(), 1);
    let review = items(state, "reviews")[0];
    assert_eq!(review["commit_id"], HEAD_SHA);
    let comments = items(state, "review_comments");
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
}

/// One summary: the diagnostics, and the rest of the rewrite (on lines the PR did not change).
fn assert_summary_holds_the_rest_of_the_rewrite(summary_comments: &[&Value]) {
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
}

fn assert_no_writes_since(state: &Value, requests_before: usize) {
    let writes: Vec<&Value> = items(state, "requests")[requests_before..]
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

    assert_bot_commit_is_what_fix_writes(&state);

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

/// The branch's commit has the PR head as parent, and its tree differs from the
/// head's by train.py, which is exactly what `distribute fix` writes.
fn assert_bot_commit_is_what_fix_writes(state: &Value) {
    let commit_sha = state["refs"][REPOSITORY][format!("refs/heads/distribute/pr-{PULL}")]
        .as_str()
        .expect("the branch distribute/pr-7");
    let commit = items(state, "commits")
        .into_iter()
        .find(|commit| commit["sha"] == commit_sha)
        .unwrap();
    assert_eq!(commit["parents"], json!([HEAD_SHA]));
    let tree = items(state, "trees")
        .into_iter()
        .find(|tree| tree["sha"] == commit["tree"])
        .expect("the commit's tree");
    let pristine = workspace();
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
