//! The analysed package: every module loaded and parsed once (`loader.rs`), module names,
//! symbol resolution across modules (absolute and relative imports,
//! `__init__.py` re-exports) and the class hierarchy.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use rayon::prelude::*;
use rustc_hash::FxHashMap;
use rustpython_parser::ast::{self, Stmt};

use super::bindings::{Bindings, ModuleContext, ModuleIndex, collect_bindings};
use super::library::{self, canonical_name};
use super::loader::Loader;
pub use super::loader::{ReadFile, read_files};
use super::{import_lines, neighbourhood};
use crate::python::notebook::NotebookError;
use crate::python::parse::LoadError;
use crate::python::source::SourceFile;

/// One parsed module of the package.
#[derive(Debug)]
pub struct Module {
    /// Dotted module name (`mypkg.models.resnet`).
    pub name: String,
    pub is_package_init: bool,
    pub source: SourceFile,
    pub body: Vec<Stmt>,
    /// Module-level bindings.
    pub bindings: Bindings,
    /// Start offsets of top-level definitions, by name.
    definitions: HashMap<String, usize>,
    /// End offsets of top-level assignments that bind a defined name again
    /// (`model = model(inputs)` after `def model(...)`), by name.
    rebindings: HashMap<String, Vec<usize>>,
    /// The package modules it imports, found once (loading follows them, and
    /// a changed module's dependents are found through them).
    pub imports: Vec<String>,
    /// For a large file parsed in pieces, the ranges that parsed on their
    /// own: verifying a rewrite parses only the pieces it changed.
    pub parsed_pieces: Vec<Range<usize>>,
}

/// The statement starting at `start`, found by binary search down the nesting.
fn find_statement_starting_at(body: &[Stmt], start: usize) -> Option<&Stmt> {
    let index = body
        .partition_point(|stmt| crate::python::parse::span(stmt).start <= start)
        .checked_sub(1)?;
    let stmt = &body[index];
    if crate::python::parse::span(stmt).start == start {
        return Some(stmt);
    }
    super::walk::nested_bodies(stmt)
        .into_iter()
        .find_map(|nested| find_statement_starting_at(nested, start))
}

impl Module {
    /// Whether the module binds any Horovod module (it already distributes).
    pub fn binds_horovod(&self) -> bool {
        self.bindings
            .iter()
            .any(|(_, binding)| library::is_horovod(&binding.qualified))
    }

    /// A parsed module, with its top-level definitions indexed and its bindings.
    pub(super) fn new(
        name: String,
        is_package_init: bool,
        source: SourceFile,
        body: Vec<Stmt>,
        module_names: &ModuleIndex,
    ) -> Module {
        let mut module = Module {
            name,
            is_package_init,
            source,
            body,
            bindings: Bindings::default(),
            definitions: HashMap::new(),
            rebindings: HashMap::new(),
            imports: Vec::new(),
            parsed_pieces: Vec::new(),
        };
        module.index_definitions();
        let context = module.context(module_names);
        module.bindings = collect_bindings(&module.body, &context, &Bindings::default());
        assume_unbound_tf(&mut module);
        module.imports = imported_package_modules(&module, module_names);
        module
    }

    /// A class or function defined at the top level (also inside top-level `if`/`try`).
    pub fn definition(&self, name: &str) -> Option<&Stmt> {
        let start = *self.definitions.get(name)?;
        find_statement_starting_at(&self.body, start)
    }

    /// The definition a use of `name` at offset `at` refers to: none once a
    /// top-level assignment has bound the name to something else (the name
    /// then holds what the factory returned). A use inside a function, with
    /// no offset, runs after the top level has bound it: any such
    /// assignment after the definition hides it.
    pub fn definition_at(&self, name: &str, at: Option<usize>) -> Option<&Stmt> {
        let start = *self.definitions.get(name)?;
        let rebound = self.rebindings.get(name).is_some_and(|ends| {
            ends.iter()
                .any(|&end| end > start && at.is_none_or(|at| end <= at))
        });
        if rebound {
            return None;
        }
        find_statement_starting_at(&self.body, start)
    }

