//! Imports the rewrite needs: the name each module is bound to (the module's
//! own binding when it has one, else a fresh name), and, at the end, the
//! import statements of the fresh names that generated code really uses,
//! placed right after the module's tensorflow import.

use std::collections::HashSet;

use rustpython_parser::ast::{self, Constant, Expr, Stmt};

use super::stylist::Stylist;
use crate::analysis::bindings::{Bindings, assigned_names};
use crate::analysis::library;
use crate::analysis::training::{ModuleAnalysis, Scope};
use crate::python::edit::Edit;
use crate::python::parse::span;
use crate::python::source::line_end_including_newline;

/// Names used anywhere in the module, so that generated names stay fresh.
#[derive(Debug, Clone, Default)]
pub struct Names {
    taken: HashSet<String>,
}

impl Names {
    pub fn of_module(module: &ModuleAnalysis) -> Names {
        let mut taken = assigned_names(&module.module.body);
        taken.extend(module.module.bindings.iter().map(|(name, _)| name.clone()));
        Names { taken }
    }

    /// The first free candidate (or the first numbered), now taken.
    pub fn fresh(&mut self, candidates: &[&str]) -> String {
        let name = fresh_name(candidates, &self.taken);
        self.taken.insert(name.clone());
        name
    }
}

pub fn fresh_name(candidates: &[&str], taken: &HashSet<String>) -> String {
    for candidate in candidates {
        if !taken.contains(*candidate) {
            return (*candidate).to_string();
        }
    }
    let base = candidates.first().copied().unwrap_or("name");
    (2..)
        .map(|number| format!("{base}{number}"))
        .find(|name| !taken.contains(name))
        .expect("some numbered name is free")
}

/// An import the rewrite may need: emitted only if generated code uses its name.
#[derive(Debug, Clone)]
struct PendingImport {
    statement: String,
    name: String,
}

#[derive(Debug, Clone, Default)]
pub struct Importer {
    pending: Vec<PendingImport>,
    /// The module binds tensorflow only below the generated imports, which
    /// import it again where they go.
    pub early_tensorflow: bool,
    /// Where the imports go instead of after the module's first TensorFlow
    /// import: above the files it prepares before that import.
    pub early_init_at: Option<usize>,
}

impl Importer {
    /// The name `module` is bound to in `bindings`, or a fresh one whose
    /// import is emitted if generated code uses it.
    pub fn bind(
        &mut self,
        bindings: &Bindings,
        module: &str,
        candidates: &[&str],
        names: &mut Names,
    ) -> String {
        let equivalents = std::iter::once(module).chain(equivalent_modules(module).iter().copied());
        if let Some(name) = equivalents
            .into_iter()
            .find_map(|module| bindings.name_for(module))
        {
            return name.to_string();
        }
        let name = names.fresh(candidates);
        let statement = if name == module {
            format!("import {module}")
        } else {
            format!("import {module} as {name}")
        };
        self.pending.push(PendingImport {
            statement,
            name: name.clone(),
        });
        name
    }

    /// The module's name for tensorflow. `tf` taken only by function-level
    /// `import tensorflow as tf` may be reused at the top.
    pub fn bind_tensorflow(&mut self, module: &ModuleAnalysis, names: &mut Names) -> String {
        if let Some(name) = module.module.bindings.name_for("tensorflow") {
            // Bound only below where generated imports and `hvd.init()` go
            // (a `from tensorflow... import` comes first, then code, then
            // `import tensorflow as tf`): generated code there needs its own
            // import of the same name.
            let anchor = module
                .module
                .body
                .iter()
                .find(|stmt| imports_tensorflow(stmt));
            // Late only with code between (an import further down the same
            // import block binds it before the init block runs).
            // The first tensorflow import binds the name itself: the init
            // block follows it (later `import tensorflow as tf` again in a
            // notebook's cells change nothing).
            let anchor_binds_it = anchor.is_some_and(|anchor| {
                matches!(anchor, Stmt::Import(import) if import.names.iter().any(|alias| {
                    alias.name.as_str() == "tensorflow"
                        && alias.asname.as_deref().unwrap_or("tensorflow") == name
                }))
            });
            let bound_late = !anchor_binds_it
                && module.module.bindings.get(name).is_some_and(|binding| {
                    anchor.is_some_and(|anchor| {
                        module.module.body.iter().any(|stmt| {
                            let at = span(stmt);
                            at.start > span(anchor).end
                                && at.end <= binding.statement.start
                                && !matches!(stmt, Stmt::Import(_) | Stmt::ImportFrom(_))
                        })
                    })
                });
            let bound_below_early_init = self.early_init_at.is_some_and(|at| {
                module
                    .module
                    .bindings
                    .get(name)
                    .is_some_and(|binding| binding.statement.start >= at)
            });
            if (bound_late || bound_below_early_init) && matches!(name, "tf" | "tensorflow") {
                let statement = match name {
                    "tensorflow" => String::from("import tensorflow"),
                    _ => format!("import tensorflow as {name}"),
                };
                self.pending.insert(
                    0,
                    PendingImport {
                        statement,
                        name: name.to_string(),
                    },
                );
                self.early_tensorflow = true;
            }
            return name.to_string();
        }
        let means_tensorflow = |scope: &Scope| {
            scope
                .bindings
                .get("tf")
                .map(|binding| library::canonical_name(&binding.qualified) == "tensorflow")
        };
        let scopes = &module.scopes;
        let tensorflow_only_in_functions = scopes
            .iter()
            .all(|scope| means_tensorflow(scope) != Some(false))
            && scopes
                .iter()
                .any(|scope| means_tensorflow(scope) == Some(true));
        let mut candidates_taken = names.taken.clone();
        if tensorflow_only_in_functions {
            candidates_taken.remove("tf");
        }
        let name = fresh_name(&["tf", "tensorflow"], &candidates_taken);
        names.taken.insert(name.clone());
        let statement = if name == "tensorflow" {
            "import tensorflow".to_string()
        } else {
            format!("import tensorflow as {name}")
        };
        // The tensorflow import comes first: the Horovod import needs it loaded.
        let import = PendingImport {
            statement,
            name: name.clone(),
        };
        self.pending.insert(0, import);
        name
    }

