//! The `/distribute` command in a comment: who may run it, what each command
//! does, and what is answered where, driven as in `github_bot.rs`.

mod github_support;
mod support;

use github_support::*;

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
