//! What the checker's verdicts make of a rewrite, as ruff's fix safety:
//! every obligation proven, the rewrite is safe and applied by default; some
//! unknown, it is unsafe and applied only when the user asks for unsafe
//! fixes; any violated, it is withdrawn and never written.

use super::{Decision, Verdict};

/// How a rewrite may be applied.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Applicability {
    /// Every invariant shown: `fix`, the hook and the bot apply it.
    Safe,
    /// Some obligation open: applied only with `--unsafe-fixes`.
    Unsafe,
}

impl Applicability {
    pub fn name(self) -> &'static str {
        match self {
            Applicability::Safe => "safe",
            Applicability::Unsafe => "unsafe",
        }
    }
}

/// The fate of a rewrite, from the decisions about the program it makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judgement {
    Apply(Applicability),
    /// The checker knows the program to be wrong: it is not written.
    Withdraw,
}

pub fn judge(decisions: &[Decision]) -> Judgement {
    let worst = decisions.iter().map(|decision| decision.verdict).max();
    match worst {
        Some(Verdict::Violated) => Judgement::Withdraw,
        Some(Verdict::Unknown) => Judgement::Apply(Applicability::Unsafe),
        Some(Verdict::Proven) | None => Judgement::Apply(Applicability::Safe),
    }
}
