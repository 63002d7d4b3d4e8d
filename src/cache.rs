//! The on-disk cache of results per file, as ruff keeps `.ruff_cache`: a
//! file's stored result is used while every file it can depend on is
//! unchanged, so that after a commit only the changed files' import groups
//! are analysed again.
//!
//! The analysis is package-wide (a model module's rewrite depends on the
//! script that fits its model), but only along imports: a file's result
//! depends on the files of its import group (`neighbourhood::import_groups`),
//! plus the configuration, the requirement files and the build of the tool.
//! A result is stored with a hash of all of those and reused only when that
//! hash is the same: correctness before hit rate. In a repository of separate
//! projects each project is a group; in a library whose modules all import
//! one another, one changed file means the whole package is analysed again.
//! A cache that cannot be read, is corrupt or belongs to another build is a
//! miss, never an error; writes are atomic (temporary file, then rename).
//!
//! Location: `.distribute_cache/` at the package root, or the directory named
//! by `DISTRIBUTE_CACHE_DIR`. Delete the directory to clear it.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::{Xxh3, xxh3_64};

use crate::analysis::package::{FileProblem, Package, ReadFile};
use crate::checker::applicability::Applicability;
use crate::diagnostics::{Code, Severity};
use crate::outcome::{LocatedDiagnostic, ModuleOutcome, RunOutcome};
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

/// The stored results of a package root, and the current key of each file.
pub struct ResultCache {
    /// The file holding this root's results.
    entry: PathBuf,
    directory: PathBuf,
    /// Per readable file, a hash of everything its result depends on.
    keys: FxHashMap<String, String>,
    stored: Stored,
    /// Whether results were added since the cache was read.
    changed: bool,
    /// Every diagnostic code, to read stored diagnostics back.
    codes: Vec<Code>,
}

/// What is stored for one package root.
#[derive(Serialize, Deserialize, Default)]
struct Stored {
    files: HashMap<String, StoredFile>,
}

/// One file's result as stored.
#[derive(Serialize, Deserialize)]
struct StoredFile {
    key: String,
    outcome: Option<CachedModule>,
    problems: Vec<FileProblem>,
    /// Whether a request on this file also reports its importers
    /// (`engine::decisive_files`).
    decisive: bool,
    /// The files importing it.
    importers: Vec<String>,
}

/// What a request's dependents are worked out from, per file analysed.
pub struct DependencyFacts {
    pub relative_path: String,
    pub decisive: bool,
    pub importers: Vec<String>,
}

/// A module outcome as stored: diagnostics name their code by id; the file's
/// text and path are those read by the run.
#[derive(Serialize, Deserialize)]
struct CachedModule {
    classification: Classification,
    rewritten: Option<String>,
    cell_changes: Vec<CellChange>,
    diagnostics: Vec<CachedDiagnostic>,
    rewrite_error: Option<String>,
    applicability: Option<Applicability>,
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
    pub config_file: Option<&'a Path>,
    /// The packages enclosing the root (they prefix module names).
    pub enclosing_packages: &'a [String],
    /// Every diagnostic code: stored diagnostics name theirs by id.
    pub codes: &'a [Code],
}

/// What the cache holds for a request.
pub struct Lookup {
    /// The stored results of the files to report whose import groups are
    /// unchanged (with their dependents, when the request adds those).
    pub found: RunOutcome,
    /// The files to report of the other groups: they must be analysed.
    pub missed: HashSet<String>,
}

impl ResultCache {
    /// Reads the stored results of a package root and works out each file's
    /// key from the files as read.
    pub fn open(inputs: &RequestInputs, files: &[ReadFile]) -> ResultCache {
        let directory = directory_for(inputs.root);
        let slot = xxh3_64(inputs.root.to_string_lossy().as_bytes());
        let entry = directory
            .join(BUILD_ID)
            .join(format!("results-{slot:016x}.json"));
        let stored = std::fs::read(&entry)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        ResultCache {
            entry,
            directory,
            keys: file_keys(inputs, files),
            stored,
            changed: false,
            codes: inputs.codes.to_vec(),
        }
    }

