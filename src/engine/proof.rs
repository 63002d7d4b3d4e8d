//! The checker's place in the pipeline, after the rules and before the
//! report: every rewritten module, and every module that already uses
//! Horovod, is re-read as it will run (the package with the rewrites in
//! place, parsed and analysed afresh) and judged by the invariants. A
//! rewrite with every obligation proven is safe; with some unknown it is
//! unsafe (one warning per open obligation); with any violated it is
//! withdrawn (one error per violation). Hand-written Horovod code gets an
//! error per violation.

use std::collections::HashSet;

use super::{LocatedDiagnostic, ModuleOutcome, locate, sort_diagnostics, write_back_to_notebook};
use crate::analysis::package::{Package, ReadFile};
use crate::analysis::training::Analysis;
use crate::checker::applicability::{Judgement, judge};
use crate::checker::program::Origin;
use crate::checker::{Checker, Decision, Program, Verdict};
use crate::diagnostics::Severity;
use crate::python::edit::{Edit, EditMap};
use crate::python::source::SourceFile;
use crate::workspace::config::Config;

/// A module's outcome before the checker has judged its rewrite.
pub struct Candidate {
    pub outcome: ModuleOutcome,
    /// The rules' edits of the module's (Python) text.
    pub edits: Vec<Edit>,
    /// The verified rewrite of the module's Python text.
    pub rewritten: Option<String>,
    /// The module used Horovod before the rewrite.
    pub uses_horovod: bool,
}

impl Candidate {
    fn is_checked(&self) -> bool {
        self.rewritten.is_some() || self.uses_horovod
    }
}

/// Judges every candidate and returns the outcomes to report.
pub fn judge_rewrites(
    analysis: &Analysis,
    mut candidates: Vec<Candidate>,
    config: &Config,
) -> Vec<ModuleOutcome> {
    if candidates.iter().any(Candidate::is_checked) {
        let had_rewrite: Vec<bool> = candidates
            .iter()
            .map(|candidate| candidate.rewritten.is_some())
            .collect();
        let package = package_as_rewritten(analysis.package, &candidates);
        let checked = Analysis::with_catalogue(&package, analysis.catalogue.clone());
        for candidate in candidates
            .iter_mut()
            .filter(|candidate| candidate.is_checked())
        {
            let decisions = decide(analysis, &checked, candidate, config);
            let in_users_code = violations_as_written(analysis, candidate, config);
            apply_judgement(analysis, candidate, decisions, config);
            report_violations_as_written(analysis, candidate, in_users_code);
        }
        super::linked::couple(analysis, &mut candidates, &had_rewrite);
    }
    candidates
        .into_iter()
        .map(|candidate| candidate.outcome)
        .collect()
}

/// The package as it will run: each rewritten module's text in place of the
/// original, loaded around the modules to check.
fn package_as_rewritten(package: &Package, candidates: &[Candidate]) -> Package {
    let rewritten: std::collections::HashMap<&str, (&str, &[crate::python::edit::Edit])> =
        candidates
            .iter()
            .filter_map(|candidate| {
                Some((
                    candidate.outcome.relative_path.as_str(),
                    (candidate.rewritten.as_deref()?, candidate.edits.as_slice()),
                ))
            })
            .collect();
    let files = package
        .modules
        .iter()
        .map(|module| {
            let source = &module.source;
            let rewrite = rewritten.get(source.relative_path.as_str());
            Ok(ReadFile {
                relative_path: source.relative_path.clone(),
                path: source.path.clone(),
                text: rewrite.map_or_else(|| source.text.clone(), |(text, _)| text.to_string()),
                notebook: None,
                recorded: source.recorded,
                shell_commands: match rewrite {
                    Some((_, edits)) => moved_shell_commands(source, edits),
                    None => source.shell_commands.clone(),
                },
            })
        })
        .collect();
    let selected: HashSet<String> = candidates
        .iter()
        .filter(|candidate| candidate.is_checked())
        .map(|candidate| candidate.outcome.relative_path.clone())
        .collect();
    Package::from_read_files(&package.root, files, Some(&selected))
}

/// A notebook's shell lines where the rewrite moved them (the rules never
/// edit a shell line).
fn moved_shell_commands(
    source: &crate::python::source::SourceFile,
    edits: &[crate::python::edit::Edit],
) -> Vec<crate::python::notebook::ShellCommand> {
    let starts: Vec<usize> = source
        .shell_commands
        .iter()
        .map(|command| command.range.start)
        .collect();
    let moved = crate::python::edit::shifted_offsets(&source.text, edits, &starts);
    source
        .shell_commands
        .iter()
        .zip(moved)
        .filter_map(|(command, start)| {
            let start = start?;
            Some(crate::python::notebook::ShellCommand {
                range: start..start + command.range.len(),
                command: command.command.clone(),
                stands_alone: command.stands_alone,
                continued_lines: command.continued_lines,
            })
        })
        .collect()
}

