//! Splits a rewrite into review suggestions and the rest. A change of the
//! rewrite becomes a ```suggestion on the pull request's head file when the
//! lines it replaces lie in one hunk of the pull request's own diff and at
//! least one of them is a line the pull request added or changed (GitHub
//! only accepts comments inside the diff; a suggestion elsewhere would
//! surprise the author). Every other change goes to the summary comment.

use std::collections::BTreeMap;

use similar::{DiffTag, TextDiff};

/// One ```suggestion review comment: replace lines `start_line..=line` of the
/// head file (1-based, RIGHT side) by `replacement`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    pub path: String,
    /// First line, when the suggestion spans several lines.
    pub start_line: Option<u64>,
    pub line: u64,
    pub replacement: String,
}

impl Suggestion {
    /// The comment text: a fenced suggestion, with a fence longer than any
    /// backtick run in the replacement, then the marker that finds it again.
    pub fn body(&self, marker: &str) -> String {
        let longest_run = self
            .replacement
            .split(|character| character != '`')
            .map(str::len)
            .max()
            .unwrap_or(0);
        let fence = "`".repeat((longest_run + 1).max(3));
        let mut replacement = self.replacement.clone();
        if !replacement.is_empty() && !replacement.ends_with('\n') {
            replacement.push('\n');
        }
        format!("{fence}suggestion\n{replacement}{fence}\n{marker}")
    }
}

/// The outcome for one file.
#[derive(Debug, Clone, Default)]
pub struct SplitRewrite {
    pub suggestions: Vec<Suggestion>,
    /// The original with only the changes that did not become suggestions
    /// applied (equal to the original when every change is a suggestion).
    pub remainder: String,
}

/// Lines of the head file the pull request's diff shows, per hunk: line
/// number -> whether the pull request added it (`+`) rather than kept it as
/// context.
#[derive(Debug, Default)]
pub struct DiffLines {
    hunks: Vec<BTreeMap<u64, bool>>,
}

impl DiffLines {
    /// Reads the `patch` GitHub gives for a file of a pull request.
    pub fn from_patch(patch: &str) -> DiffLines {
        let mut hunks = Vec::new();
        let mut current: Option<(BTreeMap<u64, bool>, u64)> = None;
        for line in patch.lines() {
            if let Some(header) = line.strip_prefix("@@") {
                if let Some((hunk, _)) = current.take() {
                    hunks.push(hunk);
                }
                current = new_side_start(header).map(|start| (BTreeMap::new(), start));
                continue;
            }
            let Some((hunk, next)) = current.as_mut() else {
                continue;
            };
            match line.as_bytes().first() {
                Some(b'+') => {
                    hunk.insert(*next, true);
                    *next += 1;
                }
                Some(b'-') | Some(b'\\') => {}
                // Context (a blank context line may have lost its leading space).
                _ => {
                    hunk.insert(*next, false);
                    *next += 1;
                }
            }
        }
        if let Some((hunk, _)) = current {
            hunks.push(hunk);
        }
        DiffLines { hunks }
    }

    /// Whether lines `first..=last` are in one hunk and the pull request changed one of them.
    pub fn accepts(&self, first: u64, last: u64) -> bool {
        self.hunks.iter().any(|hunk| {
            (first..=last).all(|line| hunk.contains_key(&line))
                && (first..=last).any(|line| hunk.get(&line) == Some(&true))
        })
    }
}

/// `-a,b +c,d @@ ...` -> c.
fn new_side_start(header: &str) -> Option<u64> {
    let plus = header
        .split_whitespace()
        .find(|part| part.starts_with('+'))?;
    plus[1..].split(',').next()?.parse().ok()
}

/// Splits the rewrite of `path` into suggestions that `diff_lines` accepts
/// (at most `limit`) and the remainder.
pub fn split(
    path: &str,
    original: &str,
    rewritten: &str,
    diff_lines: Option<&DiffLines>,
    limit: usize,
) -> SplitRewrite {
    let diff = TextDiff::from_lines(original, rewritten);
    let old_lines: Vec<&str> = diff.iter_old_slices().collect();
    let new_lines: Vec<&str> = diff.iter_new_slices().collect();
    let mut suggestions = Vec::new();
    let mut remainder = String::with_capacity(rewritten.len());
    let mut old_position = 0;
    for change in changes(&diff) {
        remainder.extend(old_lines[old_position..change.old.start].iter().copied());
        old_position = change.old.end;
        let suggestion = diff_lines
            .filter(|_| suggestions.len() < limit)
            .and_then(|diff_lines| {
                let suggestion = as_suggestion(path, &change, &old_lines, &new_lines)?;
                let first = suggestion.start_line.unwrap_or(suggestion.line);
                diff_lines
                    .accepts(first, suggestion.line)
                    .then_some(suggestion)
            });
        match suggestion {
            Some(suggestion) => {
                suggestions.push(suggestion);
                remainder.extend(old_lines[change.old.clone()].iter().copied());
            }
            None => remainder.extend(new_lines[change.new.clone()].iter().copied()),
        }
    }
    remainder.extend(old_lines[old_position..].iter().copied());
    SplitRewrite {
        suggestions,
        remainder,
    }
}

/// A run of changed lines: old lines `old` became new lines `new` (0-based).
struct Change {
    old: std::ops::Range<usize>,
    new: std::ops::Range<usize>,
}

