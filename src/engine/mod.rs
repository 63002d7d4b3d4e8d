//! The pipeline from files to verified rewrites: load and parse the package
//! once, analyse it once, run the rules on each training module in scope,
//! apply the edits and check that the result parses, then let the checker
//! judge each rewrite (`proof`): safe, unsafe, or withdrawn.

mod linked;
pub use linked::LINKED_REWRITES;
mod proof;

use std::collections::HashSet;
use std::path::PathBuf;

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::analysis::library;
use crate::analysis::package::{FileProblem, Package, ReadFile, enclosing_packages, read_files};
use crate::analysis::training::Analysis;
use crate::cache::{DependencyFacts, RequestInputs, ResultCache};
use crate::diagnostics::Severity;
pub use crate::outcome::{
    HeldBackRewrite, LocatedDiagnostic, ModuleOutcome, RunOutcome, has_diagnostic_at_least,
};
use crate::python::edit::{Edit, apply_edits};
use crate::python::parse::check_rewrite_parses;
use crate::python::source::SourceFile;
use crate::rules::{RuleOptions, rewrite_module};
use crate::workspace::config::Config;
use crate::workspace::discover::discover_python_files;

/// What to analyse and what to report on.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    pub root: PathBuf,
    /// Report and rewrite only these files (relative paths); all when `None`.
    pub scope: Option<HashSet<String>>,
    /// Add to the scope the modules that import a scoped file, transitively
    /// (a training script whose model module changed).
    pub expand_scope_to_dependents: bool,
    pub config: Config,
    /// Read and write the result cache (`crate::cache`); off by default,
    /// the command line turns it on unless `--no-cache`.
    pub use_cache: bool,
    /// Every diagnostic code, handed down from the top (`crate::registry`):
    /// the cache names codes by id and looks them up here.
    pub codes: &'static [crate::diagnostics::Code],
}

/// Runs the whole pipeline on a package.
pub fn run(request: &RunRequest) -> RunOutcome {
    let (mut files, mut discovery_problems) = discover_python_files(&request.root);
    files.retain(|file| request.config.selects(file));
    discovery_problems.retain(|problem| request.config.selects(&problem.relative_path));
    let mut outcome = if request.use_cache {
        run_with_cache(request, &files)
    } else {
        analyse_and_rewrite(request, read_files(&request.root, &files), false).0
    };
    if let Some(scope) = &request.scope {
        discovery_problems.retain(|problem| scope.contains(&problem.relative_path));
    }
    outcome.problems.extend(discovery_problems);
    outcome
        .problems
        .sort_by(|a, b| a.relative_path.cmp(&b.relative_path));
    outcome
}

/// The run with the result cache: stored results of the unchanged import
/// groups, and an analysis of the others (stored for the next run). Files
/// are read only where they changed, or where an analysis needs them.
fn run_with_cache(request: &RunRequest, files: &[String]) -> RunOutcome {
    let inputs = RequestInputs {
        root: &request.root,
        config_file: request.config.source.as_deref(),
        enclosing_packages: &enclosing_packages(&request.root),
        codes: request.codes,
    };
    let mut cache = ResultCache::open(&inputs, files);
    let mut lookup = cache.lookup(request.scope.as_ref(), request.expand_scope_to_dependents);
    cache.settle_files_that_cannot_matter(&mut lookup.missed);
    let mut outcome = lookup.found;
    outcome
        .problems
        .extend(cache.unreadable(request.scope.as_ref()));
    if !lookup.missed.is_empty() {
        let readable = cache.read_all();
        // Nothing stored for a whole-package request: the plain whole run.
        let whole = request.scope.is_none() && lookup.missed.len() == readable.len();
        let missed = RunRequest {
            scope: (!whole).then_some(lookup.missed),
            ..request.clone()
        };
        let (fresh, facts) =
            analyse_and_rewrite(&missed, readable.into_iter().map(Ok).collect(), true);
        cache.add(&fresh, facts);
        outcome.modules.extend(fresh.modules);
        outcome.problems.extend(fresh.problems);
    }
    // In path order, as the analysis reports them.
    outcome
        .modules
        .sort_by(|a, b| a.relative_path.cmp(&b.relative_path));
    cache.save();
    outcome
}

