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
//! Files are not read again while their size and modification time are
//! those stored (`files`): a run with nothing changed reads the cache file
//! and the files whose stored results it prints, nothing else.
//!
//! Location: `.distribute_cache/` at the package root, or the directory named
//! by `DISTRIBUTE_CACHE_DIR`. Delete the directory to clear it.

mod files;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::{Xxh3, xxh3_64};

use crate::analysis::package::{FileProblem, ReadFile, module_names_of_paths, read_files};
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
    /// The file holding the modules each file's import lines name: read
    /// only when keys are worked out again.
    imports_entry: PathBuf,
    /// Each readable file's imports, when they were needed (then stored).
    imports: Option<HashMap<String, Vec<String>>>,
    directory: PathBuf,
    /// Per readable file, a hash of everything its result depends on.
    keys: FxHashMap<String, u128>,
    /// The readable files that can matter to a rewrite (`groups_that_matter`):
    /// the others need no analysis.
    matters: FxHashMap<String, bool>,
    /// The hash of the inputs every file shares.
    shared: u128,
    /// The request's files, read where they changed.
    scanned: Vec<files::ScannedFile>,
    root: PathBuf,
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
    /// What each file was when last read, to read again only what changed.
    facts: HashMap<String, files::FileFacts>,
    /// When the results were written (nanoseconds since the epoch).
    written_nanos: u128,
    /// The hash of the inputs shared by every file (`shared_inputs`), and
    /// each readable file's key, as last worked out: with the same inputs
    /// and no file changed, the keys are these.
    shared: u128,
    keys: HashMap<String, (u128, bool)>,
}

/// One file's result as stored.
#[derive(Serialize, Deserialize)]
struct StoredFile {
    key: u128,
    outcome: Option<CachedModule>,
    problems: Vec<FileProblem>,
    /// Whether a request on this file also reports its importers
    /// (`engine::decisive_files`).
    decisive: bool,
    /// The files importing it.
    importers: Vec<String>,
    /// Which files of its group the analysis rewrote with it (a hash of
    /// their paths): a module's rewrite may lean on another's (a model
    /// module's optimizer wrapped for the script that fits it), so a result
    /// holds only for a request rewriting the same files of the group.
    scope: u64,
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
    pub fn open(inputs: &RequestInputs, relative_paths: &[String]) -> ResultCache {
        let directory = directory_for(inputs.root);
        let slot = xxh3_64(inputs.root.to_string_lossy().as_bytes());
        let entry = directory
            .join(BUILD_ID)
            .join(format!("results-{slot:016x}.bin"));
        let stored: Stored = std::fs::read(&entry)
            .ok()
            .and_then(|bytes| bincode::deserialize(&bytes).ok())
            .unwrap_or_default();
        let paths: Vec<&str> = relative_paths.iter().map(String::as_str).collect();
        let names = module_names_of_paths(inputs.root, &paths);
        let scanned = files::scan(
            inputs.root,
            relative_paths,
            &names,
            &|path| stored.facts.get(path).cloned(),
            stored.written_nanos,
        );
        // Files read again unchanged (a file that cannot be decoded is read
        // on every run) leave nothing new to store.
        let changed = stored.facts.len() != scanned.len()
            || scanned.iter().any(|file| {
                file.read.is_some()
                    && stored
                        .facts
                        .get(&file.relative_path)
                        .is_none_or(|facts| !facts.same_as(&file.facts))
            });
        let shared = shared_inputs(inputs);
        // Nothing read, the same files and inputs: the stored keys stand.
        let imports_entry = imports_entry_of(&entry);
        let (keys, imports) = if !changed
            && shared == stored.shared
            && stored.keys.len() + unreadable(&scanned) == scanned.len()
        {
            let keys = stored
                .keys
                .iter()
                .map(|(path, key)| (path.clone(), *key))
                .collect();
            (keys, None)
        } else {
            let imports = imports_of(inputs.root, &imports_entry, &scanned, &names);
            (file_keys(shared, &scanned, &names, &imports), Some(imports))
        };
        let (keys, matters) = keys
            .into_iter()
            .map(|(path, (key, matters))| ((path.clone(), key), (path, matters)))
            .unzip();
        let changed = changed || imports.is_some();
        ResultCache {
            entry,
            imports_entry,
            imports,
            directory,
            keys,
            matters,
            shared,
            scanned,
            root: inputs.root.to_path_buf(),
            stored,
            changed,
            codes: inputs.codes.to_vec(),
        }
    }