    /// The insertion of the imports that generated code uses, after the
    /// module's tensorflow import (or its last import, or its docstring).
    pub fn edit(
        &self,
        text: &str,
        body: &[Stmt],
        stylist: &Stylist,
        generated: &[Edit],
    ) -> Option<Edit> {
        let used = |import: &&PendingImport| {
            generated
                .iter()
                .any(|edit| uses_name(&edit.content, &import.name))
        };
        let lines: Vec<String> = self
            .pending
            .iter()
            .filter(used)
            .map(|import| import.statement.clone())
            .collect();
        if lines.is_empty() {
            return None;
        }
        if let Some(at) = self.early_init_at {
            return Some(Edit::insertion(at, stylist.indented_lines("", &lines)));
        }
        let anchor = first_ml_import(body)
            .or_else(|| last_import(body))
            .map(span);
        Some(match anchor {
            Some(range) => {
                super::edit_builders::insert_after_statement(text, stylist, &range, &lines)
            }
            None => Edit::insertion(
                after_docstring_and_future(body, text),
                stylist.indented_lines("", &lines),
            ),
        })
    }
}

/// Whether `text` reads an attribute of `name` (`keras.optimizers`, not
/// `tf.keras.optimizers`).
fn uses_name(text: &str, name: &str) -> bool {
    let prefix = format!("{name}.");
    text.match_indices(&prefix).any(|(at, _)| {
        !text[..at]
            .chars()
            .next_back()
            .is_some_and(|before| before.is_alphanumeric() || before == '_' || before == '.')
    })
}

/// Modules that offer the same Horovod API: standalone Keras 2's
/// `horovod.keras` is the `horovod.tensorflow.keras` of tf.keras code.
fn equivalent_modules(module: &str) -> &'static [&'static str] {
    match module {
        "horovod.tensorflow.keras" => &["horovod.keras"],
        "horovod.keras" => &["horovod.tensorflow.keras"],
        _ => &[],
    }
}

pub fn imports_tensorflow(stmt: &Stmt) -> bool {
    match stmt {
        Stmt::Import(import) => import.names.iter().any(|alias| {
            let name = alias.name.as_str();
            name == "tensorflow" || name.starts_with("tensorflow.")
        }),
        Stmt::ImportFrom(import) => import.module.as_deref().is_some_and(|module| {
            import.level.is_none_or(|level| level.to_u32() == 0)
                && (module == "tensorflow" || module.starts_with("tensorflow."))
        }),
        _ => false,
    }
}

/// The first top-level import of tensorflow, else the end of the run of
/// imports that holds the first import of standalone keras: what generated
/// code is placed after. Not the last import: in a notebook the last one may
/// be many cells below code that the rewrite guards.
pub fn first_ml_import(body: &[Stmt]) -> Option<&Stmt> {
    if let Some(tensorflow) = body.iter().find(|stmt| imports_tensorflow(stmt)) {
        return Some(tensorflow);
    }
    let keras = body.iter().position(imports_standalone_keras)?;
    body[keras..]
        .iter()
        .take_while(|stmt| is_import_statement(stmt))
        .last()
}

fn imports_standalone_keras(stmt: &Stmt) -> bool {
    let is_keras = |name: &str| name == "keras" || name.starts_with("keras.");
    match stmt {
        Stmt::Import(import) => import
            .names
            .iter()
            .any(|alias| is_keras(alias.name.as_str())),
        Stmt::ImportFrom(import) => import.module.as_deref().is_some_and(|module| {
            import.level.is_none_or(|level| level.to_u32() == 0) && is_keras(module)
        }),
        _ => false,
    }
}

/// The last top-level import statement (a `try:` of imports counts as one).
pub fn last_import(body: &[Stmt]) -> Option<&Stmt> {
    body.iter().rev().find(|stmt| is_import_statement(stmt))
}

/// An import, or a `try:` made only of imports (the optional-dependency idiom).
pub fn is_import_statement(stmt: &Stmt) -> bool {
    match stmt {
        Stmt::Import(_) | Stmt::ImportFrom(_) => true,
        Stmt::Try(node) => {
            !node.body.is_empty()
                && node
                    .body
                    .iter()
                    .all(|inner| matches!(inner, Stmt::Import(_) | Stmt::ImportFrom(_)))
        }
        _ => false,
    }
}

/// Offset after the module docstring and `from __future__` imports.
pub fn after_docstring_and_future(body: &[Stmt], text: &str) -> usize {
    let mut offset = 0;
    for stmt in body {
        let is_docstring = matches!(stmt, Stmt::Expr(expression) if matches!(expression.value.as_ref(), Expr::Constant(ast::ExprConstant { value: Constant::Str(_), .. })));
        let is_future = matches!(stmt, Stmt::ImportFrom(import) if import.module.as_deref() == Some("__future__"));
        if (is_docstring && offset == 0) || is_future {
            offset = line_end_including_newline(text, span(stmt).end.saturating_sub(1));
        } else {
            break;
        }
    }
    offset
}