    /// Indexes the top-level definitions by name (the first one wins), so that
    /// looking a name up does not walk the module each time.
    fn index_definitions(&mut self) {
        let mut definitions = HashMap::new();
        super::walk::for_each_statement(&self.body, false, &mut |stmt| {
            let name = match stmt {
                Stmt::ClassDef(class) => class.name.as_str(),
                Stmt::FunctionDef(function) => function.name.as_str(),
                Stmt::AsyncFunctionDef(function) => function.name.as_str(),
                _ => return,
            };
            definitions
                .entry(name.to_string())
                .or_insert(crate::python::parse::span(stmt).start);
        });
        let mut rebindings: HashMap<String, Vec<usize>> = HashMap::new();
        super::walk::for_each_statement(&self.body, false, &mut |stmt| {
            if let Stmt::Assign(assign) = stmt {
                for target in &assign.targets {
                    if let ast::Expr::Name(name) = target
                        && definitions.contains_key(name.id.as_str())
                    {
                        rebindings
                            .entry(name.id.to_string())
                            .or_default()
                            .push(crate::python::parse::span(stmt).end);
                    }
                }
            }
        });
        self.definitions = definitions;
        self.rebindings = rebindings;
    }

    pub fn context<'a>(&'a self, package_modules: &'a ModuleIndex) -> ModuleContext<'a> {
        ModuleContext {
            module_name: &self.name,
            is_package_init: self.is_package_init,
            package_modules,
        }
    }
}

/// A file that could not be analysed, or that had nothing to analyse.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct FileProblem {
    pub relative_path: String,
    pub kind: FileProblemKind,
}

impl FileProblem {
    /// The line and column of the problem, when it has one.
    pub fn location(&self) -> Option<crate::python::source::Location> {
        match &self.kind {
            FileProblemKind::Error(error) => error.location(),
            FileProblemKind::Notebook(error) => error.location,
            FileProblemKind::NotPython(_) => None,
        }
    }

    /// The notebook cell the problem is in, when it is in one.
    pub fn cell(&self) -> Option<usize> {
        match &self.kind {
            FileProblemKind::Notebook(error) => error.cell,
            _ => None,
        }
    }

    /// How it is reported: errors make the exit code 2, a file that is not Python (a notebook in another language) is a warning.
    pub fn severity(&self) -> crate::diagnostics::Severity {
        match &self.kind {
            FileProblemKind::Error(_) | FileProblemKind::Notebook(_) => {
                crate::diagnostics::Severity::Error
            }
            FileProblemKind::NotPython(_) => crate::diagnostics::Severity::Warning,
        }
    }

    pub fn message(&self) -> String {
        match &self.kind {
            FileProblemKind::Error(error) => error.to_string(),
            FileProblemKind::Notebook(error) => error.to_string(),
            FileProblemKind::NotPython(language) => {
                format!("a notebook in {language}, not Python: not analysed")
            }
        }
    }
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum FileProblemKind {
    Error(LoadError),
    /// A notebook that could not be read, or whose cells do not parse.
    Notebook(NotebookError),
    /// A notebook whose kernel runs another language (its name).
    NotPython(String),
}

/// What a dotted name refers to.
#[derive(Debug, Clone, Copy)]
pub enum Symbol<'a> {
    Module(&'a Module),
    Class(&'a Module, &'a ast::StmtClassDef),
    Function(&'a Module, &'a Stmt),
    /// Outside the package (canonical name).
    External,
    Unknown,
}

/// All modules of the package, loaded once.
#[derive(Debug, Default)]
pub struct Package {
    pub root: PathBuf,
    pub modules: Vec<Module>,
    pub problems: Vec<FileProblem>,
    /// Every module name of the package, parsed or not.
    pub module_names: ModuleIndex,
    by_name: FxHashMap<String, usize>,
    /// `final_name` and `is_subclass` answers: the package does not change
    /// once loaded, and rules ask the same questions of every call.
    memo: Memo,
}

/// Answers already computed, shared by the threads analysing modules.
#[derive(Debug, Default)]
struct Memo {
    final_names: RwLock<FxHashMap<String, String>>,
    subclasses: RwLock<FxHashMap<(String, String), bool>>,
}

/// The packages enclosing the root: when the root itself has an
/// `__init__.py`, its name (and its parents' while they have one) prefix every
/// module name, as Python would see them.
pub fn enclosing_packages(root: &Path) -> Vec<String> {
    let mut prefix = Vec::new();
    let mut directory = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    while directory.join("__init__.py").is_file() {
        match directory.file_name() {
            Some(name) => prefix.push(name.to_string_lossy().into_owned()),
            None => break,
        }
        if !directory.pop() {
            break;
        }
    }
    prefix.reverse();
    prefix
}

/// Each file's module name and whether it is a package's `__init__.py`.
fn module_names(root: &Path, files: &[ReadFile]) -> Vec<(String, bool)> {
    let enclosing = enclosing_packages(root);
    files
        .iter()
        .map(|file| module_name(&enclosing, &file.relative_path))
        .collect()
}

/// The module name of each path (relative to `root`) and whether it is a
/// package's `__init__.py`, as the loader names the files.
pub fn module_names_of_paths(root: &Path, relative_paths: &[&str]) -> Vec<(String, bool)> {
    let enclosing = enclosing_packages(root);
    relative_paths
        .iter()
        .map(|path| module_name(&enclosing, path))
        .collect()
}

/// The dotted module name of a file relative to the package root, after the
/// enclosing packages, and whether it is a package's `__init__.py`.
fn module_name(enclosing_packages: &[String], relative_path: &str) -> (String, bool) {
    // A notebook's last segment (`train:ipynb`) is no identifier: no module can import it.
    let notebook = relative_path
        .strip_suffix(".ipynb")
        .map(|stem| format!("{stem}:ipynb"));
    let without_extension = match &notebook {
        Some(name) => name.as_str(),
        None => relative_path.strip_suffix(".py").unwrap_or(relative_path),
    };
    let mut parts: Vec<&str> = without_extension.split('/').collect();
    let is_package_init = parts.last().is_some_and(|last| *last == "__init__");
    if is_package_init {
        parts.pop();
    }
    let name: Vec<&str> = enclosing_packages
        .iter()
        .map(String::as_str)
        .chain(parts)
        .collect();
    (name.join("."), is_package_init)
}

impl Package {
    /// Reads every given file (paths relative to `root`), parses those that can
    /// matter, in parallel, and builds module bindings.
    pub fn load(root: &Path, relative_paths: &[String]) -> Package {
        Package::from_read_files(root, read_files(root, relative_paths), None)
    }

