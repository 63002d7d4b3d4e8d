//! The `/distribute` command in a pull-request comment. Pure parsing, no I/O:
//! a comment is either not addressed to us, a well-formed command, or ours but
//! malformed (answered with the usage).

/// What a command asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// `/distribute` or `/distribute pr`: open or update a pull request with the rewrite.
    PullRequest,
    /// `/distribute review`: a summary comment and review suggestions.
    Review,
    /// `/distribute help`: answer with the usage.
    Help,
}

/// The result of reading a comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// The comment does not start with `/distribute`: not ours, stay silent.
    NotMine,
    Command(Command),
    /// Starts with `/distribute` but the rest is not understood; the text is what was given.
    Malformed(String),
}

pub const USAGE: &str = "\
| command | what it does |
|---|---|
| `/distribute` or `/distribute pr` | opens (or updates) a pull request into this branch with the Horovod rewrite |
| `/distribute review` | posts the rewrite as review suggestions on the lines this pull request changed, and a summary comment |
| `/distribute help` | shows this message |

Only collaborators with write, maintain or admin permission can run these commands.";

/// Reads a comment body. Only a comment whose first non-blank text is the
/// command counts (a `/distribute` quoted, in a code block or mid-sentence is
/// not a command); the command is its first line.
pub fn parse(body: &str) -> Parsed {
    let trimmed = body.trim_start();
    let Some(rest) = trimmed.strip_prefix("/distribute") else {
        return Parsed::NotMine;
    };
    let first_line = rest.lines().next().unwrap_or("");
    // `/distributed` or `/distribute-foo` is some other command.
    if first_line
        .chars()
        .next()
        .is_some_and(|next| !next.is_whitespace())
    {
        return Parsed::NotMine;
    }
    let words: Vec<&str> = first_line.split_whitespace().collect();
    match words.as_slice() {
        [] | ["pr"] | ["pull-request"] => Parsed::Command(Command::PullRequest),
        ["review"] => Parsed::Command(Command::Review),
        ["help"] => Parsed::Command(Command::Help),
        _ => Parsed::Malformed(first_line.trim().to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_command_and_pr_open_a_pull_request() {
        assert_eq!(parse("/distribute"), Parsed::Command(Command::PullRequest));
        assert_eq!(
            parse("  /distribute pr\r\n"),
            Parsed::Command(Command::PullRequest)
        );
        assert_eq!(
            parse("/distribute\n\nplease, thanks"),
            Parsed::Command(Command::PullRequest)
        );
    }

    #[test]
    fn review_and_help() {
        assert_eq!(
            parse("/distribute review"),
            Parsed::Command(Command::Review)
        );
        assert_eq!(
            parse("/distribute   help  "),
            Parsed::Command(Command::Help)
        );
    }

    #[test]
    fn other_text_is_not_ours() {
        assert_eq!(parse("LGTM"), Parsed::NotMine);
        assert_eq!(parse("/distributed training looks fine"), Parsed::NotMine);
        assert_eq!(parse("please run /distribute"), Parsed::NotMine);
        assert_eq!(parse("> /distribute\nquoted"), Parsed::NotMine);
        assert_eq!(parse("```\n/distribute\n```"), Parsed::NotMine);
        assert_eq!(parse(""), Parsed::NotMine);
    }

    #[test]
    fn unknown_arguments_are_ours_but_malformed() {
        assert_eq!(
            parse("/distribute fix everything"),
            Parsed::Malformed("fix everything".to_string())
        );
    }
}