/// The checker's decisions about one module, the codes the user turned off left out.
fn decide(
    analysis: &Analysis,
    checked: &Analysis,
    candidate: &Candidate,
    config: &Config,
) -> Vec<Decision> {
    let relative_path = &candidate.outcome.relative_path;
    let Some(module) = checked
        .modules
        .iter()
        .find(|module| &module.module.source.relative_path == relative_path)
    else {
        return Vec::new();
    };
    let original = original_text(analysis, relative_path);
    let origin = candidate.rewritten.as_ref().map(|_| Origin {
        text: original,
        map: EditMap::new(original, &candidate.edits),
        lines: crate::python::source::LineIndex::new(original),
    });
    let program = Program {
        analysis: checked,
        module,
        text: &module.module.source.text,
        generated: origin
            .as_ref()
            .map(|origin| origin.map.written())
            .unwrap_or_default(),
        origin,
        written_with_horovod: candidate.uses_horovod,
        resolved_calls: Default::default(),
    };
    Checker::default()
        .check(&program)
        .into_iter()
        .filter(|decision| config.severity_of(decision.code).is_some())
        .collect()
}

/// Code written with Horovod that the rules complete: the violations in
/// the code as the user wrote it, each an error at its line (the rewrite,
/// judged on its own, is the fix offered).
fn violations_as_written(
    analysis: &Analysis,
    candidate: &Candidate,
    config: &Config,
) -> Vec<Decision> {
    if !candidate.uses_horovod || candidate.rewritten.is_none() {
        return Vec::new();
    }
    let relative_path = &candidate.outcome.relative_path;
    let Some(module) = analysis
        .modules
        .iter()
        .find(|module| &module.module.source.relative_path == relative_path)
    else {
        return Vec::new();
    };
    let program = Program {
        analysis,
        module,
        text: &module.module.source.text,
        generated: Vec::new(),
        origin: None,
        written_with_horovod: true,
        resolved_calls: Default::default(),
    };
    Checker::default()
        .check(&program)
        .into_iter()
        .filter(|decision| decision.verdict == Verdict::Violated)
        .filter(|decision| config.severity_of(decision.code).is_some())
        .collect()
}

/// Adds the violations found in the user's own code, saying whether the
/// offered rewrite fixes each.
fn report_violations_as_written(
    analysis: &Analysis,
    candidate: &mut Candidate,
    violations: Vec<Decision>,
) {
    let Some(module) = analysis
        .package
        .modules
        .iter()
        .find(|module| module.source.relative_path == candidate.outcome.relative_path)
    else {
        return;
    };
    let outcome = &mut candidate.outcome;
    let fix = match (outcome.applicability, outcome.held_back.is_some()) {
        (Some(crate::checker::applicability::Applicability::Safe), _) => {
            "; the rewrite offered fixes it"
        }
        (Some(_), _) => "; the unsafe rewrite offered fixes it (`--unsafe-fixes`)",
        (None, _) => "",
    };
    for violation in violations {
        let diagnostic = locate(
            &module.source,
            violation.code,
            Severity::Error,
            violation.range.clone(),
            in_cells(&module.source, &format!("{}{fix}", violation.message)),
            violation.suggestion.clone(),
        );
        let reported = outcome
            .diagnostics
            .iter()
            .any(|known| known.code == diagnostic.code && known.line == diagnostic.line);
        if !reported {
            outcome.diagnostics.push(diagnostic);
        }
    }
    sort_diagnostics(&mut outcome.diagnostics);
}

