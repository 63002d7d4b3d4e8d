//! The files a run on a few selected files must load: the selected files,
//! every file importing them (transitively), and everything those import
//! (transitively), read from import lines without parsing.
//!
//! Everything the analysis links across modules follows imports: a model's
//! factory or compile, a step function and the loop calling it, a `fit`
//! handed a model by its caller, a callback class constructed elsewhere. So
//! the rewrite of a selected file, and of the files that depend on it, is
//! the same whether the rest of a large repository is loaded or not, and a
//! pre-commit hook in a repository of many scripts parses a handful of files.
//! Edges are over-approximated (a package import reaches its submodules and
//! its parents), since a missed edge could change a rewrite and an extra one
//! only costs time.

use std::collections::HashSet;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::import_lines::same_module;

/// Above this share of the files, loading the neighbourhood saves little and
/// working it out costs: the whole package is loaded instead.
const MOST_OF_THE_PACKAGE: f64 = 0.5;

/// Per file, whether a run selecting `selected` must load it; `None` when
/// that is most of the package (load everything, as with no selection).
/// `imports` (the modules its import lines name) and `names` (module name,
/// whether a package `__init__`) are per file, in the same order as `paths`.
pub fn files_to_load(
    paths: &[&str],
    imports: &[&[String]],
    names: &[(String, bool)],
    selected: &HashSet<String>,
) -> Option<Vec<bool>> {
    let limit = (paths.len() as f64 * MOST_OF_THE_PACKAGE).max(1.0) as usize;
    let mut wanted: Vec<bool> = paths.iter().map(|path| selected.contains(*path)).collect();
    if count(&wanted) > limit {
        return None;
    }
    let graph = ImportGraph::new(imports, names);
    // Importers of the selection, transitively.
    let mut frontier: Vec<usize> = (0..paths.len()).filter(|&index| wanted[index]).collect();
    while !frontier.is_empty() {
        frontier = graph.importers_of(&frontier, &mut wanted);
        if count(&wanted) > limit {
            return None;
        }
    }
    // What all of those import, transitively.
    let mut frontier: Vec<usize> = (0..paths.len()).filter(|&index| wanted[index]).collect();
    while let Some(index) = frontier.pop() {
        for &imported in &graph.imports[index] {
            if !wanted[imported] {
                wanted[imported] = true;
                frontier.push(imported);
            }
        }
    }
    (count(&wanted) <= limit).then_some(wanted)
}

/// Per file, the number of its group: files joined by import lines, in either
/// direction and transitively. A file's rewrite depends only on files of its
/// group (the neighbourhood of any selection lies within the groups of the
/// selected files), so a stored result stays right while its group's files
/// are unchanged.
pub fn import_groups(imports: &[&[String]], names: &[(String, bool)]) -> Vec<usize> {
    let modules = Modules::new(names);
    let mut groups = UnionFind::new(names.len());
    // A package's submodules are joined once; an import reaching them then
    // joins one of them (materialising each such edge was most of the work).
    let mut joined_submodules: FxHashMap<&str, usize> = FxHashMap::default();
    for (index, imported_names) in imports.iter().enumerate() {
        for imported in imported_names.iter() {
            reached_modules(imported, names, &modules, &mut |reached| match reached {
                Reached::Module(other) => groups.join(index, other),
                Reached::Submodules(package) => {
                    let Some(submodules) = modules.submodules.get(package) else {
                        return;
                    };
                    let first = *joined_submodules.entry(package).or_insert_with(|| {
                        for &submodule in submodules {
                            groups.join(submodules[0], submodule);
                        }
                        submodules[0]
                    });
                    groups.join(index, first);
                }
            });
        }
    }
    (0..names.len()).map(|index| groups.root(index)).collect()
}

/// Disjoint sets of files, joined by imports.
struct UnionFind {
    parent: Vec<usize>,
}

impl UnionFind {
    fn new(size: usize) -> Self {
        UnionFind {
            parent: (0..size).collect(),
        }
    }

    fn root(&mut self, mut index: usize) -> usize {
        while self.parent[index] != index {
            self.parent[index] = self.parent[self.parent[index]];
            index = self.parent[index];
        }
        index
    }

    fn join(&mut self, a: usize, b: usize) {
        let (a, b) = (self.root(a), self.root(b));
        if a != b {
            self.parent[a.max(b)] = a.min(b);
        }
    }
}

