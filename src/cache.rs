//! The on-disk cache of run results, as ruff keeps `.ruff_cache`: a run whose
//! inputs are all unchanged (every selected file's content, the
//! configuration, the requirement files, what is reported, and the build of
//! the tool) reads its outcome back instead of parsing and analysing.
//!
//! The analysis is package-wide (a model module's rewrite depends on the
//! script that fits its model), so a result is only reused when everything
//! it could depend on is the same: correctness before hit rate. A cache that
//! cannot be read, is corrupt or belongs to another build is a miss, never an
//! error; writes are atomic (temporary file, then rename).
//!
//! Location: `.distribute_cache/` at the package root, or the directory named
//! by `DISTRIBUTE_CACHE_DIR`. Delete the directory to clear it.

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::{Xxh3, xxh3_64};

use crate::analysis::package::{FileProblem, ReadFile};
use crate::diagnostics::{Code, Severity};
use crate::engine::{LocatedDiagnostic, ModuleOutcome, RunOutcome};
use crate::python::notebook::CellChange;
use crate::rules::Classification;

/// Identifies the build of the tool: its version and a hash of its sources.
pub const BUILD_ID: &str = env!("DISTRIBUTE_BUILD_ID");

/// The directory name at the package root.
pub const DIRECTORY_NAME: &str = ".distribute_cache";

/// Environment variable that moves the cache elsewhere.
pub const DIRECTORY_VARIABLE: &str = "DISTRIBUTE_CACHE_DIR";

/// Files the analysis reads besides the Python sources (the Keras pin).
const OTHER_INPUTS: &[&str] = crate::analysis::keras_version::REQUIREMENT_FILES;

/// The cache directory for a package root.
pub fn directory_for(root: &Path) -> PathBuf {
    match std::env::var_os(DIRECTORY_VARIABLE) {
        Some(directory) if !directory.is_empty() => PathBuf::from(directory),
        _ => root.join(DIRECTORY_NAME),
    }
}

/// What one run reads and where its result is stored.
pub struct RunCache {
    /// The file holding this request's last result.
    entry: PathBuf,
    /// The cache directory of this build.
    build_directory: PathBuf,
    directory: PathBuf,
    /// A hash of every input; the stored result is used only when it matches.
    key: String,
}

/// What is stored for one request.
#[derive(Serialize, Deserialize)]
struct Entry {
    key: String,
    modules: Vec<CachedModule>,
    problems: Vec<FileProblem>,
}

/// A module outcome as stored: diagnostics name their code by id.
#[derive(Serialize, Deserialize)]
struct CachedModule {
    relative_path: String,
    path: PathBuf,
    classification: Classification,
    original: String,
    rewritten: Option<String>,
    cell_changes: Vec<CellChange>,
    diagnostics: Vec<CachedDiagnostic>,
    rewrite_error: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct CachedDiagnostic {
    code: String,
    severity: Severity,
    cell: Option<usize>,
    line: usize,
    column: usize,
    end_line: usize,
    end_column: usize,
    message: String,
    suggestion: Option<String>,
    file_lines: Option<(usize, usize)>,
}

/// The request's inputs other than the files' contents.
pub struct RequestInputs<'a> {
    pub root: &'a Path,
    pub scope: Option<&'a HashSet<String>>,
    pub expand_scope_to_dependents: bool,
    pub config_file: Option<&'a Path>,
    /// The packages enclosing the root (they prefix module names).
    pub enclosing_packages: &'a [String],
}

impl RunCache {
    /// The cache slot and key of a request over the files as read.
    pub fn new(inputs: &RequestInputs, files: &[Result<ReadFile, FileProblem>]) -> RunCache {
        let directory = directory_for(inputs.root);
        let build_directory = directory.join(BUILD_ID);
        let mut slot = Xxh3::new();
        slot.update(inputs.root.to_string_lossy().as_bytes());
        let mut scope: Vec<&String> = inputs.scope.into_iter().flatten().collect();
        scope.sort();
        slot.update(&[
            inputs.scope.is_some() as u8,
            inputs.expand_scope_to_dependents as u8,
        ]);
        for file in scope {
            slot.update(file.as_bytes());
            slot.update(&[0]);
        }
        let slot = slot.digest128();
        let mut key = Xxh3::new();
        key.update(BUILD_ID.as_bytes());
        key.update(&slot.to_le_bytes());
        for package in inputs.enclosing_packages {
            key.update(package.as_bytes());
            key.update(&[0]);
        }
        let config_file = inputs.config_file.map(Path::to_path_buf);
        let other_inputs = config_file
            .into_iter()
            .chain(OTHER_INPUTS.iter().map(|name| inputs.root.join(name)));
        for path in other_inputs {
            key.update(path.to_string_lossy().as_bytes());
            match std::fs::read(&path) {
                Ok(bytes) => key.update(&xxh3_64(&bytes).to_le_bytes()),
                Err(_) => key.update(b"absent"),
            }
        }
        // Each hash covers its file's path: sorted, the key does not depend
        // on the order the directory walk met the files.
        let mut file_hashes: Vec<u64> = files.par_iter().map(file_hash).collect();
        file_hashes.sort_unstable();
        for hash in file_hashes {
            key.update(&hash.to_le_bytes());
        }
        RunCache {
            entry: build_directory.join(format!("run-{slot:032x}.json")),
            build_directory,
            directory,
            key: format!("{:032x}", key.digest128()),
        }
    }