/// The checker names lines of the module's text; in a notebook a person
/// looks for a cell and a line in it: `line 69` becomes `cell 40, line 2`.
fn in_cells(source: &SourceFile, message: &str) -> String {
    if source.notebook.is_none() {
        return message.to_string();
    }
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(source.text.match_indices('\n').map(|(at, _)| at + 1))
        .collect();
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("line ") {
        let starts_a_word = rest[..at]
            .chars()
            .next_back()
            .is_none_or(|before| !before.is_alphanumeric());
        let digits: String = rest[at + 5..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let label = digits
            .parse::<usize>()
            .ok()
            .filter(|_| starts_a_word)
            .and_then(|line| line_starts.get(line.checked_sub(1)?))
            .map(|start| source.line_label(*start));
        match label {
            Some(label) => {
                out.push_str(&rest[..at]);
                out.push_str(&label);
                rest = &rest[at + 5 + digits.len()..];
            }
            None => {
                out.push_str(&rest[..at + 5]);
                rest = &rest[at + 5..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn original_text<'a>(analysis: &'a Analysis, relative_path: &str) -> &'a str {
    analysis
        .package
        .modules
        .iter()
        .find(|module| module.source.relative_path == relative_path)
        .map_or("", |module| module.source.text.as_str())
}

/// Acts on the decisions: keeps, marks or withdraws the rewrite, and says why.
fn apply_judgement(
    analysis: &Analysis,
    candidate: &mut Candidate,
    decisions: Vec<Decision>,
    config: &Config,
) {
    let relative_path = candidate.outcome.relative_path.clone();
    let Some(module) = analysis
        .package
        .modules
        .iter()
        .find(|module| module.source.relative_path == relative_path)
    else {
        return;
    };
    let source = &module.source;
    let map = EditMap::new(&source.text, &candidate.edits);
    let has_rewrite = candidate.rewritten.is_some();
    let judgement = judge(&decisions);
    let reported: Vec<&Decision> = decisions
        .iter()
        .filter(|decision| match (judgement, decision.verdict) {
            (_, Verdict::Proven) => false,
            (_, Verdict::Violated) => true,
            // Open obligations matter to a rewrite; hand-written code that
            // the rules leave alone gets only what is shown to be wrong.
            (_, Verdict::Unknown) => has_rewrite,
        })
        .collect();
    let located: Vec<LocatedDiagnostic> = reported
        .into_iter()
        .map(|decision| {
            let range = if has_rewrite {
                map.original_offset(decision.range.start)..map.original_offset(decision.range.end)
            } else {
                decision.range.clone()
            };
            let default = match decision.verdict {
                Verdict::Violated => Severity::Error,
                _ => Severity::Warning,
            };
            let severity = if config.severity.contains_key(&decision.code) {
                config.severity_of(decision.code).unwrap_or(default)
            } else {
                default
            };
            let message = match (decision.verdict, has_rewrite) {
                (Verdict::Violated, true) => format!(
                    "{}; the rewrite of this module was withdrawn",
                    decision.message
                ),
                // Beside a violation the rewrite is withdrawn anyway: the
                // open obligation is one more thing to settle.
                (Verdict::Unknown, _) if judgement == Judgement::Withdraw => format!(
                    "{}; this too stands in the way of the withdrawn rewrite",
                    decision.message
                ),
                (Verdict::Unknown, _) => format!(
                    "{}; the rewrite is unsafe and applied only with `--unsafe-fixes`",
                    decision.message
                ),
                _ => decision.message.clone(),
            };
            locate(
                source,
                decision.code,
                severity,
                range,
                in_cells(source, &message),
                decision.suggestion.clone(),
            )
        })
        .collect();
    let outcome = &mut candidate.outcome;
    if judgement == Judgement::Withdraw && has_rewrite {
        drop_notes(outcome);
    }
    if judgement == Judgement::Apply(crate::checker::applicability::Applicability::Unsafe)
        && has_rewrite
    {
        mark_notes_unsafe(outcome);
    }
    outcome.diagnostics.extend(located);
    sort_diagnostics(&mut outcome.diagnostics);
    let Some(rewritten) = candidate.rewritten.take() else {
        return;
    };
    match judgement {
        Judgement::Withdraw => {}
        Judgement::Apply(applicability) => {
            outcome.applicability = Some(applicability);
            if source.notebook.is_some() {
                write_back_to_notebook(outcome, source, &candidate.edits);
            } else {
                outcome.rewritten = Some(rewritten);
            }
            if outcome.rewritten.is_none() {
                outcome.applicability = None;
            }
        }
    }
}

/// A withdrawn rewrite's notes describe edits that are no longer made.
pub(super) fn drop_notes(outcome: &mut ModuleOutcome) {
    outcome
        .diagnostics
        .retain(|diagnostic| diagnostic.severity != Severity::Info);
}

/// An unsafe rewrite's notes say what it does ("rank 0 now downloads
/// first"), and it is made only when asked for.
pub(super) fn mark_notes_unsafe(outcome: &mut ModuleOutcome) {
    for note in outcome
        .diagnostics
        .iter_mut()
        .filter(|diagnostic| diagnostic.severity == Severity::Info)
    {
        note.message
            .push_str(" (in the unsafe rewrite, applied only with `--unsafe-fixes`)");
    }
}