/// Per file, the number of its group among the files that can matter, and
/// whether it can: those the loader may parse (`loader`), over-approximated
/// from import lines. A file mentioning an ML library can matter, and so
/// does everything such a file imports, transitively; so does a file
/// importing one that may train (a driver), and what it imports. Groups
/// join files by the imports of files that can matter only: a file that
/// cannot (a utility no training code imports, importing only utilities)
/// is a group of its own, whose result is empty whatever it holds.
pub fn groups_that_matter(
    imports: &[&[String]],
    names: &[(String, bool)],
    mentions_ml: &[bool],
) -> (Vec<usize>, Vec<bool>) {
    let graph = ImportGraph::new(imports, names);
    let files = names.len();
    let mut matters = mentions_ml.to_vec();
    let mut may_train = mentions_ml.to_vec();
    loop {
        let mut frontier: Vec<usize> = (0..files).filter(|&index| matters[index]).collect();
        while let Some(index) = frontier.pop() {
            for &imported in &graph.imports[index] {
                if !matters[imported] {
                    matters[imported] = true;
                    frontier.push(imported);
                }
            }
        }
        let drivers: Vec<usize> = (0..files)
            .filter(|&index| {
                !may_train[index]
                    && graph.imports[index]
                        .iter()
                        .any(|&imported| may_train[imported])
            })
            .collect();
        if drivers.is_empty() {
            break;
        }
        for index in drivers {
            may_train[index] = true;
            matters[index] = true;
        }
    }
    let mut groups = UnionFind::new(files);
    for (index, imported) in graph.imports.iter().enumerate() {
        if matters[index] {
            for &other in imported {
                groups.join(index, other);
            }
        }
    }
    let groups = (0..files).map(|index| groups.root(index)).collect();
    (groups, matters)
}

fn count(flags: &[bool]) -> usize {
    flags.iter().filter(|flag| **flag).count()
}

/// Which package files each file imports, by its import lines.
struct ImportGraph {
    imports: Vec<Vec<usize>>,
}

impl ImportGraph {
    fn new(imports: &[&[String]], names: &[(String, bool)]) -> Self {
        let modules = Modules::new(names);
        let imports = imports
            .par_iter()
            .map(|imported_names| {
                let mut found = Vec::new();
                for imported in imported_names.iter() {
                    reached_modules(imported, names, &modules, &mut |reached| match reached {
                        Reached::Module(index) => found.push(index),
                        Reached::Submodules(package) => {
                            found.extend(modules.submodules.get(package).into_iter().flatten())
                        }
                    });
                }
                found.sort_unstable();
                found.dedup();
                found
            })
            .collect();
        ImportGraph { imports }
    }

    /// Files importing one of `targets`, not yet wanted: marked, and returned.
    fn importers_of(&self, targets: &[usize], wanted: &mut [bool]) -> Vec<usize> {
        let targets: HashSet<usize> = targets.iter().copied().collect();
        let mut found = Vec::new();
        for (index, imports) in self.imports.iter().enumerate() {
            if !wanted[index] && imports.iter().any(|imported| targets.contains(imported)) {
                wanted[index] = true;
                found.push(index);
            }
        }
        found
    }
}

/// The package's module names, indexed for `reached_modules`.
#[derive(Default)]
struct Modules<'n> {
    /// Candidates by last name segment: `same_module` also matches a name
    /// lacking the package prefix (a root inside the package).
    by_last_segment: FxHashMap<&'n str, Vec<usize>>,
    /// The modules under each package name.
    submodules: FxHashMap<&'n str, Vec<usize>>,
}

impl<'n> Modules<'n> {
    fn new(names: &'n [(String, bool)]) -> Self {
        let mut modules = Modules::default();
        for (index, (name, _)) in names.iter().enumerate() {
            modules
                .by_last_segment
                .entry(last_segment(name))
                .or_default()
                .push(index);
            let mut parent = name.as_str();
            while let Some((shorter, _)) = parent.rsplit_once('.') {
                modules.submodules.entry(shorter).or_default().push(index);
                parent = shorter;
            }
        }
        modules
    }
}

/// What an imported name reaches: one file, or every module under a package.
enum Reached<'n> {
    Module(usize),
    Submodules(&'n str),
}

/// The files an imported dotted name may run: the module itself, its parent
/// packages, and, for a package, its submodules (`from pkg import (` over
/// several lines names them where the scan cannot see).
fn reached_modules<'n>(
    imported: &'n str,
    names: &'n [(String, bool)],
    modules: &Modules,
    found: &mut dyn FnMut(Reached<'n>),
) {
    // A namespace package has no module of its own name.
    found(Reached::Submodules(imported));
    let mut prefix = imported;
    let mut is_imported_name = true;
    loop {
        let candidates = modules.by_last_segment.get(last_segment(prefix));
        for &index in candidates.into_iter().flatten() {
            let name = &names[index].0;
            if !same_module(prefix, name) {
                continue;
            }
            found(Reached::Module(index));
            if is_imported_name {
                found(Reached::Submodules(name.as_str()));
            }
        }
        match prefix.rsplit_once('.') {
            Some((parent, _)) => prefix = parent,
            None => break,
        }
        is_imported_name = false;
    }
}

