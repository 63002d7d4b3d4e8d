//! Output formats, one file each. Reports format; they do not decide exit codes.

pub mod github;
pub mod json;
pub mod markdown;
pub mod sarif;
pub mod text;

use similar::TextDiff;

/// The unified diff of one rewrite, with `a/` and `b/` headers like git's.
pub fn unified_diff(relative_path: &str, original: &str, rewritten: &str) -> String {
    TextDiff::from_lines(original, rewritten)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{relative_path}"), &format!("b/{relative_path}"))
        .to_string()
}
