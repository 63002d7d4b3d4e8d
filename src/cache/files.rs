//! What the cache knows of each file without reading it, as ruff's cache
//! knows: the size and modification time it had when last read, the hash
//! of its content, and the modules its import lines name. A file whose size
//! and time are unchanged is not read again, unless it was modified so soon
//! before the cache was written that a later edit could keep its time (as
//! git treats "racily clean" files); every other file is read and hashed.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::Xxh3;

use crate::analysis::import_lines::imported_modules_of_module;
use crate::analysis::loader::mentions_ml_library;
use crate::analysis::package::{FileProblem, ReadFile, read_files};

/// A modification this close to the cache's own writing may be followed by
/// another within the file system's time resolution: such a file is read.
const RACY_NANOS: u128 = 2_000_000_000;

/// One file as the cache keeps it.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct FileFacts {
    size: u64,
    modified_nanos: u128,
    /// Its path and content (a notebook's JSON text), hashed.
    pub hash: u64,
    /// Whether it could not be read or decoded: such a file is always read.
    unreadable: bool,
    /// Whether it mentions an ML library (the loader's first test).
    pub mentions_ml: bool,
}

impl FileFacts {
    /// Whether two readings found the file the same (its time included:
    /// a changed time must be stored, or the file is read on every run).
    pub fn same_as(&self, other: &FileFacts) -> bool {
        self.size == other.size
            && self.modified_nanos == other.modified_nanos
            && self.hash == other.hash
            && self.unreadable == other.unreadable
    }
}

/// A file of the package as a run sees it.
pub struct ScannedFile {
    pub relative_path: String,
    pub facts: FileFacts,
    /// The file as read, when it was (changed, new, or racy); `None` when
    /// its stored facts stand.
    pub read: Option<Result<ReadFile, FileProblem>>,
    /// The modules its import lines name (`import_lines`), when it was read:
    /// the cache keeps those of the others apart, read only when a key must
    /// be worked out again.
    pub imports: Option<Vec<String>>,
}

/// The files of a request: read where they changed, known from the cache
/// elsewhere. `stored` gives a path's facts as last stored; `written_nanos`
/// when they were stored.
pub fn scan(
    root: &Path,
    relative_paths: &[String],
    names: &[(String, bool)],
    stored: &(dyn Fn(&str) -> Option<FileFacts> + Sync),
    written_nanos: u128,
) -> Vec<ScannedFile> {
    relative_paths
        .par_iter()
        .zip(names)
        .map(|(relative_path, (name, is_package_init))| {
            let stat = std::fs::metadata(root.join(relative_path))
                .ok()
                .map(|metadata| (metadata.len(), modified_nanos(&metadata)));
            if let (Some((size, modified)), Some(facts)) = (stat, stored(relative_path))
                && !facts.unreadable
                && facts.size == size
                && facts.modified_nanos == modified
                && modified + RACY_NANOS < written_nanos
            {
                return ScannedFile {
                    relative_path: relative_path.clone(),
                    facts,
                    read: None,
                    imports: None,
                };
            }
            let read = read_files(root, std::slice::from_ref(relative_path))
                .pop()
                .expect("one file read");
            let (size, modified) = stat.unwrap_or_default();
            let (facts, imports) = match &read {
                Ok(file) => (
                    FileFacts {
                        size,
                        modified_nanos: modified,
                        hash: file_hash(file),
                        unreadable: false,
                        mentions_ml: mentions_ml_library(&file.text),
                    },
                    imported_modules_of_module(&file.text, name, *is_package_init),
                ),
                Err(problem) => (
                    FileFacts {
                        size,
                        modified_nanos: modified,
                        hash: problem_hash(problem),
                        unreadable: true,
                        mentions_ml: false,
                    },
                    Vec::new(),
                ),
            };
            ScannedFile {
                relative_path: relative_path.clone(),
                facts,
                read: Some(read),
                imports: Some(imports),
            }
        })
        .collect()
}

/// Now, as the cache records when it was written.
pub fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos())
}

fn modified_nanos(metadata: &std::fs::Metadata) -> u128 {
    metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |since| since.as_nanos())
}

/// A hash of one file as read: its path and content.
pub fn file_hash(file: &ReadFile) -> u64 {
    let mut hasher = Xxh3::new();
    hasher.update(file.relative_path.as_bytes());
    hasher.update(&[0]);
    match &file.notebook {
        Some(notebook) => hasher.update(notebook.raw().as_bytes()),
        None => hasher.update(file.text.as_bytes()),
    }
    hasher.digest()
}

/// A file that cannot be read is keyed by what went wrong.
fn problem_hash(problem: &FileProblem) -> u64 {
    let mut hasher = Xxh3::new();
    hasher.update(problem.relative_path.as_bytes());
    hasher.update(&[1]);
    hasher.update(problem.message().as_bytes());
    hasher.digest()
}