    /// The stored results for a request: `scope` (all files when `None`),
    /// with the dependents of its decisive files when `with_dependents`.
    /// A group is used whole or not at all.
    pub fn lookup(
        &self,
        scope: Option<&HashSet<String>>,
        with_dependents: bool,
        files: &[ReadFile],
    ) -> Lookup {
        let files: FxHashMap<&str, &ReadFile> = files
            .iter()
            .map(|file| (file.relative_path.as_str(), file))
            .collect();
        let mut requested: HashMap<&str, Vec<&str>> = HashMap::new();
        for (path, key) in &self.keys {
            if scope.is_none_or(|scope| scope.contains(path)) {
                requested.entry(key).or_default().push(path);
            }
        }
        let mut found = RunOutcome::default();
        let mut missed = HashSet::new();
        for wanted in requested.into_values() {
            let results = self
                .group_results(&wanted, with_dependents)
                .and_then(|results| restore(results, &files, &self.codes));
            match results {
                Some((modules, problems)) => {
                    found.modules.extend(modules);
                    found.problems.extend(problems);
                }
                None => missed.extend(wanted.iter().map(|path| path.to_string())),
            }
        }
        Lookup { found, missed }
    }

    /// The stored results of `wanted` (files of one group) and, when asked,
    /// of their dependents; `None` when one of them is missing or stale.
    fn group_results<'s>(
        &'s self,
        wanted: &[&'s str],
        with_dependents: bool,
    ) -> Option<Vec<(&'s str, &'s StoredFile)>> {
        let mut results = Vec::new();
        let mut seen: HashSet<&str> = wanted.iter().copied().collect();
        // A requested file brings its importers in when it is decisive; a
        // dependent brings in all of its own, transitively.
        let mut queue: Vec<(&str, bool)> = wanted.iter().map(|path| (*path, false)).collect();
        while let Some((path, is_dependent)) = queue.pop() {
            let stored = self.stored.files.get(path)?;
            if self.keys.get(path) != Some(&stored.key) {
                return None;
            }
            if with_dependents && (is_dependent || stored.decisive) {
                for importer in &stored.importers {
                    if seen.insert(importer) {
                        queue.push((importer, true));
                    }
                }
            }
            results.push((path, stored));
        }
        Some(results)
    }

    /// Adds the results of an analysis: for each analysed file, its module
    /// outcome and problems from `outcome`.
    pub fn add(&mut self, outcome: &RunOutcome, facts: Vec<DependencyFacts>) {
        let mut modules: HashMap<&str, &ModuleOutcome> = outcome
            .modules
            .iter()
            .map(|module| (module.relative_path.as_str(), module))
            .collect();
        let mut problems: HashMap<&str, Vec<FileProblem>> = HashMap::new();
        for problem in &outcome.problems {
            problems
                .entry(problem.relative_path.as_str())
                .or_default()
                .push(problem.clone());
        }
        for fact in facts {
            let Some(key) = self.keys.get(&fact.relative_path) else {
                continue;
            };
            let stored = StoredFile {
                key: key.clone(),
                outcome: modules
                    .remove(fact.relative_path.as_str())
                    .map(CachedModule::from),
                problems: problems
                    .remove(fact.relative_path.as_str())
                    .unwrap_or_default(),
                decisive: fact.decisive,
                importers: fact.importers,
            };
            self.stored.files.insert(fact.relative_path, stored);
            self.changed = true;
        }
    }

    /// Writes the results back when results were added; results of files no
    /// longer in the package are dropped. A failure leaves the cache as it
    /// was (the run still succeeds).
    pub fn save(mut self) {
        if !self.changed {
            return;
        }
        let keys = &self.keys;
        self.stored.files.retain(|path, _| keys.contains_key(path));
        let _ = self.write();
    }

    fn write(&self) -> std::io::Result<()> {
        create_cache_directory(&self.directory)?;
        remove_other_builds(&self.directory);
        // The cache directory of this build.
        let build_directory = self.directory.join(BUILD_ID);
        std::fs::create_dir_all(&build_directory)?;
        let mut file = tempfile::NamedTempFile::new_in(&build_directory)?;
        serde_json::to_writer(std::io::BufWriter::new(file.as_file_mut()), &self.stored)?;
        file.as_file_mut().flush()?;
        file.persist(&self.entry).map_err(|error| error.error)?;
        Ok(())
    }
}