fn last_segment(name: &str) -> &str {
    name.rsplit_once('.').map_or(name, |(_, last)| last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::import_lines::{imported_modules, package_of};

    /// Each file's module name (and whether a package `__init__`) and the
    /// modules its import lines name, from (path, module name, text).
    fn names_and_imports(files: &[(&str, &str, &str)]) -> (Vec<(String, bool)>, Vec<Vec<String>>) {
        let is_init = |path: &str| path.ends_with("__init__.py");
        let names = files
            .iter()
            .map(|(path, name, _)| (name.to_string(), is_init(path)))
            .collect();
        let imports = files
            .iter()
            .map(|(path, name, text)| imported_modules(text, package_of(name, is_init(path))))
            .collect();
        (names, imports)
    }

    fn load(files: &[(&str, &str, &str)], selected: &[&str]) -> Option<Vec<String>> {
        let paths: Vec<&str> = files.iter().map(|(path, _, _)| *path).collect();
        let (names, imports) = names_and_imports(files);
        let imports: Vec<&[String]> = imports.iter().map(Vec::as_slice).collect();
        let selected = selected.iter().map(|path| path.to_string()).collect();
        let wanted = files_to_load(&paths, &imports, &names, &selected)?;
        Some(
            paths
                .iter()
                .zip(wanted)
                .filter(|(_, wanted)| *wanted)
                .map(|(path, _)| path.to_string())
                .collect(),
        )
    }

    /// Ten unrelated scripts, and a small trainer package.
    fn repository() -> Vec<(&'static str, &'static str, &'static str)> {
        let mut files = vec![
            ("trainer/__init__.py", "trainer", ""),
            (
                "trainer/model.py",
                "trainer.model",
                "import tensorflow as tf\nfrom trainer import layers\n",
            ),
            (
                "trainer/layers.py",
                "trainer.layers",
                "import tensorflow as tf\n",
            ),
            (
                "trainer/task.py",
                "trainer.task",
                "from trainer import (\n    model,\n)\n",
            ),
            (
                "trainer/callbacks.py",
                "trainer.callbacks",
                "import tensorflow as tf\n",
            ),
        ];
        let scripts = [
            "script0.py",
            "script1.py",
            "script2.py",
            "script3.py",
            "script4.py",
            "script5.py",
            "script6.py",
            "script7.py",
            "script8.py",
            "script9.py",
        ];
        for script in scripts {
            files.push((
                script,
                script.trim_end_matches(".py"),
                "import tensorflow as tf\n",
            ));
        }
        files
    }

    /// The files of each group, groups in the order of their first file.
    fn groups(files: &[(&str, &str, &str)]) -> Vec<Vec<String>> {
        let (names, imports) = names_and_imports(files);
        let imports: Vec<&[String]> = imports.iter().map(Vec::as_slice).collect();
        let group_of = import_groups(&imports, &names);
        let mut groups: Vec<Vec<String>> = Vec::new();
        for (index, group) in group_of.iter().enumerate() {
            if group_of.iter().position(|other| other == group) == Some(index) {
                groups.push(
                    (0..files.len())
                        .filter(|&other| group_of[other] == *group)
                        .map(|other| files[other].0.to_string())
                        .collect(),
                );
            }
        }
        groups
    }

    #[test]
    fn files_joined_by_imports_form_one_group_and_unrelated_scripts_their_own() {
        let groups = groups(&repository());
        assert_eq!(
            groups[0],
            [
                "trainer/__init__.py",
                "trainer/model.py",
                "trainer/layers.py",
                "trainer/task.py",
                "trainer/callbacks.py"
            ]
        );
        assert_eq!(groups.len(), 11, "{groups:?}");
        assert!(
            groups[1..].iter().all(|group| group.len() == 1),
            "{groups:?}"
        );
    }

    #[test]
    fn a_changed_model_module_loads_its_importers_and_their_imports_only() {
        let loaded = load(&repository(), &["trainer/model.py"]).expect("a small neighbourhood");
        // The driver imports it over several lines; the package import
        // reaches every submodule, an over-approximation on purpose.
        for expected in [
            "trainer/model.py",
            "trainer/task.py",
            "trainer/layers.py",
            "trainer/__init__.py",
        ] {
            assert!(
                loaded.contains(&expected.to_string()),
                "{expected} in {loaded:?}"
            );
        }
        assert!(
            !loaded.iter().any(|path| path.starts_with("script")),
            "{loaded:?}"
        );
    }

    #[test]
    fn a_changed_script_loads_itself_alone() {
        assert_eq!(
            load(&repository(), &["script3.py"]).unwrap(),
            ["script3.py"]
        );
    }

    #[test]
    fn a_module_most_files_depend_on_loads_everything() {
        let mut files = repository();
        for file in files
            .iter_mut()
            .filter(|(path, _, _)| path.starts_with("script"))
        {
            file.2 = "from trainer import layers\n";
        }
        assert_eq!(load(&files, &["trainer/layers.py"]), None);
    }
}
