//! Which files a commit or pull request changes (git2): the index against
//! HEAD (`--staged`), or the working tree against the merge-base of a
//! revision and HEAD (`--since`). Paths come back relative to the package
//! root; deletions and files outside the root are dropped, renames keep the
//! new path.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use git2::{Delta, Diff, DiffFindOptions, DiffOptions, Repository};

use super::discover::relative_path;

/// What to compare.
#[derive(Debug, Clone)]
pub enum Selection {
    /// The index against HEAD (an unborn HEAD counts as empty).
    Staged,
    /// The working tree (with untracked files) against the merge-base of REV and HEAD.
    Since(String),
}

/// The repository containing `path`, if any (worktrees and subdirectories included).
pub fn open_repository(path: &Path) -> Option<Repository> {
    Repository::discover(path).ok()
}

/// The working directory of the repository containing `path`.
pub fn top_level(path: &Path) -> Option<PathBuf> {
    open_repository(path).and_then(|repository| repository.workdir().map(Path::to_path_buf))
}

/// Changed Python files, relative to `root`, sorted.
pub fn changed_python_files(root: &Path, selection: &Selection) -> Result<Vec<String>> {
    let repository = Repository::discover(root)
        .with_context(|| format!("{}: not inside a git repository", root.display()))?;
    let workdir = working_tree(&repository)?;
    let root = root
        .canonicalize()
        .with_context(|| format!("{}: cannot resolve", root.display()))?;
    let mut options = DiffOptions::new();
    options.include_typechange(true);
    let mut diff = match selection {
        Selection::Staged => staged_changes(&repository, &mut options)?,
        Selection::Since(revision) => changes_since(&repository, revision, &mut options)?,
    };
    let mut find = DiffFindOptions::new();
    find.renames(true);
    diff.find_similar(Some(&mut find))
        .context("detecting renames")?;
    let mut files = python_files_under_root(&diff, &workdir, &root);
    files.sort();
    files.dedup();
    Ok(files)
}

/// The repository's working tree, canonical so that paths under it compare with the root.
fn working_tree(repository: &Repository) -> Result<PathBuf> {
    repository
        .workdir()
        .ok_or_else(|| {
            anyhow!(
                "the repository at {} has no working tree",
                repository.path().display()
            )
        })?
        .canonicalize()
        .context("resolving the repository's working tree")
}

/// The index against HEAD.
fn staged_changes<'r>(repository: &'r Repository, options: &mut DiffOptions) -> Result<Diff<'r>> {
    let head_tree = match repository.head() {
        Ok(head) => Some(head.peel_to_tree().context("reading HEAD's tree")?),
        // No commit yet: everything staged is new.
        Err(error)
            if error.code() == git2::ErrorCode::UnbornBranch
                || error.code() == git2::ErrorCode::NotFound =>
        {
            None
        }
        Err(error) => return Err(error).context("reading HEAD"),
    };
    let index = repository.index().context("reading the index")?;
    repository
        .diff_tree_to_index(head_tree.as_ref(), Some(&index), Some(options))
        .context("comparing the index with HEAD")
}

/// The working tree, untracked files included, against the merge-base of `revision` and HEAD.
fn changes_since<'r>(
    repository: &'r Repository,
    revision: &str,
    options: &mut DiffOptions,
) -> Result<Diff<'r>> {
    let other = repository
        .revparse_single(revision)
        .with_context(|| format!("{revision}: unknown revision"))?
        .peel_to_commit()
        .with_context(|| format!("{revision}: not a commit"))?;
    let head = repository
        .head()
        .context("reading HEAD")?
        .peel_to_commit()
        .context("HEAD is not a commit")?;
    let base = repository
        .merge_base(other.id(), head.id())
        .with_context(|| format!("{revision} and HEAD have no common ancestor"))?;
    let base_tree = repository.find_commit(base)?.tree()?;
    options.include_untracked(true).recurse_untracked_dirs(true);
    repository
        .diff_tree_to_workdir_with_index(Some(&base_tree), Some(options))
        .with_context(|| {
            format!("comparing the working tree with the merge-base of {revision} and HEAD")
        })
}

/// The new path of every added or modified `.py` or `.ipynb` file of a diff that lies
/// under the root, relative to it.
fn python_files_under_root(diff: &Diff, workdir: &Path, root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for delta in diff.deltas() {
        if matches!(
            delta.status(),
            Delta::Deleted | Delta::Ignored | Delta::Unreadable
        ) {
            continue;
        }
        let Some(path) = delta.new_file().path() else {
            continue;
        };
        if !crate::workspace::discover::is_python_source(path) {
            continue;
        }
        let absolute = workdir.join(path);
        if let Some(relative) = relative_path(root, &absolute)
            && !relative.is_empty()
            && !relative.starts_with("..")
        {
            files.push(relative);
        }
    }
    files
}

/// The commit HEAD points at, as hex, when `path` is in a repository with one.
pub fn head_commit(path: &Path) -> Option<String> {
    let repository = open_repository(path)?;
    let commit = repository.head().ok()?.peel_to_commit().ok()?;
    Some(commit.id().to_string())
}