/// Parses and analyses the files read, and rewrites the training modules in
/// scope; with `dependency_facts`, also what the cache keeps of each file of
/// the scope.
fn analyse_and_rewrite(
    request: &RunRequest,
    read: Vec<Result<ReadFile, FileProblem>>,
    dependency_facts: bool,
) -> (RunOutcome, Vec<DependencyFacts>) {
    let readable: Vec<String> = if dependency_facts && request.scope.is_none() {
        read.iter()
            .filter_map(|file| Some(file.as_ref().ok()?.relative_path.clone()))
            .collect()
    } else {
        Vec::new()
    };
    let package = Package::from_read_files(&request.root, read, request.scope.as_ref());
    let options = RuleOptions {
        shard_datasets: request.config.shard_datasets,
        warmup_epochs: request.config.warmup_epochs,
    };
    let analysis = Analysis::with_catalogue(&package, request.config.library.clone());
    let scope = request.scope.as_ref().map(|scope| {
        if request.expand_scope_to_dependents {
            expand_to_dependents(&analysis, scope)
        } else {
            scope.clone()
        }
    });
    let mut outcome = rewrite_in_scope(&analysis, scope.as_ref(), options, &request.config);
    if let Some(scope) = &scope {
        outcome
            .problems
            .retain(|problem| scope.contains(&problem.relative_path));
    }
    let facts = if dependency_facts {
        let analysed = scope.map_or(readable, |scope| scope.into_iter().collect());
        facts_of(&analysis, analysed)
    } else {
        Vec::new()
    };
    // Freeing the syntax trees of a large package is a noticeable part of a
    // run: it happens on a thread of its own while the outcome is reported.
    drop(analysis);
    std::thread::spawn(move || drop(package));
    (outcome, facts)
}

/// What the cache keeps of each analysed file to work out a later request's
/// dependents without analysing.
fn facts_of(analysis: &Analysis, analysed: Vec<String>) -> Vec<DependencyFacts> {
    let decisive = decisive_files(analysis, analysed.iter());
    let mut importers = analysis.package.importers();
    analysed
        .into_iter()
        .map(|relative_path| DependencyFacts {
            decisive: decisive.contains(&relative_path),
            importers: importers
                .remove(relative_path.as_str())
                .unwrap_or_default()
                .into_iter()
                .map(str::to_string)
                .collect(),
            relative_path,
        })
        .collect()
}

/// Adds to the scope the modules whose classification depends on a scoped
/// file: importers (transitively) of a decisive file.
pub fn expand_to_dependents(analysis: &Analysis, scope: &HashSet<String>) -> HashSet<String> {
    let decisive = decisive_files(analysis, scope.iter());
    let mut expanded = analysis.package.with_dependents(&decisive);
    expanded.extend(scope.iter().cloned());
    expanded
}

/// The files whose change can change their importers' rewrites: they define
/// a model, estimator or optimizer class, a model factory, or a function
/// that trains. A changed data utility does not pull the training script in.
fn decisive_files<'a>(
    analysis: &Analysis,
    files: impl Iterator<Item = &'a String>,
) -> HashSet<String> {
    let package = analysis.package;
    // Indexed once: a scope can hold every file of the package.
    let module_of_path: FxHashMap<&str, &crate::analysis::package::Module> = package
        .modules
        .iter()
        .map(|module| (module.source.relative_path.as_str(), module))
        .collect();
    let modules_with_relevant_functions: FxHashSet<&str> = analysis
        .functions
        .values()
        .filter(|summary| summary.returns_model || !summary.reaches.is_empty())
        .map(|summary| summary.module.as_str())
        .collect();
    files
        .filter(|relative_path| {
            let Some(module) = module_of_path.get(relative_path.as_str()) else {
                return false;
            };
            let defines_relevant_class = module.body.iter().any(|stmt| {
                let rustpython_parser::ast::Stmt::ClassDef(class) = stmt else {
                    return false;
                };
                let name = format!("{}.{}", module.name, class.name);
                [
                    library::KERAS_MODEL,
                    library::KERAS_OPTIMIZER,
                    library::KERAS_SCHEDULE,
                    "tensorflow.estimator.Estimator",
                ]
                .iter()
                .any(|ancestor| package.is_subclass(&name, ancestor))
            });
            let defines_relevant_function =
                modules_with_relevant_functions.contains(module.name.as_str());
            defines_relevant_class || defines_relevant_function
        })
        .cloned()
        .collect()
}

/// Runs the rules on the training modules in scope, and verifies each rewrite.
pub fn rewrite_in_scope(
    analysis: &Analysis,
    scope: Option<&HashSet<String>>,
    options: RuleOptions,
    config: &Config,
) -> RunOutcome {
    let package = analysis.package;
    // Modules are rewritten and verified in parallel, in the analysis' order.
    let candidates = analysis
        .modules
        .par_iter()
        .filter_map(|module| rewrite_and_verify(analysis, module, scope, options, config))
        .collect();
    RunOutcome {
        modules: proof::judge_rewrites(analysis, candidates, config),
        problems: package.problems.clone(),
    }
}

/// The verified rewrite of one module in scope, if the rules rewrite it.
fn rewrite_and_verify(
    analysis: &Analysis,
    module: &crate::analysis::training::ModuleAnalysis,
    scope: Option<&HashSet<String>>,
    options: RuleOptions,
    config: &Config,
) -> Option<proof::Candidate> {
    let source = &module.module.source;
    if scope.is_some_and(|scope| !scope.contains(&source.relative_path)) {
        return None;
    }
    let mut result = rewrite_module(analysis, module, options)?;
    // Per-code severity from the configuration; `off` drops the
    // diagnostic and the edits it explains.
    result
        .diagnostics
        .retain_mut(|diagnostic| match config.severity_of(diagnostic.code) {
            Some(severity) => {
                if config.severity.contains_key(&diagnostic.code) {
                    diagnostic.severity = severity;
                }
                true
            }
            None => false,
        });
    let uses_horovod = module
        .module
        .bindings
        .iter()
        .any(|(_, binding)| library::is_horovod(&binding.qualified));
    let mut candidate = verify(source, &module.module.parsed_pieces, result);
    candidate.uses_horovod = uses_horovod;
    Some(candidate)
}

