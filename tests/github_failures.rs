//! What a busy or restricted GitHub does to the bot: a fork's read-only
//! token, server errors, rate limits, timeouts, and a repository where
//! Actions may not open pull requests; driven as in `github_bot.rs`.

mod github_support;
mod support;

use github_support::*;
use serde_json::{Value, json};

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
