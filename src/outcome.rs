//! The outcome of a run, as data: what the engine produces for each module
//! and file, and what the cache stores and the reports render. It sits
//! below all three, so none of them reaches into another for it.

use std::path::PathBuf;

use crate::analysis::package::FileProblem;
use crate::checker::applicability::Applicability;
use crate::diagnostics::Severity;
use crate::python::notebook::CellChange;
use crate::rules::Classification;

/// A diagnostic placed in its file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LocatedDiagnostic {
    pub code: &'static str,
    pub name: &'static str,
    pub severity: Severity,
    /// The notebook cell (1-based, counting every cell) for a notebook: the
    /// lines and columns are then in that cell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cell: Option<usize>,
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
    pub message: String,
    pub suggestion: Option<String>,
    /// In a notebook, the lines of the notebook file where the diagnostic
    /// starts and ends (annotations on the file itself point there).
    #[serde(skip)]
    pub file_lines: Option<(usize, usize)>,
}

/// The outcome for one training module.
#[derive(Debug, Clone)]
pub struct ModuleOutcome {
    pub relative_path: String,
    pub path: PathBuf,
    pub classification: Classification,
    /// The file as read (a notebook's JSON text).
    pub original: String,
    /// The verified rewrite of the file, when it differs from the original.
    pub rewritten: Option<String>,
    /// For a notebook, the code cells the rewrite changes (diffs show these).
    pub cell_changes: Vec<CellChange>,
    pub diagnostics: Vec<LocatedDiagnostic>,
    /// Why a rewrite was produced but refused (it did not parse, edits conflicted).
    pub rewrite_error: Option<String>,
    /// How the checker lets the rewrite be applied (`None`: no rewrite, or
    /// one withdrawn because the checker showed it wrong).
    pub applicability: Option<Applicability>,
    /// An unsafe rewrite this run does not apply (`--unsafe-fixes` would).
    pub held_back: Option<Box<HeldBackRewrite>>,
}

/// An unsafe rewrite kept out of the output, to be counted and shown apart.
#[derive(Debug, Clone)]
pub struct HeldBackRewrite {
    pub rewritten: String,
    pub cell_changes: Vec<CellChange>,
}

impl ModuleOutcome {
    pub fn changed(&self) -> bool {
        self.rewritten.is_some()
    }

    /// Moves an unsafe rewrite out of the output unless unsafe fixes are on.
    pub fn hold_back_unsafe(&mut self, unsafe_fixes: bool) {
        if unsafe_fixes || self.applicability != Some(Applicability::Unsafe) {
            return;
        }
        if let Some(rewritten) = self.rewritten.take() {
            self.held_back = Some(Box::new(HeldBackRewrite {
                rewritten,
                cell_changes: std::mem::take(&mut self.cell_changes),
            }));
        }
    }
}

/// Everything one run found.
#[derive(Debug, Default)]
pub struct RunOutcome {
    pub modules: Vec<ModuleOutcome>,
    pub problems: Vec<FileProblem>,
}

impl RunOutcome {
    /// Holds back every unsafe rewrite unless unsafe fixes are on: what
    /// `fix`, the hook and the bot apply by default is safe rewrites only.
    pub fn hold_back_unsafe(&mut self, unsafe_fixes: bool) {
        for module in &mut self.modules {
            module.hold_back_unsafe(unsafe_fixes);
        }
    }

    /// Unsafe rewrites held back by this run.
    pub fn held_back(&self) -> usize {
        self.modules
            .iter()
            .filter(|module| module.held_back.is_some())
            .count()
    }
}

/// Whether any diagnostic reaches `threshold`.
pub fn has_diagnostic_at_least(outcome: &RunOutcome, threshold: Severity) -> bool {
    outcome
        .modules
        .iter()
        .flat_map(|module| module.diagnostics.iter())
        .any(|diagnostic| diagnostic.severity >= threshold)
}