    /// The files that could not be read or decoded, in `scope` (all when
    /// `None`): their problems are said on every run.
    pub fn unreadable(&self, scope: Option<&HashSet<String>>) -> Vec<FileProblem> {
        self.scanned
            .iter()
            .filter(|file| scope.is_none_or(|scope| scope.contains(&file.relative_path)))
            .filter_map(|file| match &file.read {
                Some(Err(problem)) => Some(problem.clone()),
                _ => None,
            })
            .collect()
    }

    /// Of `missed`, the files that cannot matter to a rewrite: their result
    /// is empty, and stored so without an analysis (taken out of `missed`).
    pub fn settle_files_that_cannot_matter(&mut self, missed: &mut HashSet<String>) {
        let inert: Vec<String> = missed
            .iter()
            .filter(|path| self.matters.get(path.as_str()) == Some(&false))
            .cloned()
            .collect();
        if inert.is_empty() {
            return;
        }
        for path in &inert {
            missed.remove(path);
        }
        let facts = inert
            .into_iter()
            .map(|relative_path| DependencyFacts {
                relative_path,
                decisive: false,
                importers: Vec::new(),
            })
            .collect();
        self.add(&RunOutcome::default(), facts);
    }

    /// Every readable file of the request, read: what an analysis needs.
    /// The files read so far are handed over (their facts stay).
    pub fn read_all(&mut self) -> Vec<ReadFile> {
        let unread: Vec<String> = self
            .scanned
            .iter()
            .filter(|file| file.read.is_none())
            .map(|file| file.relative_path.clone())
            .collect();
        let mut fresh = read_files(&self.root, &unread).into_iter();
        self.scanned
            .iter_mut()
            .filter_map(|file| match file.read.take() {
                Some(Err(problem)) => {
                    file.read = Some(Err(problem));
                    None
                }
                Some(read) => read.ok(),
                None => fresh.next().and_then(Result::ok),
            })
            .collect()
    }

