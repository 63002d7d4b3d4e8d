//! Diagnostics: one code per assumption, with a stable id, a kebab-case name
//! and a default severity, so that users can configure each one. Codes are
//! declared next to the rule, pass or invariant that raises them; the
//! registry at the top of the crate (`crate::registry`) gathers them and
//! hands the list down to what looks codes up.

use std::ops::Range;

use crate::python::edit::Edit;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// A diagnostic code. The ids are stable: never reuse one. Two codes are the
/// same code when their ids are.
#[derive(Debug, Clone, Copy)]
pub struct Code {
    id: &'static str,
    name: &'static str,
    default_severity: Severity,
    summary: &'static str,
}

impl Code {
    /// Declares a code: `DST104`, `device-pinning-removed`, its default
    /// severity, and one sentence saying what it means.
    pub const fn new(
        id: &'static str,
        name: &'static str,
        default_severity: Severity,
        summary: &'static str,
    ) -> Code {
        Code {
            id,
            name,
            default_severity,
            summary,
        }
    }

    pub fn id(self) -> &'static str {
        self.id
    }

    pub fn name(self) -> &'static str {
        self.name
    }

    pub fn default_severity(self) -> Severity {
        self.default_severity
    }

    pub fn summary(self) -> &'static str {
        self.summary
    }

    /// Looks a code up among `codes` by its id (`DST001`, any case) or name
    /// (`import-not-at-top`).
    pub fn from_id_or_name(text: &str, codes: &[Code]) -> Option<Code> {
        codes
            .iter()
            .find(|code| code.id.eq_ignore_ascii_case(text) || code.name == text)
            .cloned()
    }
}

impl PartialEq for Code {
    fn eq(&self, other: &Code) -> bool {
        self.id == other.id
    }
}

impl Eq for Code {}

impl std::hash::Hash for Code {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

impl PartialOrd for Code {
    fn partial_cmp(&self, other: &Code) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Code {
    fn cmp(&self, other: &Code) -> std::cmp::Ordering {
        self.id.cmp(other.id)
    }
}

/// One broken or relied-upon assumption, at the statement that concerns it,
/// with the edits it explains. Turning the code `off` drops those edits too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub code: Code,
    pub severity: Severity,
    /// Byte range in the original file.
    pub range: Range<usize>,
    pub message: String,
    pub suggestion: Option<String>,
    /// The edits this diagnostic explains (the fix that belongs to it).
    pub fix: Vec<Edit>,
}

impl Diagnostic {
    pub fn new(code: Code, range: Range<usize>, message: impl Into<String>) -> Self {
        Diagnostic {
            code,
            severity: code.default_severity(),
            range,
            message: message.into(),
            suggestion: None,
            fix: Vec::new(),
        }
    }

    pub fn with_suggestion(mut self, suggestion: impl Into<String>) -> Self {
        self.suggestion = Some(suggestion.into());
        self
    }

    /// Attaches the edits this diagnostic explains.
    pub fn with_fix(mut self, edits: Vec<Edit>) -> Self {
        self.fix = edits;
        self
    }
}
