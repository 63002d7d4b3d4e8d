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
    for input in ["src", "catalogue", "Cargo.toml", "Cargo.lock", "build.rs"] {
        println!("cargo:rerun-if-changed={input}");
        let path = Path::new(input);
        if path.is_dir() {
            hash_tree(path, &mut hasher);
        } else if let Ok(bytes) = std::fs::read(path) {
            hasher.write(input.as_bytes());
            hasher.write(&bytes);
        }
    }
    embed_catalogue();
    println!(
        "cargo:rustc-env=DISTRIBUTE_BUILD_ID={}-{:016x}",
        env!("CARGO_PKG_VERSION"),
        hasher.finish()
    );
}

/// Writes `catalogue_files.rs`: every `catalogue/*.yml` as `(file name, text)`,
/// so that adding a library is adding a data file.
fn embed_catalogue() {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("catalogue");
    let mut files: Vec<_> = std::fs::read_dir(&directory)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.path())
                .filter(|path| path.extension().is_some_and(|extension| extension == "yml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut code = String::from("&[\n");
    for file in files {
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        code.push_str(&format!(
            "    ({name:?}, include_str!({:?})),\n",
            file.display().to_string()
        ));
    }
    code.push_str("]\n");
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(Path::new(&out).join("catalogue_files.rs"), code)
        .expect("writing the embedded catalogue list");
}
