//! Reading and parsing the package: every selected file read and decoded in
//! parallel, then parsed, in parallel rounds, when it can matter to the
//! rewrite: it mentions an ML library, is imported by such a file, or imports
//! one. A file the user named that is none of these cannot hold training code
//! and is not parsed either: on a large tree of plain Python, parsing and
//! analysing every named file was most of the run.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use rustpython_parser::ast::Stmt;

use super::bindings::ModuleIndex;
use super::import_lines;
use super::neighbourhood;
use super::package::{FileProblem, FileProblemKind, Module, Package};
use crate::python::notebook::{Notebook, NotebookError, RecordedVersions, ShellCommand};
use crate::python::parse::{LoadError, decode, parse_module_in_pieces};
use crate::python::source::SourceFile;

/// Words a file must contain to possibly matter: a file that mentions none of
/// them and that no such file imports needs no syntax tree (parsing every file
/// of a large repository would be slow).
const RELEVANT_WORDS: &[&str] = &["tensorflow", "keras", "horovod"];

/// A file read and decoded (a notebook's code cells as one module's text).
pub struct ReadFile {
    pub relative_path: String,
    pub path: PathBuf,
    pub text: String,
    pub notebook: Option<Arc<Notebook>>,
    /// What a notebook recorded running with (a rewrite keeps its original's).
    pub recorded: RecordedVersions,
    /// A notebook's shell lines (a rewrite keeps its original's, moved).
    pub shell_commands: Vec<ShellCommand>,
}

/// Whether a file mentions an ML library, so may matter to the rewrite.
fn mentions_relevant_word(file: &ReadFile) -> bool {
    mentions_ml_library(&file.text)
}

/// Whether a text mentions an ML library (`RELEVANT_WORDS`).
pub fn mentions_ml_library(text: &str) -> bool {
    RELEVANT_WORDS.iter().any(|word| text.contains(word))
}

/// Reads and decodes every file in parallel, in the given order.
pub fn read_files(root: &Path, relative_paths: &[String]) -> Vec<Result<ReadFile, FileProblem>> {
    relative_paths
        .par_iter()
        .map(|relative_path| {
            let path = root.join(relative_path);
            let problem = |error| FileProblem {
                relative_path: relative_path.clone(),
                kind: FileProblemKind::Error(error),
            };
            let bytes = std::fs::read(&path)
                .map_err(|error| problem(LoadError::Unreadable(error.to_string())))?;
            let text = decode(bytes).map_err(problem)?;
            if !relative_path.ends_with(".ipynb") {
                return Ok(ReadFile {
                    relative_path: relative_path.clone(),
                    path,
                    text,
                    notebook: None,
                    recorded: RecordedVersions::default(),
                    shell_commands: Vec::new(),
                });
            }
            let notebook = Notebook::parse(text).map_err(|error| FileProblem {
                relative_path: relative_path.clone(),
                kind: FileProblemKind::Notebook(error),
            })?;
            if let Some(language) = notebook.other_language() {
                return Err(FileProblem {
                    relative_path: relative_path.clone(),
                    kind: FileProblemKind::NotPython(language.to_string()),
                });
            }
            Ok(ReadFile {
                relative_path: relative_path.clone(),
                path,
                text: notebook.python().to_string(),
                recorded: notebook.recorded_versions(),
                shell_commands: notebook.shell_commands(),
                notebook: Some(Arc::new(notebook)),
            })
        })
        .collect()
}

/// A parsed file's module and the package modules it imports (to parse next).
type ParsedFile = (Module, Vec<String>);

/// The read files, their module names, and which of them are parsed so far.
pub(super) struct Loader<'f> {
    files: &'f [ReadFile],
    /// Module name and whether it is a package's `__init__.py`, per file.
    names: &'f [(String, bool)],
    index_of_name: FxHashMap<&'f str, usize>,
    parsed: Vec<bool>,
    /// Files that may be parsed: all, or a selection's import neighbourhood.
    loadable: Vec<bool>,
    /// Each file's import lines, read once when first asked for (the
    /// neighbourhood and the search for drivers both read them).
    import_lines: Vec<OnceLock<Vec<String>>>,
    /// Imports are followed from files that can matter (they mention an ML
    /// library, or such a file imports them), not from a file parsed only
    /// because it imports one: a utility must not pull its own imports in.
    follows_imports: Vec<bool>,
    /// Files that may hold or drive training code: they mention an ML
    /// library, or import such a file (a driver). Only their importers are
    /// drivers in turn: a module parsed because training code imports it
    /// (`os`, `json`) drives nothing, and its importers need no syntax tree.
    may_train: Vec<bool>,
}

impl<'f> Loader<'f> {
    pub(super) fn new(files: &'f [ReadFile], names: &'f [(String, bool)]) -> Self {
        Loader {
            files,
            names,
            index_of_name: names
                .iter()
                .enumerate()
                .map(|(index, (name, _))| (name.as_str(), index))
                .collect(),
            parsed: vec![false; files.len()],
            loadable: vec![true; files.len()],
            import_lines: files.iter().map(|_| OnceLock::new()).collect(),
            follows_imports: files.iter().map(mentions_relevant_word).collect(),
            may_train: files.iter().map(mentions_relevant_word).collect(),
        }
    }

