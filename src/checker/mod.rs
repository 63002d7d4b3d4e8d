//! The checker: an independent judge of the distributed program. It reads a
//! module as it will be run (the rewrite, re-parsed and re-analysed with the
//! same semantic index the rules use, never the rules' record of what they
//! did) and decides each invariant of a correct Horovod program as proven,
//! violated or unknown, with the place that decides it.
//!
//! One invariant is one file in `invariants/`, with its documentation and
//! its code. What the verdicts mean for a rewrite (safe, unsafe, withdrawn)
//! is decided in [`applicability`]; the engine acts on it. The checker never
//! prints and never touches files.

pub mod applicability;
pub mod invariants;
pub mod program;

use std::ops::Range;

use crate::diagnostics::Code;
pub use program::Program;

/// What the checker could show about one obligation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    Proven,
    /// Could be neither shown nor refuted: the rewrite becomes unsafe.
    Unknown,
    /// Shown to be broken: the rewrite is withdrawn.
    Violated,
}

/// One decided obligation, at the place (in the checked text) that decides it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub code: Code,
    pub verdict: Verdict,
    pub range: Range<usize>,
    /// What was shown or could not be shown, and the construct that decides it.
    pub message: String,
    /// What the user can do about it.
    pub suggestion: Option<String>,
}

impl Decision {
    pub fn new(
        code: Code,
        verdict: Verdict,
        range: Range<usize>,
        message: impl Into<String>,
    ) -> Self {
        Decision {
            code,
            verdict,
            range,
            message: message.into(),
            suggestion: None,
        }
    }

    pub fn with_suggestion(mut self, suggestion: impl Into<String>) -> Self {
        self.suggestion = Some(suggestion.into());
        self
    }
}

/// One invariant of a correct Horovod program.
pub trait Invariant: Sync {
    /// The code its diagnostics carry.
    fn code(&self) -> Code;

    /// The decisions for the training loops of the program. An empty list
    /// means the invariant does not concern this program (nothing to show).
    fn check(&self, program: &Program) -> Vec<Decision>;
}

/// The invariants a checker decides; all of them unless a test removes one.
pub struct Checker {
    invariants: Vec<&'static dyn Invariant>,
}

impl Default for Checker {
    fn default() -> Self {
        Checker {
            invariants: invariants::ALL.to_vec(),
        }
    }
}

impl Checker {
    /// A checker without the invariant of `code` (to show that it, and not
    /// the rules, is what stops a defect).
    pub fn without(code: Code) -> Checker {
        Checker {
            invariants: invariants::ALL
                .iter()
                .copied()
                .filter(|invariant| invariant.code() != code)
                .collect(),
        }
    }

    /// Every decision about the program, in source order.
    pub fn check(&self, program: &Program) -> Vec<Decision> {
        let mut decisions: Vec<Decision> = self
            .invariants
            .iter()
            .flat_map(|invariant| invariant.check(program))
            .collect();
        decisions.sort_by_key(|decision| (decision.range.start, decision.code));
        decisions.dedup();
        decisions
    }
}

/// The checker's codes, one per invariant.
pub fn codes() -> Vec<Code> {
    invariants::ALL
        .iter()
        .map(|invariant| invariant.code())
        .collect()
}

#[cfg(test)]
mod tests;
