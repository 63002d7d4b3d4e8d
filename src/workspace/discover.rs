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
