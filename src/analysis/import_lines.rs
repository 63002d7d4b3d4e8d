//! A textual look at a file's import lines, for files not parsed yet: does
//! it import a module by one of these names? A driver that imports the
//! package's training code (`from trainer import model`) matters even when
//! it never mentions an ML library itself.

use std::collections::HashSet;

/// Whether an `import` or `from` line of `text` names one of `names` (last
/// segments of module names) as a dotted segment or an imported name.
pub fn imports_any(text: &str, names: &HashSet<&str>) -> bool {
    if names.is_empty() {
        return false;
    }
    text.lines().any(|line| {
        let line = line.trim_start();
        let is_import = line.starts_with("import ") || line.starts_with("from ");
        is_import
            && line
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|word| names.contains(word))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn import_lines_naming_a_module_are_found() {
        let names: HashSet<&str> = ["model", "util"].into_iter().collect();
        assert!(imports_any(
            "import os\nfrom trainer import model, util\n",
            &names
        ));
        assert!(imports_any("    from .model import build\n", &names));
        assert!(imports_any("import trainer.model as m\n", &names));
        assert!(!imports_any("import os\nmodel = 3\n", &names));
        assert!(!imports_any("from trainer import models\n", &names));
    }
}