    /// The stored results for a request: `scope` (all files when `None`),
    /// with the dependents of its decisive files when `with_dependents`.
    /// A group is used whole or not at all.
    pub fn lookup(&self, scope: Option<&HashSet<String>>, with_dependents: bool) -> Lookup {
        let mut requested: HashMap<u128, Vec<&str>> = HashMap::new();
        for (path, key) in &self.keys {
            if scope.is_none_or(|scope| scope.contains(path)) {
                requested.entry(*key).or_default().push(path);
            }
        }
        let mut found = RunOutcome::default();
        let mut missed = HashSet::new();
        for wanted in requested.into_values() {
            let results = self
                .group_results(&wanted, with_dependents)
                .and_then(|results| self.restore(results));
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
        let scope = scope_signature(results.iter().map(|(path, _)| *path));
        results
            .iter()
            .all(|(_, stored)| stored.scope == scope)
            .then_some(results)
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
        // The files analysed together, per group.
        let mut analysed: HashMap<u128, Vec<&str>> = HashMap::new();
        for fact in &facts {
            if let Some(key) = self.keys.get(&fact.relative_path) {
                analysed
                    .entry(*key)
                    .or_default()
                    .push(fact.relative_path.as_str());
            }
        }
        let scopes: HashMap<u128, u64> = analysed
            .into_iter()
            .map(|(key, paths)| (key, scope_signature(paths.into_iter())))
            .collect();
        for fact in facts {
            let Some(key) = self.keys.get(&fact.relative_path) else {
                continue;
            };
            let stored = StoredFile {
                key: *key,
                outcome: modules
                    .remove(fact.relative_path.as_str())
                    .map(CachedModule::from),
                problems: problems
                    .remove(fact.relative_path.as_str())
                    .unwrap_or_default(),
                decisive: fact.decisive,
                importers: fact.importers,
                scope: scopes[key],
            };
            self.stored.files.insert(fact.relative_path, stored);
            self.changed = true;
        }
    }

    /// Writes the results back when results were added or files read;
    /// results of files no longer in the package are dropped. A failure
    /// leaves the cache as it was (the run still succeeds).
    pub fn save(mut self) {
        if !self.changed {
            // Freeing every stored result is a noticeable part of a run that
            // only read them: it happens on a thread of its own.
            std::thread::spawn(move || drop(self));
            return;
        }
        let keys = &self.keys;
        self.stored.files.retain(|path, _| keys.contains_key(path));
        self.stored.facts = self
            .scanned
            .iter()
            .map(|file| (file.relative_path.clone(), file.facts.clone()))
            .collect();
        self.stored.written_nanos = files::now_nanos();
        self.stored.shared = self.shared;
        self.stored.keys = self
            .keys
            .iter()
            .map(|(path, key)| {
                let matters = self.matters.get(path).copied().unwrap_or(true);
                (path.clone(), (*key, matters))
            })
            .collect();
        let _ = self.write();
    }

    /// The outcomes and problems of stored results, with each outcome's
    /// file read (only those are); `None` when one names a code this build
    /// does not know (a damaged cache) or its file cannot be read.
    fn restore(
        &self,
        results: Vec<(&str, &StoredFile)>,
    ) -> Option<(Vec<ModuleOutcome>, Vec<FileProblem>)> {
        let scanned: FxHashMap<&str, &files::ScannedFile> = self
            .scanned
            .iter()
            .map(|file| (file.relative_path.as_str(), file))
            .collect();
        let mut modules = Vec::new();
        let mut problems = Vec::new();
        for (path, stored) in results {
            if let Some(module) = &stored.outcome {
                let read_now;
                let file = match &scanned.get(path)?.read {
                    Some(read) => read.as_ref().ok()?,
                    None => {
                        read_now = read_files(&self.root, &[path.to_string()]).pop()?.ok()?;
                        &read_now
                    }
                };
                modules.push(module.to_outcome(file, &self.codes)?);
            }
            problems.extend(stored.problems.iter().cloned());
        }
        Some((modules, problems))
    }

    fn write(&self) -> std::io::Result<()> {
        create_cache_directory(&self.directory)?;
        remove_other_builds(&self.directory);
        // The cache directory of this build.
        let build_directory = self.directory.join(BUILD_ID);
        std::fs::create_dir_all(&build_directory)?;
        let mut file = tempfile::NamedTempFile::new_in(&build_directory)?;
        bincode::serialize_into(std::io::BufWriter::new(file.as_file_mut()), &self.stored)
            .map_err(std::io::Error::other)?;
        file.as_file_mut().flush()?;
        file.persist(&self.entry).map_err(|error| error.error)?;
        if let Some(imports) = &self.imports {
            let mut file = tempfile::NamedTempFile::new_in(&build_directory)?;
            bincode::serialize_into(std::io::BufWriter::new(file.as_file_mut()), imports)
                .map_err(std::io::Error::other)?;
            file.as_file_mut().flush()?;
            file.persist(&self.imports_entry)
                .map_err(|error| error.error)?;
        }
        Ok(())
    }
}

/// The imports file beside a results file.
fn imports_entry_of(entry: &Path) -> PathBuf {
    let name = entry
        .file_name()
        .map(|name| name.to_string_lossy().replace("results-", "imports-"))
        .unwrap_or_default();
    entry.with_file_name(name)
}

/// Each readable file's imports: those read now, else those stored, else
/// (no stored entry) read from the file.
fn imports_of(
    root: &Path,
    imports_entry: &Path,
    scanned: &[files::ScannedFile],
    names: &[(String, bool)],
) -> HashMap<String, Vec<String>> {
    let mut stored: HashMap<String, Vec<String>> = std::fs::read(imports_entry)
        .ok()
        .and_then(|bytes| bincode::deserialize(&bytes).ok())
        .unwrap_or_default();
    scanned
        .iter()
        .zip(names)
        .filter(|(file, _)| !matches!(file.read, Some(Err(_))))
        .map(|(file, (name, is_package_init))| {
            let imports = match &file.imports {
                Some(imports) => imports.clone(),
                None => stored.remove(&file.relative_path).unwrap_or_else(|| {
                    read_files(root, std::slice::from_ref(&file.relative_path))
                        .pop()
                        .and_then(Result::ok)
                        .map(|read| {
                            crate::analysis::import_lines::imported_modules_of_module(
                                &read.text,
                                name,
                                *is_package_init,
                            )
                        })
                        .unwrap_or_default()
                }),
            };
            (file.relative_path.clone(), imports)
        })
        .collect()
}

/// How many of the scanned files could not be read.
fn unreadable(scanned: &[files::ScannedFile]) -> usize {
    scanned
        .iter()
        .filter(|file| matches!(file.read, Some(Err(_))))
        .count()
}

/// A hash of a set of paths, whatever their order.
fn scope_signature<'p>(paths: impl Iterator<Item = &'p str>) -> u64 {
    let mut sorted: Vec<&str> = paths.collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut hasher = Xxh3::new();
    for path in sorted {
        hasher.update(path.as_bytes());
        hasher.update(&[0]);
    }
    hasher.digest()
}

