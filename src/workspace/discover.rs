//! Which Python files make up the package: every `.py` and `.ipynb` under the root,
//! honouring `.gitignore`, skipping hidden directories and virtual
//! environments, and refusing symlinks that leave the root.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use ignore::{DirEntry, WalkState};

use crate::analysis::package::{FileProblem, FileProblemKind};
use crate::python::parse::LoadError;

/// The Python files of the package, relative to `root` with `/` separators,
/// sorted, plus the files that were refused.
pub fn discover_python_files(root: &Path) -> (Vec<String>, Vec<FileProblem>) {
    let canonical_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let found = Mutex::new((Vec::new(), Vec::new()));
    // In parallel, as ripgrep walks: on a large tree the walk is a good part
    // of a run whose results all come from the cache.
    ignore::WalkBuilder::new(root)
        .hidden(true)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| {
            let name = entry.file_name().to_string_lossy();
            let is_directory = entry.file_type().is_some_and(|kind| kind.is_dir());
            !(is_directory
                && (name == "__pycache__"
                    || name == "node_modules"
                    || name == "site-packages"
                    || entry.path().join("pyvenv.cfg").is_file()))
        })
        .build_parallel()
        .run(|| {
            Box::new(|entry| {
                if let Ok(entry) = entry {
                    let found_here = classify(root, &canonical_root, &entry);
                    let mut found = found.lock().unwrap_or_else(PoisonError::into_inner);
                    match found_here {
                        Some(Ok(file)) => found.0.push(file),
                        Some(Err(problem)) => found.1.push(problem),
                        None => {}
                    }
                }
                WalkState::Continue
            })
        });
    let (mut files, mut problems) = found.into_inner().unwrap_or_else(PoisonError::into_inner);
    files.sort();
    problems.sort_by(|a: &FileProblem, b| a.relative_path.cmp(&b.relative_path));
    (files, problems)
}

/// A walked entry as a Python file of the package, a refused one, or neither.
fn classify(
    root: &Path,
    canonical_root: &Path,
    entry: &DirEntry,
) -> Option<Result<String, FileProblem>> {
    let path = entry.path();
    if !is_python_source(path) {
        return None;
    }
    let relative = relative_path(root, path)?;
    let is_symlink = entry.file_type().is_some_and(|kind| kind.is_symlink());
    if is_symlink {
        return match path.canonicalize() {
            // Analysed under its real path inside the root.
            Ok(target) if target.starts_with(canonical_root) => None,
            _ => Some(Err(FileProblem {
                relative_path: relative,
                kind: FileProblemKind::Error(LoadError::Unreadable(
                    "symbolic link pointing outside the package root: not analysed".into(),
                )),
            })),
        };
    }
    entry
        .file_type()
        .is_some_and(|kind| kind.is_file())
        .then_some(Ok(relative))
}

/// Whether a file is a Python source the tool reads: a `.py` module or a
/// Jupyter notebook (`.ipynb`), whose code cells are one module.
pub fn is_python_source(path: &Path) -> bool {
    path.extension()
        .is_some_and(|extension| extension == "py" || extension == "ipynb")
}

/// `path` relative to `root`, with `/` separators.
pub fn relative_path(root: &Path, path: &Path) -> Option<String> {
    let relative: PathBuf = path.strip_prefix(root).ok()?.to_path_buf();
    let parts: Vec<String> = relative
        .components()
        .map(|component| component.as_os_str().to_string_lossy().into_owned())
        .collect();
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, relative: &str, text: &str) {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn finds_python_files_sorted_and_skips_what_is_not_the_package() {
        let directory = tempfile::tempdir().unwrap();
        let root = directory.path();
        for relative in [
            "train.py",
            "trainer/model.py",
            "trainer/__init__.py",
            "notebooks/explore.ipynb",
            "deep/a/b/c/d/e/leaf.py",
            // Not the package: ignored, hidden, caches, installed packages, a virtualenv.
            "build/generated.py",
            ".hidden/secret.py",
            "trainer/__pycache__/model.py",
            "lib/site-packages/tensorflow/__init__.py",
            "web/node_modules/tool/script.py",
            "env/lib/module.py",
            // Not Python.
            "README.md",
            "data/train.csv",
        ] {
            write(root, relative, "x = 1\n");
        }
        write(root, ".gitignore", "build/\n");
        write(root, "env/pyvenv.cfg", "home = /usr/bin\n");
        let (files, problems) = discover_python_files(root);
        assert_eq!(
            files,
            [
                "deep/a/b/c/d/e/leaf.py",
                "notebooks/explore.ipynb",
                "train.py",
                "trainer/__init__.py",
                "trainer/model.py",
            ]
        );
        assert!(problems.is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn a_link_leaving_the_root_is_refused_and_one_inside_is_not_read_twice() {
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), "elsewhere.py", "x = 1\n");
        let directory = tempfile::tempdir().unwrap();
        let root = directory.path();
        write(root, "model.py", "x = 1\n");
        std::os::unix::fs::symlink(outside.path().join("elsewhere.py"), root.join("outside.py"))
            .unwrap();
        std::os::unix::fs::symlink(root.join("model.py"), root.join("alias.py")).unwrap();
        let (files, problems) = discover_python_files(root);
        assert_eq!(files, ["model.py"]);
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].relative_path, "outside.py");
        let message = problems[0].message();
        assert!(
            message.contains("symbolic link pointing outside the package root"),
            "{message}"
        );
    }
}