    /// Restricts loading to the import neighbourhood of the selected files,
    /// unless that is most of the package. Not worked out when few files can
    /// matter at all: loading them all is then cheaper than reading every
    /// file's import lines.
    pub(super) fn keep_to_neighbourhood_of(&mut self, selected: &HashSet<String>) {
        const FEW_FILES: usize = 64;
        if self
            .follows_imports
            .iter()
            .filter(|follows| **follows)
            .count()
            < FEW_FILES
        {
            return;
        }
        let paths: Vec<&str> = self
            .files
            .iter()
            .map(|file| file.relative_path.as_str())
            .collect();
        let imports: Vec<&[String]> = (0..self.files.len())
            .into_par_iter()
            .map(|index| self.imported_modules(index))
            .collect();
        if let Some(loadable) = neighbourhood::files_to_load(&paths, &imports, self.names, selected)
        {
            self.loadable = loadable;
        }
    }

    /// Parses the relevant files, then whatever package modules they import,
    /// until closed.
    pub(super) fn parse_all(&mut self, package: &mut Package) {
        let mut wanted: Vec<usize> = (0..self.files.len())
            // `follows_imports` holds whether a file mentions an ML library, so far.
            .filter(|&index| self.loadable[index] && self.follows_imports[index])
            .collect();
        loop {
            while !wanted.is_empty() {
                wanted = self.parse_round(package, &wanted);
            }
            // Files importing what was parsed (a driver of the package's
            // training code), and what they import in turn.
            wanted = self.importers_of_parsed(package);
            if wanted.is_empty() {
                break;
            }
            for &index in &wanted {
                self.follows_imports[index] = true;
                self.may_train[index] = true;
            }
        }
    }

    /// The modules a file's import lines name, read once.
    fn imported_modules(&self, index: usize) -> &[String] {
        self.import_lines[index].get_or_init(|| {
            let (name, is_package_init) = &self.names[index];
            import_lines::imported_modules_of_module(
                &self.files[index].text,
                name,
                *is_package_init,
            )
        })
    }

    /// Unparsed files whose import lines name a parsed module that may
    /// train (it mentions an ML library, or imports one that does).
    fn importers_of_parsed(&self, package: &Package) -> Vec<usize> {
        let modules: HashSet<&str> = package
            .modules
            .iter()
            .filter(|module| {
                self.index_of_name
                    .get(module.name.as_str())
                    .is_some_and(|&index| self.may_train[index])
            })
            .map(|module| module.name.as_str())
            .collect();
        if modules.is_empty() {
            return Vec::new();
        }
        (0..self.files.len())
            .filter(|&index| self.loadable[index] && !self.parsed[index])
            .filter(|&index| import_lines::imports_any(self.imported_modules(index), &modules))
            .collect()
    }

    /// Parses the wanted files in parallel, adds their modules (or problems) to
    /// the package, and returns the not yet parsed package modules they import.
    fn parse_round(&mut self, package: &mut Package, wanted: &[usize]) -> Vec<usize> {
        for &index in wanted {
            self.parsed[index] = true;
        }
        // Parsing, bindings and the imports to follow, per file in parallel.
        let loader = &*self;
        let module_names = &package.module_names;
        let results: Vec<(usize, Result<ParsedFile, LoadError>)> = wanted
            .par_iter()
            .map(|&index| {
                let file = &loader.files[index];
                let result =
                    parse_module_in_pieces(&file.text, &file.relative_path).map(|parsed| {
                        let mut module = loader.module(index, parsed.body, module_names);
                        module.parsed_pieces = parsed.pieces;
                        let imports = if loader.follows_imports[index] {
                            module.imports.clone()
                        } else {
                            Vec::new()
                        };
                        (module, imports)
                    });
                (index, result)
            })
            .collect();
        let mut next = Vec::new();
        for (index, result) in results {
            match result {
                Ok((module, imports)) => {
                    self.queue_imports(&imports, &mut next);
                    package.modules.push(module);
                }
                Err(error) => package.problems.push(FileProblem {
                    relative_path: self.files[index].relative_path.clone(),
                    kind: in_cell(self.files[index].notebook.as_deref(), error),
                }),
            }
        }
        next.sort_unstable();
        next.dedup();
        next
    }

    /// The module of a parsed file, with its definitions indexed and its bindings.
    fn module(&self, index: usize, body: Vec<Stmt>, module_names: &ModuleIndex) -> Module {
        let file = &self.files[index];
        let (name, is_package_init) = self.names[index].clone();
        let mut source = match &file.notebook {
            Some(notebook) => SourceFile::from_notebook(
                file.relative_path.clone(),
                file.path.clone(),
                notebook.clone(),
            ),
            None => SourceFile::new(
                file.relative_path.clone(),
                file.path.clone(),
                file.text.clone(),
            ),
        };
        source.recorded = file.recorded;
        source.shell_commands = file.shell_commands.clone();
        Module::new(name, is_package_init, source, body, module_names)
    }

    /// Adds to `next` the package modules a module imports that are not parsed
    /// yet; their own imports are followed in turn.
    fn queue_imports(&mut self, imports: &[String], next: &mut Vec<usize>) {
        for imported in imports {
            if let Some(&other) = self.index_of_name.get(imported.as_str())
                && !self.parsed[other]
            {
                self.follows_imports[other] = true;
                next.push(other);
            }
        }
    }
}

/// A parse error placed in its notebook cell, when the file is a notebook.
fn in_cell(notebook: Option<&Notebook>, error: LoadError) -> FileProblemKind {
    let Some(notebook) = notebook else {
        return FileProblemKind::Error(error);
    };
    let position = error
        .location()
        .and_then(|location| notebook.cell_position(location));
    FileProblemKind::Notebook(NotebookError {
        cell: position.map(|(cell, _)| cell),
        location: position.map(|(_, location)| location),
        message: error.to_string(),
    })
}