    /// The package of files already read (`read_files`), parsing those that
    /// can matter. With `selected` files, only those in their import
    /// neighbourhood (`super::neighbourhood`): what their rewrite depends on.
    pub fn from_read_files(
        root: &Path,
        read: Vec<Result<ReadFile, FileProblem>>,
        selected: Option<&HashSet<String>>,
    ) -> Package {
        let mut package = Package {
            root: root.to_path_buf(),
            ..Package::default()
        };
        let mut files = Vec::new();
        for result in read {
            match result {
                Ok(file) => files.push(file),
                Err(problem) => package.problems.push(problem),
            }
        }
        let names = module_names(root, &files);
        package.module_names = ModuleIndex::new(names.iter().map(|(name, _)| name.clone()));
        let mut loader = Loader::new(&files, &names);
        if let Some(selected) = selected {
            loader.keep_to_neighbourhood_of(selected);
        }
        loader.parse_all(&mut package);
        package.index_modules();
        package
    }

    /// Each file's import group (`neighbourhood::import_groups`): a file's
    /// rewrite depends on the files of its group only.
    pub fn import_groups(root: &Path, files: &[ReadFile]) -> Vec<usize> {
        let names = module_names(root, files);
        let imports: Vec<Vec<String>> = files
            .par_iter()
            .zip(&names)
            .map(|(file, (name, is_package_init))| {
                import_lines::imported_modules_of_module(&file.text, name, *is_package_init)
            })
            .collect();
        let imports: Vec<&[String]> = imports.iter().map(Vec::as_slice).collect();
        neighbourhood::import_groups(&imports, &names)
    }

    /// Sorts modules and problems by path (parsing order varies) and indexes
    /// modules by name.
    fn index_modules(&mut self) {
        self.modules
            .sort_by(|a, b| a.source.relative_path.cmp(&b.source.relative_path));
        self.problems
            .sort_by(|a, b| a.relative_path.cmp(&b.relative_path));
        self.by_name = self
            .modules
            .iter()
            .enumerate()
            .map(|(index, module)| (module.name.clone(), index))
            .collect();
    }

    /// The given files plus every parsed module that imports one of them,
    /// transitively (a training script importing a changed model module).
    pub fn with_dependents(&self, files: &HashSet<String>) -> HashSet<String> {
        let importers = self.importers();
        let mut result = files.clone();
        let mut queue: Vec<String> = files.iter().cloned().collect();
        while let Some(file) = queue.pop() {
            for importer in importers.get(file.as_str()).into_iter().flatten() {
                if result.insert(importer.to_string()) {
                    queue.push(importer.to_string());
                }
            }
        }
        result
    }