fn verify(
    source: &SourceFile,
    parsed_pieces: &[std::ops::Range<usize>],
    result: crate::rules::ModuleRewriteResult,
) -> proof::Candidate {
    let mut diagnostics: Vec<LocatedDiagnostic> = result
        .diagnostics
        .iter()
        .map(|diagnostic| {
            locate(
                source,
                diagnostic.code,
                diagnostic.severity,
                diagnostic.range.clone(),
                diagnostic.message.clone(),
                diagnostic.suggestion.clone(),
            )
        })
        .collect();
    sort_diagnostics(&mut diagnostics);
    let outcome = ModuleOutcome {
        relative_path: source.relative_path.clone(),
        path: source.path.clone(),
        classification: result.classification,
        original: source.notebook.as_ref().map_or_else(
            || source.text.clone(),
            |notebook| notebook.raw().to_string(),
        ),
        rewritten: None,
        cell_changes: Vec::new(),
        diagnostics,
        rewrite_error: None,
        applicability: None,
        held_back: None,
    };
    let mut edits = Vec::new();
    for diagnostic in result.diagnostics {
        edits.extend(diagnostic.fix);
    }
    let mut candidate = proof::Candidate {
        outcome,
        edits,
        rewritten: None,
        uses_horovod: false,
    };
    match apply_edits(&source.text, &candidate.edits) {
        Err(conflict) => {
            let offset = conflict.second.range.start;
            candidate.outcome.rewrite_error = Some(format!(
                "internal error: two edits conflict at {}, column {}; nothing was rewritten (please report this)",
                source.line_label(offset),
                source.position(offset).1.column
            ));
        }
        Ok(mut rewritten) if rewritten != source.text => {
            if let Some(notebook) = &source.notebook {
                let starts = notebook.magic_line_starts();
                let moved =
                    crate::python::edit::shifted_offsets(&source.text, &candidate.edits, &starts);
                let moves = starts
                    .into_iter()
                    .zip(moved)
                    .filter_map(|(start, moved)| Some((start, moved?)));
                crate::python::magics::placeholders_in_blocks(&source.text, &mut rewritten, moves);
            }
            match check_rewrite_parses(
                &rewritten,
                &source.text,
                parsed_pieces,
                &candidate.edits,
                &source.relative_path,
            ) {
                Ok(_) => candidate.rewritten = Some(rewritten),
                Err(error) => {
                    candidate.outcome.rewrite_error = Some(format!(
                        "internal error: the rewrite does not parse ({error}); nothing was written (please report this)"
                    ))
                }
            }
        }
        Ok(_) => {}
    }
    candidate
}

/// A diagnostic placed in its file (and notebook cell).
fn locate(
    source: &SourceFile,
    code: crate::diagnostics::Code,
    severity: Severity,
    range: std::ops::Range<usize>,
    message: String,
    suggestion: Option<String>,
) -> LocatedDiagnostic {
    let (cell, start) = source.position(range.start);
    let (end_cell, mut end) = source.position(range.end);
    if end_cell != cell {
        // A range ending at the start of the next cell ends with this one.
        end = start;
    }
    LocatedDiagnostic {
        code: code.id(),
        name: code.name(),
        severity,
        cell,
        line: start.line,
        column: start.column,
        end_line: end.line,
        end_column: end.column,
        message,
        suggestion,
        file_lines: source.notebook.as_ref().and_then(|notebook| {
            let cell = cell?;
            Some((
                notebook.file_line(cell, start.line)?,
                notebook.file_line(cell, end.line)?,
            ))
        }),
    }
}

fn sort_diagnostics(diagnostics: &mut Vec<LocatedDiagnostic>) {
    diagnostics.sort_by(|a, b| {
        (a.cell, a.line, a.column, a.code).cmp(&(b.cell, b.line, b.column, b.code))
    });
    diagnostics.dedup();
}

/// Splices the verified edits into the notebook's cells: the outcome's
/// original and rewrite are then the notebook file.
fn write_back_to_notebook(outcome: &mut ModuleOutcome, source: &SourceFile, edits: &[Edit]) {
    let Some(notebook) = &source.notebook else {
        return;
    };
    match notebook.rewrite(edits) {
        Ok(rewrite) if !rewrite.changes.is_empty() => {
            outcome.rewritten = Some(rewrite.text);
            outcome.cell_changes = rewrite.changes;
        }
        Ok(_) => {}
        Err(error) => outcome.rewrite_error = Some(error),
    }
}

/// Runs `work` on a thread with a large stack: syntax trees of real files can
/// be deep, and the walks over them are recursive.
pub fn with_large_stack<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(256 * 1024 * 1024)
        .spawn(work)
        .expect("spawning the analysis thread")
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}
