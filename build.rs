//! Sets `DISTRIBUTE_BUILD_ID`, a hash of the sources, the manifest and the
//! lock file: the result cache is keyed on it, so a binary built from other
//! sources (even without a version bump) never reads an older build's results.

use std::hash::Hasher;
use std::path::Path;

fn hash_tree(path: &Path, hasher: &mut std::collections::hash_map::DefaultHasher) {
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    let mut paths: Vec<_> = entries.flatten().map(|entry| entry.path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            hash_tree(&path, hasher);
        } else if let Ok(bytes) = std::fs::read(&path) {
            hasher.write(path.to_string_lossy().as_bytes());
            hasher.write(&bytes);
        }
    }
}

fn main() {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for input in ["src", "Cargo.toml", "Cargo.lock", "build.rs"] {
        println!("cargo:rerun-if-changed={input}");
        let path = Path::new(input);
        if path.is_dir() {
            hash_tree(path, &mut hasher);
        } else if let Ok(bytes) = std::fs::read(path) {
            hasher.write(input.as_bytes());
            hasher.write(&bytes);
        }
    }
    println!(
        "cargo:rustc-env=DISTRIBUTE_BUILD_ID={}-{:016x}",
        env!("CARGO_PKG_VERSION"),
        hasher.finish()
    );
}