    /// The files of the parsed modules importing each parsed module's file.
    pub fn importers(&self) -> HashMap<&str, Vec<&str>> {
        let mut importers: HashMap<&str, Vec<&str>> = HashMap::new();
        for module in &self.modules {
            for imported in &module.imports {
                if let Some(target) = self.module(imported) {
                    importers
                        .entry(target.source.relative_path.as_str())
                        .or_default()
                        .push(module.source.relative_path.as_str());
                }
            }
        }
        importers
    }

    pub fn module(&self, name: &str) -> Option<&Module> {
        self.by_name.get(name).map(|&index| &self.modules[index])
    }

    /// What a dotted name refers to, following `__init__.py` re-exports.
    pub fn resolve_symbol(&self, qualified: &str) -> Symbol<'_> {
        self.resolve_symbol_bounded(qualified, 0)
    }

    fn resolve_symbol_bounded(&self, qualified: &str, depth: usize) -> Symbol<'_> {
        if depth > 16 {
            return Symbol::Unknown;
        }
        let segments: Vec<&str> = qualified.split('.').collect();
        for split in (1..=segments.len()).rev() {
            let module_name = segments[..split].join(".");
            let Some(module) = self.module(&module_name) else {
                continue;
            };
            let rest = &segments[split..];
            let Some(first) = rest.first() else {
                return Symbol::Module(module);
            };
            if let Some(definition) = module.definition(first) {
                return match (definition, rest.len()) {
                    (Stmt::ClassDef(class), 1) => Symbol::Class(module, class),
                    (_, 1) => Symbol::Function(module, definition),
                    _ => Symbol::Unknown,
                };
            }
            if let Some(binding) = module.bindings.get(first) {
                let mut target = binding.qualified.clone();
                for segment in &rest[1..] {
                    target.push('.');
                    target.push_str(segment);
                }
                return self.resolve_symbol_bounded(&target, depth + 1);
            }
            // `from pylib.path import *` in `pylib/__init__.py` re-exports
            // `pylib.path.mkdir` as `pylib.mkdir`.
            let starred = module.bindings.star_imports.iter().find_map(|star| {
                self.module(star)?;
                let mut target = star.clone();
                for segment in rest {
                    target.push('.');
                    target.push_str(segment);
                }
                match self.resolve_symbol_bounded(&target, depth + 1) {
                    Symbol::Unknown | Symbol::External => None,
                    found => Some(found),
                }
            });
            if let Some(found) = starred {
                return found;
            }
            if self.module_names.contains(module_name.as_str()) {
                return Symbol::Unknown;
            }
        }
        if self.module_names.contains(segments[0]) {
            Symbol::Unknown
        } else {
            Symbol::External
        }
    }

    /// The canonical name a symbol finally stands for: a package class or
    /// function as `module.Name`, a library object by its canonical name.
    pub fn final_name(&self, qualified: &str) -> String {
        if let Some(name) = read(&self.memo.final_names).get(qualified) {
            return name.clone();
        }
        let name = self.final_name_bounded(qualified, 0);
        write(&self.memo.final_names).insert(qualified.to_string(), name.clone());
        name
    }

    fn final_name_bounded(&self, qualified: &str, depth: usize) -> String {
        match self.resolve_symbol(qualified) {
            Symbol::Class(module, class) => format!("{}.{}", module.name, class.name),
            Symbol::Function(module, function) => {
                let name = match function {
                    Stmt::FunctionDef(function) => function.name.as_str(),
                    Stmt::AsyncFunctionDef(function) => function.name.as_str(),
                    _ => "",
                };
                format!("{}.{name}", module.name)
            }
            Symbol::Module(module) => module.name.clone(),
            Symbol::External | Symbol::Unknown => {
                // A re-export of a library name (`from tensorflow.keras import Model` in an `__init__`).
                let segments: Vec<&str> = qualified.split('.').collect();
                if depth < 16 {
                    for split in (1..segments.len()).rev() {
                        if let Some(module) = self.module(&segments[..split].join("."))
                            && let Some(binding) = module.bindings.get(segments[split])
                        {
                            let mut target = binding.qualified.clone();
                            for segment in &segments[split + 1..] {
                                target.push('.');
                                target.push_str(segment);
                            }
                            return self.final_name_bounded(&target, depth + 1);
                        }
                    }
                }
                canonical_name(qualified)
            }
        }
    }

    /// Whether the class named `qualified` is `ancestor` or derives from it,
    /// through any number of package classes across files (the class hierarchy).
    pub fn is_subclass(&self, qualified: &str, ancestor: &str) -> bool {
        let key = (qualified.to_string(), ancestor.to_string());
        if let Some(&answer) = read(&self.memo.subclasses).get(&key) {
            return answer;
        }
        let mut visited = HashSet::new();
        let answer = self.is_subclass_bounded(qualified, ancestor, &mut visited);
        write(&self.memo.subclasses).insert(key, answer);
        answer
    }

    fn is_subclass_bounded(
        &self,
        qualified: &str,
        ancestor: &str,
        visited: &mut HashSet<String>,
    ) -> bool {
        let name = self.final_name(qualified);
        if name == ancestor || library_parent(&name).is_some_and(|parent| parent == ancestor) {
            return true;
        }
        if !visited.insert(name.clone()) {
            return false;
        }
        let Symbol::Class(module, class) = self.resolve_symbol(&name) else {
            return false;
        };
        let bases: Vec<String> = class
            .bases
            .iter()
            .filter_map(|base| class_base_name(module, base))
            .collect();
        bases
            .iter()
            .any(|base| self.is_subclass_bounded(base, ancestor, visited))
    }
}