/// The outcomes and problems of stored results, for the files as read;
/// `None` when one names a code this build does not know (a damaged cache).
fn restore(
    results: Vec<(&str, &StoredFile)>,
    files: &FxHashMap<&str, &ReadFile>,
    codes: &[Code],
) -> Option<(Vec<ModuleOutcome>, Vec<FileProblem>)> {
    let mut modules = Vec::new();
    let mut problems = Vec::new();
    for (path, stored) in results {
        if let Some(module) = &stored.outcome {
            modules.push(module.to_outcome(files.get(path)?, codes)?);
        }
        problems.extend(stored.problems.iter().cloned());
    }
    Some((modules, problems))
}

/// Per file, a hash of everything its result depends on: the build, the
/// configuration, the requirement files, the enclosing packages, and every
/// file of its import group (path and content).
fn file_keys(inputs: &RequestInputs, files: &[ReadFile]) -> FxHashMap<String, String> {
    let mut shared = Xxh3::new();
    shared.update(BUILD_ID.as_bytes());
    shared.update(inputs.root.to_string_lossy().as_bytes());
    shared.update(&[0]);
    for package in inputs.enclosing_packages {
        shared.update(package.as_bytes());
        shared.update(&[0]);
    }
    let config_file = inputs.config_file.map(Path::to_path_buf);
    let other_inputs = config_file
        .into_iter()
        .chain(OTHER_INPUTS.iter().map(|name| inputs.root.join(name)));
    for path in other_inputs {
        shared.update(path.to_string_lossy().as_bytes());
        match std::fs::read(&path) {
            Ok(bytes) => shared.update(&xxh3_64(&bytes).to_le_bytes()),
            Err(_) => shared.update(b"absent"),
        }
    }
    let shared = shared.digest128();
    let hashes: Vec<u64> = files.par_iter().map(file_hash).collect();
    let groups = Package::import_groups(inputs.root, files);
    let mut members: FxHashMap<usize, Vec<u64>> = FxHashMap::default();
    for (hash, group) in hashes.iter().zip(&groups) {
        members.entry(*group).or_default().push(*hash);
    }
    // Sorted, a group's key does not depend on the order the directory walk
    // met its files (each hash covers its file's path).
    let group_keys: FxHashMap<usize, String> = members
        .into_iter()
        .map(|(group, mut hashes)| {
            hashes.sort_unstable();
            let mut key = Xxh3::new();
            key.update(&shared.to_le_bytes());
            for hash in hashes {
                key.update(&hash.to_le_bytes());
            }
            (group, format!("{:032x}", key.digest128()))
        })
        .collect();
    files
        .iter()
        .zip(&groups)
        .map(|(file, group)| (file.relative_path.clone(), group_keys[group].clone()))
        .collect()
}

/// A hash of one file as read: its path and content.
fn file_hash(file: &ReadFile) -> u64 {
    let mut hasher = Xxh3::new();
    hasher.update(file.relative_path.as_bytes());
    hasher.update(&[0]);
    match &file.notebook {
        Some(notebook) => hasher.update(notebook.raw().as_bytes()),
        None => hasher.update(file.text.as_bytes()),
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
            classification: module.classification,
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
            applicability: module.applicability,
        }
    }
}

impl CachedModule {
    /// The outcome back, for the file as read; `None` when a code is unknown
    /// to this build.
    fn to_outcome(&self, file: &ReadFile, codes: &[Code]) -> Option<ModuleOutcome> {
        let diagnostics = self
            .diagnostics
            .iter()
            .map(|diagnostic| {
                let code = Code::from_id_or_name(&diagnostic.code, codes)?;
                Some(LocatedDiagnostic {
                    code: code.id(),
                    name: code.name(),
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
            })
            .collect::<Option<Vec<_>>>()?;
        Some(ModuleOutcome {
            relative_path: file.relative_path.clone(),
            path: file.path.clone(),
            classification: self.classification,
            original: file
                .notebook
                .as_ref()
                .map_or_else(|| file.text.clone(), |notebook| notebook.raw().to_string()),
            rewritten: self.rewritten.clone(),
            cell_changes: self.cell_changes.clone(),
            diagnostics,
            rewrite_error: self.rewrite_error.clone(),
            applicability: self.applicability,
            held_back: None,
        })
    }
}