    /// The stored outcome, when its key matches; anything unreadable is a miss.
    pub fn load(&self) -> Option<RunOutcome> {
        let bytes = std::fs::read(&self.entry).ok()?;
        let entry: Entry = serde_json::from_slice(&bytes).ok()?;
        if entry.key != self.key {
            return None;
        }
        let modules = entry
            .modules
            .into_iter()
            .map(CachedModule::into_outcome)
            .collect::<Option<Vec<_>>>()?;
        Some(RunOutcome {
            modules,
            problems: entry.problems,
        })
    }

    /// Stores an outcome; a failure leaves the cache as it was (the run
    /// still succeeds).
    pub fn store(&self, outcome: &RunOutcome) {
        let entry = Entry {
            key: self.key.clone(),
            modules: outcome.modules.iter().map(CachedModule::from).collect(),
            problems: outcome.problems.clone(),
        };
        let _ = self.write(&entry);
    }

    fn write(&self, entry: &Entry) -> std::io::Result<()> {
        create_cache_directory(&self.directory)?;
        remove_other_builds(&self.directory);
        std::fs::create_dir_all(&self.build_directory)?;
        let mut file = tempfile::NamedTempFile::new_in(&self.build_directory)?;
        serde_json::to_writer(std::io::BufWriter::new(file.as_file_mut()), entry)?;
        file.as_file_mut().flush()?;
        file.persist(&self.entry).map_err(|error| error.error)?;
        Ok(())
    }
}

/// A hash of one file as read: its path and content, or its problem.
fn file_hash(file: &Result<ReadFile, FileProblem>) -> u64 {
    let mut hasher = Xxh3::new();
    match file {
        Ok(file) => {
            hasher.update(file.relative_path.as_bytes());
            hasher.update(&[0]);
            match &file.notebook {
                Some(notebook) => hasher.update(notebook.raw().as_bytes()),
                None => hasher.update(file.text.as_bytes()),
            }
        }
        Err(problem) => {
            hasher.update(problem.relative_path.as_bytes());
            hasher.update(&[1]);
            hasher.update(problem.message().as_bytes());
        }
    }
    hasher.digest()
}

/// Creates the cache directory with a `.gitignore` ignoring everything in it
/// and a `CACHEDIR.TAG`, so that git and backup tools leave it alone.
fn create_cache_directory(directory: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(directory)?;
    let gitignore = directory.join(".gitignore");
    if !gitignore.exists() {
        std::fs::write(gitignore, "# Automatically created by distribute.\n*\n")?;
    }
    let tag = directory.join("CACHEDIR.TAG");
    if !tag.exists() {
        std::fs::write(
            tag,
            "Signature: 8a477f597d28d172789f06886806bc55\n\
             # This file is a cache directory tag created by distribute.\n",
        )?;
    }
    Ok(())
}

/// Results of other builds can never be read again: removed, so that the
/// cache does not grow with every build.
fn remove_other_builds(directory: &Path) {
    let Ok(entries) = std::fs::read_dir(directory) else {
        return;
    };
    for entry in entries.flatten() {
        let is_directory = entry.file_type().is_ok_and(|kind| kind.is_dir());
        if is_directory && entry.file_name() != BUILD_ID {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

impl From<&ModuleOutcome> for CachedModule {
    fn from(module: &ModuleOutcome) -> Self {
        CachedModule {
            relative_path: module.relative_path.clone(),
            path: module.path.clone(),
            classification: module.classification,
            original: module.original.clone(),
            rewritten: module.rewritten.clone(),
            cell_changes: module.cell_changes.clone(),
            diagnostics: module
                .diagnostics
                .iter()
                .map(|diagnostic| CachedDiagnostic {
                    code: diagnostic.code.to_string(),
                    severity: diagnostic.severity,
                    cell: diagnostic.cell,
                    line: diagnostic.line,
                    column: diagnostic.column,
                    end_line: diagnostic.end_line,
                    end_column: diagnostic.end_column,
                    message: diagnostic.message.clone(),
                    suggestion: diagnostic.suggestion.clone(),
                    file_lines: diagnostic.file_lines,
                })
                .collect(),
            rewrite_error: module.rewrite_error.clone(),
        }
    }
}

impl CachedModule {
    /// The outcome back; `None` when a code is unknown to this build.
    fn into_outcome(self) -> Option<ModuleOutcome> {
        let diagnostics = self
            .diagnostics
            .into_iter()
            .map(|diagnostic| {
                let code = Code::from_id_or_name(&diagnostic.code)?;
                Some(LocatedDiagnostic {
                    code: code.id(),
                    name: code.name(),
                    severity: diagnostic.severity,
                    cell: diagnostic.cell,
                    line: diagnostic.line,
                    column: diagnostic.column,
                    end_line: diagnostic.end_line,
                    end_column: diagnostic.end_column,
                    message: diagnostic.message,
                    suggestion: diagnostic.suggestion,
                    file_lines: diagnostic.file_lines,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(ModuleOutcome {
            relative_path: self.relative_path,
            path: self.path,
            classification: self.classification,
            original: self.original,
            rewritten: self.rewritten,
            cell_changes: self.cell_changes,
            diagnostics,
            rewrite_error: self.rewrite_error,
        })
    }
}