/// A memo table for reading (a poisoned lock still holds valid answers).
fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The parent, in the library, of a library class the rules know.
fn library_parent(canonical: &str) -> Option<&'static str> {
    match library::library_class(canonical)? {
        library::LibraryClass::Model => Some(library::KERAS_MODEL),
        library::LibraryClass::Optimizer(_) => Some(library::KERAS_OPTIMIZER),
        library::LibraryClass::Schedule(_) => Some(library::KERAS_SCHEDULE),
        library::LibraryClass::Callback { .. } => Some("tensorflow.keras.callbacks.Callback"),
    }
}

/// The dotted name of a base class expression, in the defining module.
fn class_base_name(module: &Module, base: &ast::Expr) -> Option<String> {
    if let Some(resolved) = module.bindings.resolve_raw(base) {
        return Some(resolved);
    }
    // A base defined in the same module.
    super::walk::dotted_name(base).map(|name| format!("{}.{name}", module.name))
}

/// Package modules a module imports.
fn imported_package_modules(module: &Module, package_modules: &ModuleIndex) -> Vec<String> {
    let mut imported = Vec::new();
    let context = module.context(package_modules);
    super::walk::for_each_statement(&module.body, true, &mut |stmt| match stmt {
        Stmt::Import(import) => {
            for alias in &import.names {
                imported.push(context.absolute_module(Some(alias.name.as_str()), 0));
            }
        }
        Stmt::ImportFrom(import) => {
            let level = import.level.map_or(0, |level| level.to_u32() as usize);
            let base = context.absolute_module(import.module.as_deref(), level);
            for alias in &import.names {
                imported.push(format!("{base}.{}", alias.name));
            }
            imported.push(base);
        }
        _ => {}
    });
    // `import a.b.c` also runs `a` and `a.b`.
    let mut with_parents = Vec::new();
    for name in imported {
        let segments: Vec<&str> = name.split('.').collect();
        for end in 1..=segments.len() {
            with_parents.push(segments[..end].join("."));
        }
    }
    with_parents.retain(|name| package_modules.contains(name.as_str()));
    with_parents.sort();
    with_parents.dedup();
    with_parents
}

/// Whether code reads an attribute of the name `tf` (`tf.constant(...)`).
fn reads_tf_attribute(body: &[ast::Stmt]) -> bool {
    let mut found = false;
    super::walk::for_each_statement(body, true, &mut |statement| {
        super::walk::walk_statement_expressions(statement, &mut |expr| {
            found |= matches!(expr, ast::Expr::Attribute(attribute)
                if matches!(attribute.value.as_ref(), ast::Expr::Name(name) if name.id.as_str() == "tf"));
        });
    });
    found
}

/// `tf.` used at the top of a module that binds neither `tf` nor tensorflow:
/// the rewrite will import tensorflow as `tf`, so the analysis reads `tf` so
/// already (a second run must see what the first saw).
fn assume_unbound_tf(module: &mut Module) {
    use super::bindings::{Binding, BindingKind};
    // The same test the importer makes before adding `import tensorflow as tf`.
    if module.bindings.name_for("tensorflow").is_some()
        || module.bindings.is_bound("tf")
        || super::bindings::assigned_names(&module.body).contains("tf")
        || !reads_tf_attribute(&module.body)
    {
        return;
    }
    let binding = Binding {
        qualified: "tensorflow".to_string(),
        statement: 0..0,
        kind: BindingKind::Assumed,
    };
    module.bindings.insert("tf", binding);
}

#[cfg(test)]
#[path = "package_tests.rs"]
mod tests;
