//! Rewrites that only work together. A module whose training code all runs
//! inside another module's training (the `model_fn` an Estimator is given,
//! the `compile` of a model factory another module fits, a step function
//! another module's loop calls) gets no `hvd.init()` of its own, and the
//! proof of the module driving it leans on the optimizer wrapped there.
//! Applied alone, either half is wrong: a wrapped optimizer that calls
//! `hvd.size()` before any `hvd.init()` raises on every rank, and divided
//! steps beside an unwrapped optimizer train one model per worker. So such
//! modules are applied all or nothing, at the weakest applicability among
//! them, and each one held back for another's sake says which.

use std::collections::HashSet;

use super::LocatedDiagnostic;
use super::proof::Candidate;
use crate::analysis::training::{Analysis, ModuleAnalysis};
use crate::checker::applicability::Applicability;
use crate::diagnostics::{Code, Severity};

pub const LINKED_REWRITES: Code = Code::new(
    "DST312",
    "rewrites-linked-across-modules",
    Severity::Error,
    "A module whose training runs inside another module's training is rewritten only together with it, at the weaker of their applicabilities.",
);

/// How a candidate stands after its own judgement.
#[derive(Clone, Copy, PartialEq)]
enum Standing {
    Applied(Applicability),
    /// Withdrawn by the checker, or left as written without Horovod.
    NotApplied,
}

/// Couples the judged candidates whose training spans modules.
/// `had_rewrite[i]` says whether candidate `i` had a rewrite to judge.
pub fn couple(analysis: &Analysis, candidates: &mut [Candidate], had_rewrite: &[bool]) {
    let modules: Vec<Option<&ModuleAnalysis>> = candidates
        .iter()
        .map(|candidate| module_of(analysis, &candidate.outcome.relative_path))
        .collect();
    let mut groups: Vec<usize> = (0..candidates.len()).collect();
    for (driven, module) in modules.iter().enumerate() {
        let Some(module) = module.filter(|module| is_driven(module)) else {
            continue;
        };
        let path = module.module.source.relative_path.clone();
        let importers = analysis.package.with_dependents(&HashSet::from([path]));
        for (driver, other) in modules.iter().enumerate() {
            if driver != driven
                && other.is_some_and(|other| {
                    drives_training(other) && importers.contains(&other.module.source.relative_path)
                })
            {
                join(&mut groups, driven, driver);
            }
        }
    }
    let standings: Vec<Standing> = candidates
        .iter()
        .zip(had_rewrite)
        .map(|(candidate, &had)| standing(candidate, had))
        .collect();
    for index in 0..candidates.len() {
        let members: Vec<usize> = (0..candidates.len())
            .filter(|&other| root(&mut groups, other) == root(&mut groups, index))
            .collect();
        if members.len() < 2 || !had_rewrite[index] {
            continue;
        }
        let weakest = members
            .iter()
            .filter(|&&other| other != index)
            .map(|&other| (other, standings[other]))
            .min_by_key(|(_, standing)| rank(*standing));
        let Some((other, weakest)) = weakest else {
            continue;
        };
        // A rewrite the checker withdrew still says which module it is
        // linked to, when that one is not applied either.
        let both_withdrawn =
            weakest == Standing::NotApplied && standings[index] == Standing::NotApplied;
        if rank(weakest) >= rank(standings[index]) && !both_withdrawn {
            continue;
        }
        let other_path = candidates[other].outcome.relative_path.clone();
        lower(&mut candidates[index], weakest, &other_path);
    }
}

fn module_of<'a>(analysis: &'a Analysis, relative_path: &str) -> Option<&'a ModuleAnalysis<'a>> {
    analysis
        .modules
        .iter()
        .find(|module| module.module.source.relative_path == relative_path)
}

/// Every site of the module runs inside another module's training, and it
/// does not initialise Horovod itself.
fn is_driven(module: &ModuleAnalysis) -> bool {
    !module.sites.is_empty()
        && module.sites.iter().all(|site| site.is_model_function)
        && module.index.horovod_init.is_none()
}

/// The module runs a training loop of its own.
fn drives_training(module: &ModuleAnalysis) -> bool {
    module.sites.iter().any(|site| !site.is_model_function)
}

fn standing(candidate: &Candidate, had_rewrite: bool) -> Standing {
    match candidate.outcome.applicability {
        Some(applicability) => Standing::Applied(applicability),
        None if !had_rewrite && candidate.uses_horovod => Standing::Applied(Applicability::Safe),
        None => Standing::NotApplied,
    }
}

fn rank(standing: Standing) -> u8 {
    match standing {
        Standing::NotApplied => 0,
        Standing::Applied(Applicability::Unsafe) => 1,
        Standing::Applied(Applicability::Safe) => 2,
    }
}

/// Withdraws the candidate's rewrite, or marks it unsafe, for the sake of
/// the module at `other_path`.
fn lower(candidate: &mut Candidate, to: Standing, other_path: &str) {
    let outcome = &mut candidate.outcome;
    let Some(anchor) = outcome
        .diagnostics
        .iter()
        .find(|diagnostic| diagnostic.code == "DST200")
        .or(outcome.diagnostics.first())
        .cloned()
    else {
        return;
    };
    let (severity, message) = match to {
        Standing::NotApplied => {
            outcome.rewritten = None;
            outcome.cell_changes.clear();
            outcome.applicability = None;
            super::proof::drop_notes(outcome);
            (
                Severity::Error,
                format!(
                    "this module and `{other_path}` make one training across modules (one runs the other's model function, compile or step), and the rewrite of `{other_path}` is not applied: alone, this one would call Horovod where no `hvd.init()` ran, or divide the steps beside an optimizer left unwrapped; the rewrite of this module was withdrawn"
                ),
            )
        }
        Standing::Applied(_) => {
            outcome.applicability = Some(Applicability::Unsafe);
            super::proof::mark_notes_unsafe(outcome);
            (
                Severity::Warning,
                format!(
                    "this module and `{other_path}` make one training across modules (one runs the other's model function, compile or step), and the rewrite of `{other_path}` is unsafe: the two are applied together, so this one is unsafe too and applied only with `--unsafe-fixes`"
                ),
            )
        }
    };
    outcome.diagnostics.push(LocatedDiagnostic {
        code: LINKED_REWRITES.id(),
        name: LINKED_REWRITES.name(),
        severity,
        message,
        suggestion: Some(format!(
            "settle what stands in the way in `{other_path}`, then run the tool again"
        )),
        ..anchor
    });
    super::sort_diagnostics(&mut outcome.diagnostics);
}

fn root(groups: &mut [usize], mut index: usize) -> usize {
    while groups[index] != index {
        groups[index] = groups[groups[index]];
        index = groups[index];
    }
    index
}

fn join(groups: &mut [usize], a: usize, b: usize) {
    let (a, b) = (root(groups, a), root(groups, b));
    if a != b {
        groups[a.max(b)] = a.min(b);
    }
}
