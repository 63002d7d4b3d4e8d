//! A textual look at a file's import lines, for files not parsed yet: which
//! modules does it import? A driver that imports the package's training code
//! (`from trainer import model`) matters even when it never mentions an ML
//! library itself.

use std::collections::HashSet;

/// The dotted module names a file's `import` and `from` lines name:
/// `import a.b` gives `a.b`; `from a import b, c` gives `a`, `a.b`, `a.c`;
/// relative imports are resolved against `package` (the file's package).
pub fn imported_modules(text: &str, package: &str) -> Vec<String> {
    let mut modules = Vec::new();
    // Only lines holding the word are looked at: a result cache works out
    // every file's imports on each run, and most lines import nothing.
    let bytes = text.as_bytes();
    let mut previous_line_start = None;
    for position in memchr::memmem::find_iter(bytes, b"import") {
        let line_start = memchr::memrchr(b'\n', &bytes[..position]).map_or(0, |index| index + 1);
        if previous_line_start == Some(line_start) {
            continue;
        }
        previous_line_start = Some(line_start);
        let line_end =
            memchr::memchr(b'\n', &bytes[position..]).map_or(bytes.len(), |index| position + index);
        let line = text[line_start..line_end].trim_start();
        if let Some(rest) = line.strip_prefix("import ") {
            for part in rest.split(',') {
                if let Some(name) = part.split_whitespace().next() {
                    modules.push(name.to_string());
                }
            }
        } else if let Some(rest) = line.strip_prefix("from ") {
            let Some((source, names)) = rest.split_once(" import ") else {
                continue;
            };
            let Some(base) = absolute(source.trim(), package) else {
                continue;
            };
            for part in names.trim_start_matches('(').split(',') {
                if let Some(name) = part.split_whitespace().next()
                    && name.chars().all(|c| c.is_alphanumeric() || c == '_')
                    && !name.is_empty()
                {
                    modules.push(join(&base, name));
                }
            }
            if !base.is_empty() {
                modules.push(base);
            }
        }
    }
    modules
}

/// The dotted module names the import lines of module `name`'s text name.
pub fn imported_modules_of_module(text: &str, name: &str, is_package_init: bool) -> Vec<String> {
    imported_modules(text, package_of(name, is_package_init))
}

/// The package a module's relative imports start from: itself for a
/// package's `__init__`, else its parent.
pub fn package_of(module: &str, is_package_init: bool) -> &str {
    if is_package_init {
        module
    } else {
        module.rsplit_once('.').map_or("", |(package, _)| package)
    }
}

/// `..models` in package `a.b.c` -> `a.b.models`; absolute names as written.
fn absolute(source: &str, package: &str) -> Option<String> {
    let level = source.chars().take_while(|c| *c == '.').count();
    let rest = &source[level..];
    if level == 0 {
        return Some(rest.to_string());
    }
    let mut parts: Vec<&str> = package.split('.').filter(|part| !part.is_empty()).collect();
    for _ in 1..level {
        parts.pop()?;
    }
    let base = parts.join(".");
    Some(join(&base, rest))
}

fn join(base: &str, name: &str) -> String {
    match (base.is_empty(), name.is_empty()) {
        (true, _) => name.to_string(),
        (_, true) => base.to_string(),
        _ => format!("{base}.{name}"),
    }
}

/// Whether an imported name and a module name denote the same module, also
/// when one of them lacks the package prefix the other has (a root inside
/// the package, or a `src/` layout).
pub fn same_module(imported: &str, module: &str) -> bool {
    let ends_with_dotted = |long: &str, short: &str| {
        long.strip_suffix(short)
            .is_some_and(|prefix| prefix.ends_with('.'))
    };
    imported == module || ends_with_dotted(imported, module) || ends_with_dotted(module, imported)
}

/// Whether a file importing `imports` reaches one of `modules`.
pub fn imports_any(imports: &[String], modules: &HashSet<&str>) -> bool {
    imports
        .iter()
        .any(|imported| modules.iter().any(|module| same_module(imported, module)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn import_lines_name_modules() {
        let text = "import os, numpy as np\nfrom trainer import model, util\nfrom .data import load\nfrom .. import common\n";
        let modules = imported_modules(text, "trainer.jobs");
        for expected in [
            "os",
            "numpy",
            "trainer",
            "trainer.model",
            "trainer.util",
            "trainer.jobs.data",
            "trainer.jobs.data.load",
            "trainer.common",
        ] {
            assert!(
                modules.iter().any(|module| module == expected),
                "{expected} in {modules:?}"
            );
        }
    }

    #[test]
    fn only_lines_starting_with_an_import_count_once_each() {
        // Windows line ends, the word twice on one line, in a docstring and
        // on the first line, and an indented import.
        let text = "\"\"\"Nothing to import here.\"\"\"\r\nimport os\r\nfrom a import b  # import c\r\nx = 1\n    import json\nimporter = 2\n";
        assert_eq!(imported_modules(text, ""), ["os", "a.b", "a", "json"]);
        assert_eq!(imported_modules("import first\n", ""), ["first"]);
    }

    #[test]
    fn a_file_importing_a_module_of_the_set_is_found_and_others_are_not() {
        let relevant: HashSet<&str> = ["trainer.model"].into_iter().collect();
        let driver = imported_modules("from trainer import model\n", "");
        assert!(imports_any(&driver, &relevant));
        let other = imported_modules("from email import model_utils\nimport data.model2\n", "");
        assert!(!imports_any(&other, &relevant));
        // A root inside the package: the module is `model`, the import `trainer.model`.
        let short: HashSet<&str> = ["model"].into_iter().collect();
        assert!(imports_any(&driver, &short));
    }
}
