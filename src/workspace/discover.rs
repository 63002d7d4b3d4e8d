//! Which Python files make up the package: every `.py` and `.ipynb` under the root,
//! honouring `.gitignore`, skipping hidden directories and virtual
//! environments, and refusing symlinks that leave the root.

use std::path::{Path, PathBuf};

use crate::analysis::package::{FileProblem, FileProblemKind};
use crate::python::parse::LoadError;

/// The Python files of the package, relative to `root` with `/` separators,
/// sorted, plus the files that were refused.
pub fn discover_python_files(root: &Path) -> (Vec<String>, Vec<FileProblem>) {
    let canonical_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let mut files = Vec::new();
    let mut problems = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
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
        .build();
    for entry in walker.flatten() {
        let path = entry.path();
        if !is_python_source(path) {
            continue;
        }
        let Some(relative) = relative_path(root, path) else {
            continue;
        };
        let is_symlink = entry.file_type().is_some_and(|kind| kind.is_symlink());
        if is_symlink {
            match path.canonicalize() {
                Ok(target) if target.starts_with(&canonical_root) => {
                    // Analysed under its real path inside the root.
                }
                _ => problems.push(FileProblem {
                    relative_path: relative,
                    kind: FileProblemKind::Error(LoadError::Unreadable(
                        "symbolic link pointing outside the package root: not analysed".into(),
                    )),
                }),
            }
            continue;
        }
        if entry.file_type().is_some_and(|kind| kind.is_file()) {
            files.push(relative);
        }
    }
    files.sort();
    (files, problems)
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