/// A hash of what every file's result depends on besides the files: the
/// build, the root, the enclosing packages, the configuration and the
/// requirement files.
fn shared_inputs(inputs: &RequestInputs) -> u128 {
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
    shared.digest128()
}

/// Per file, a hash of everything its result depends on: the build, the
/// configuration, the requirement files, the enclosing packages, and every
/// file of its import group (path and content).
fn file_keys(
    shared: u128,
    scanned: &[files::ScannedFile],
    names: &[(String, bool)],
    imports: &HashMap<String, Vec<String>>,
) -> FxHashMap<String, (u128, bool)> {
    // Files that cannot be read have no key: their problems are said anew.
    let (readable, readable_names): (Vec<&files::ScannedFile>, Vec<(String, bool)>) = scanned
        .iter()
        .zip(names)
        .filter(|(file, _)| !matches!(file.read, Some(Err(_))))
        .map(|(file, name)| (file, name.clone()))
        .unzip();
    let imports: Vec<&[String]> = readable
        .iter()
        .map(|file| {
            imports
                .get(&file.relative_path)
                .map_or(&[][..], Vec::as_slice)
        })
        .collect();
    let mentions: Vec<bool> = readable.iter().map(|file| file.facts.mentions_ml).collect();
    let (groups, matters) =
        crate::analysis::neighbourhood::groups_that_matter(&imports, &readable_names, &mentions);
    let mut members: FxHashMap<usize, Vec<u64>> = FxHashMap::default();
    for (file, group) in readable.iter().zip(&groups) {
        members.entry(*group).or_default().push(file.facts.hash);
    }
    // Sorted, a group's key does not depend on the order the directory walk
    // met its files (each hash covers its file's path).
    let group_keys: FxHashMap<usize, u128> = members
        .into_iter()
        .map(|(group, mut hashes)| {
            hashes.sort_unstable();
            let mut key = Xxh3::new();
            key.update(&shared.to_le_bytes());
            for hash in hashes {
                key.update(&hash.to_le_bytes());
            }
            (group, key.digest128())
        })
        .collect();
    readable
        .iter()
        .zip(&groups)
        .zip(matters)
        .map(|((file, group), matters)| (file.relative_path.clone(), (group_keys[group], matters)))
        .collect()
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