fn changes(diff: &TextDiff<'_, '_, str>) -> Vec<Change> {
    let mut changes: Vec<Change> = Vec::new();
    for op in diff.ops() {
        if op.tag() == DiffTag::Equal {
            continue;
        }
        let (old, new) = (op.old_range(), op.new_range());
        match changes.last_mut() {
            Some(last) if last.old.end == old.start && last.new.end == new.start => {
                last.old.end = old.end;
                last.new.end = new.end;
            }
            _ => changes.push(Change { old, new }),
        }
    }
    changes
}

/// The suggestion that makes `change`. A pure insertion is anchored on the
/// line before it (or the first line, at the top of the file), since a
/// suggestion must replace at least one line.
fn as_suggestion(
    path: &str,
    change: &Change,
    old_lines: &[&str],
    new_lines: &[&str],
) -> Option<Suggestion> {
    let inserted: String = new_lines[change.new.clone()].concat();
    let (first, last, replacement) = if !change.old.is_empty() {
        (change.old.start, change.old.end - 1, inserted)
    } else if change.old.start > 0 {
        let anchor = change.old.start - 1;
        let mut replacement = old_lines[anchor].to_string();
        if !replacement.ends_with('\n') {
            replacement.push('\n');
        }
        replacement.push_str(&inserted);
        (anchor, anchor, replacement)
    } else {
        let first_line = old_lines.first()?;
        (0, 0, format!("{inserted}{first_line}"))
    };
    Some(Suggestion {
        path: path.to_string(),
        start_line: (first != last).then_some(first as u64 + 1),
        line: last as u64 + 1,
        replacement,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIGINAL: &str = "import tensorflow as tf\n\nmodel = build()\nopt = tf.keras.optimizers.Adam(0.01)\nmodel.fit(x, epochs=3)\n";
    const REWRITTEN: &str = "import tensorflow as tf\nimport horovod.tensorflow.keras as hvd\n\nmodel = build()\nopt = tf.keras.optimizers.Adam(0.01 * hvd.size())\nopt = hvd.DistributedOptimizer(opt)\nmodel.fit(x, epochs=3)\n";

    #[test]
    fn patch_lines_are_numbered_on_the_new_side() {
        let lines = DiffLines::from_patch(
            "@@ -1,3 +1,4 @@\n import a\n-old\n+new\n+newer\n context\n@@ -20 +21,2 @@ def f():\n+x\n y",
        );
        assert!(lines.accepts(2, 3)); // both added
        assert!(lines.accepts(1, 2)); // context and added, same hunk
        assert!(!lines.accepts(1, 1)); // context only: the PR did not change it
        assert!(!lines.accepts(4, 4));
        assert!(!lines.accepts(3, 21)); // spans two hunks
        assert!(lines.accepts(21, 22));
    }

    #[test]
    fn changes_on_lines_the_pr_added_become_suggestions_the_rest_stays_in_the_remainder() {
        // The PR added lines 3-5 (everything but the import).
        let lines = DiffLines::from_patch(
            "@@ -1,2 +1,5 @@\n import tensorflow as tf\n \n+model = build()\n+opt = tf.keras.optimizers.Adam(0.01)\n+model.fit(x, epochs=3)\n",
        );
        let split = split("train.py", ORIGINAL, REWRITTEN, Some(&lines), 10);
        assert_eq!(
            split.suggestions,
            vec![Suggestion {
                path: "train.py".into(),
                start_line: None,
                line: 4,
                replacement: "opt = tf.keras.optimizers.Adam(0.01 * hvd.size())\nopt = hvd.DistributedOptimizer(opt)\n".into(),
            }]
        );
        // The import goes after line 1, which the PR did not change: it stays for the summary.
        assert_eq!(
            split.remainder,
            "import tensorflow as tf\nimport horovod.tensorflow.keras as hvd\n\nmodel = build()\nopt = tf.keras.optimizers.Adam(0.01)\nmodel.fit(x, epochs=3)\n"
        );
    }

    #[test]
    fn an_insertion_is_anchored_on_the_line_before_it() {
        let lines = DiffLines::from_patch(
            "@@ -0,0 +1,5 @@\n+import tensorflow as tf\n+\n+model = build()\n+opt = tf.keras.optimizers.Adam(0.01)\n+model.fit(x, epochs=3)\n",
        );
        let split = split("train.py", ORIGINAL, REWRITTEN, Some(&lines), 10);
        assert_eq!(split.suggestions.len(), 2);
        assert_eq!(split.suggestions[0].line, 1);
        assert_eq!(
            split.suggestions[0].replacement,
            "import tensorflow as tf\nimport horovod.tensorflow.keras as hvd\n"
        );
        assert_eq!(split.remainder, ORIGINAL);
    }

    #[test]
    fn without_a_patch_or_over_the_limit_everything_stays_in_the_remainder() {
        let split_none = split("train.py", ORIGINAL, REWRITTEN, None, 10);
        assert!(split_none.suggestions.is_empty());
        assert_eq!(split_none.remainder, REWRITTEN);
        let lines = DiffLines::from_patch("@@ -0,0 +1,5 @@\n+a\n+b\n+c\n+d\n+e\n");
        let limited = split("train.py", ORIGINAL, REWRITTEN, Some(&lines), 1);
        assert_eq!(limited.suggestions.len(), 1);
        assert_ne!(limited.remainder, ORIGINAL);
    }

    #[test]
    fn suggestion_fence_is_longer_than_backticks_inside() {
        let suggestion = Suggestion {
            path: "a.py".into(),
            start_line: Some(1),
            line: 2,
            replacement: "s = '```'".into(),
        };
        assert_eq!(
            suggestion.body("<!-- m -->"),
            "````suggestion\ns = '```'\n````\n<!-- m -->"
        );
    }
}
