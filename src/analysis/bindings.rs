//! Which local names refer to which modules and objects, through every import
//! form. Bindings the tool resolves but cannot fully trust are marked, so the
//! rules can warn: TensorFlow bound other than by an import statement, and a
//! TensorFlow member assigned to a variable.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use rustpython_parser::ast::{self, Expr, Stmt};

use super::library::{canonical_name, is_tensorflow};
use super::walk::{dotted_name, for_each_statement, target_names};
use crate::python::parse::span;

/// What one local name is bound to by an import (or a resolvable alias).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The dotted name as imported, before canonicalisation (`keras.layers.Dense`).
    pub qualified: String,
    /// The import statement (or assignment) that binds it.
    pub statement: Range<usize>,
    pub kind: BindingKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindingKind {
    Import,
    /// `tf = importlib.import_module("tensorflow")`: resolved (the name is a
    /// string literal), but other dynamic forms would be missed: the rules warn.
    DynamicImport,
    /// `Adam = tf.keras.optimizers.Adam`: resolved, but a later reassignment of
    /// the name would not be followed.
    MemberAlias,
    /// `tf.` used but `tf` never bound (a damaged or missing import): taken
    /// for tensorflow, as the import the rewrite adds will make it, so that a
    /// second run sees what the first saw.
    Assumed,
}

/// A name-to-binding table for one scope: its own names over those of the
/// enclosing scope, which are shared, not copied (a module with thousands of
/// imports and thousands of functions would otherwise copy its table into
/// each function).
#[derive(Debug, Clone, Default)]
pub struct Bindings {
    /// Shared between clones; copied only when a clone binds a name.
    names: Arc<FxHashMap<String, Binding>>,
    /// The enclosing scope's bindings, seen where this scope binds nothing.
    enclosing: Option<Arc<Bindings>>,
    /// Modules imported with `from M import *`.
    pub star_imports: Vec<String>,
}

impl Bindings {
    /// A scope's bindings, seeing the enclosing scope's.
    fn nested_in(enclosing: &Bindings) -> Bindings {
        let is_empty = enclosing.names.is_empty() && enclosing.enclosing.is_none();
        Bindings {
            names: Arc::default(),
            star_imports: enclosing.star_imports.clone(),
            enclosing: (!is_empty).then(|| Arc::new(enclosing.clone())),
        }
    }

    pub fn get(&self, name: &str) -> Option<&Binding> {
        let mut bindings = self;
        loop {
            if let Some(binding) = bindings.names.get(name) {
                return Some(binding);
            }
            bindings = bindings.enclosing.as_deref()?;
        }
    }

    /// Every visible name once (a name bound here hides the enclosing scope's).
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Binding)> {
        let mut layers = vec![self.names.as_ref()];
        let mut enclosing = self.enclosing.as_deref();
        while let Some(bindings) = enclosing {
            layers.push(bindings.names.as_ref());
            enclosing = bindings.enclosing.as_deref();
        }
        let shadowed = layers.clone();
        layers
            .into_iter()
            .enumerate()
            .flat_map(move |(depth, names)| {
                let inner = shadowed[..depth].to_vec();
                names
                    .iter()
                    .filter(move |(name, _)| !inner.iter().any(|layer| layer.contains_key(*name)))
            })
    }

    pub fn insert(&mut self, name: &str, binding: Binding) {
        Arc::make_mut(&mut self.names).insert(name.to_string(), binding);
    }

    /// The resolved dotted name of a name or attribute chain, as written (not canonical).
    pub fn resolve_raw(&self, expr: &Expr) -> Option<String> {
        match expr {
            Expr::Name(name) => self.get(name.id.as_str()).map(|b| b.qualified.clone()),
            Expr::Attribute(_) => {
                // Built in one string, from the innermost name outwards.
                let mut attributes = Vec::new();
                let mut current = expr;
                while let Expr::Attribute(attribute) = current {
                    attributes.push(attribute.attr.as_str());
                    current = &attribute.value;
                }
                let Expr::Name(name) = current else {
                    return None;
                };
                let base = &self.get(name.id.as_str())?.qualified;
                let length = base.len() + attributes.iter().map(|a| a.len() + 1).sum::<usize>();
                let mut resolved = String::with_capacity(length);
                resolved.push_str(base);
                for attribute in attributes.iter().rev() {
                    resolved.push('.');
                    resolved.push_str(attribute);
                }
                Some(resolved)
            }
            _ => None,
        }
    }

    /// The canonical qualified name of an expression (`optimizers.Adam` ->
    /// `tensorflow.keras.optimizers.Adam`).
    pub fn resolve(&self, expr: &Expr) -> Option<String> {
        self.resolve_raw(expr).map(|raw| canonical_name(&raw))
    }

    /// The local name bound to exactly `qualified` (canonical), if any: the
    /// module's own alias for tensorflow, for example.
    pub fn name_for(&self, qualified: &str) -> Option<&str> {
        let mut candidates: Vec<&String> = self
            .iter()
            .filter(|(_, binding)| {
                binding.kind != BindingKind::Assumed
                    && canonical_name(&binding.qualified) == qualified
            })
            .map(|(name, _)| name)
            .collect();
        candidates.sort();
        candidates.first().map(|name| name.as_str())
    }

    /// The local name bound to exactly `qualified` as imported (`keras`
    /// itself, where `name_for` takes it for `tensorflow.keras`).
    pub fn name_for_as_imported(&self, qualified: &str) -> Option<&str> {
        self.iter()
            .filter(|(_, binding)| {
                binding.kind != BindingKind::Assumed && binding.qualified == qualified
            })
            .map(|(name, _)| name.as_str())
            .min()
    }

    /// Whether any local name is bound (by any means) to `name`.
    pub fn is_bound(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}

/// Every module name of the analysed package, indexed for import resolution.
#[derive(Debug, Default)]
pub struct ModuleIndex {
    names: HashSet<String>,
    by_last_segment: HashMap<String, Vec<String>>,
}

impl ModuleIndex {
    pub fn new(names: impl IntoIterator<Item = String>) -> Self {
        let mut index = ModuleIndex::default();
        for name in names {
            let last = name.rsplit('.').next().unwrap_or_default().to_string();
            index
                .by_last_segment
                .entry(last)
                .or_default()
                .push(name.clone());
            index.names.insert(name);
        }
        for candidates in index.by_last_segment.values_mut() {
            candidates.sort();
        }
        index
    }

    pub fn contains(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// The package module an absolute import names, seen from `importer`: the
    /// exact name, else the module whose name ends with it that shares the
    /// longest prefix with the importer (a package root above the analysed
    /// root, a `src/` layout, or a script importing its siblings).
    fn resolve(&self, module: &str, importer: &str) -> Option<String> {
        if self.names.contains(module) {
            return Some(module.to_string());
        }
        let last = module.rsplit('.').next()?;
        let suffix = format!(".{module}");
        let common_prefix = |candidate: &str| {
            candidate
                .split('.')
                .zip(importer.split('.'))
                .take_while(|(a, b)| a == b)
                .count()
        };
        // Only modules sharing a directory with the importer: `import os` in
        // `app.train` must not resolve to some `vendored.stdlib.os` elsewhere.
        self.by_last_segment
            .get(last)?
            .iter()
            .filter(|candidate| candidate.ends_with(&suffix) && common_prefix(candidate) > 0)
            .max_by_key(|candidate| (common_prefix(candidate), std::cmp::Reverse(candidate.len())))
            .cloned()
    }
}

/// How import statements name the package's own modules.
pub struct ModuleContext<'a> {
    /// Dotted name of the importing module.
    pub module_name: &'a str,
    /// Whether the importing module is a package `__init__.py`.
    pub is_package_init: bool,
    pub package_modules: &'a ModuleIndex,
}

impl ModuleContext<'_> {
    /// The package that relative imports of this module start from.
    fn current_package(&self) -> &str {
        if self.is_package_init {
            self.module_name
        } else {
            self.module_name
                .rsplit_once('.')
                .map_or("", |(package, _)| package)
        }
    }

    /// Resolves the module named by an import (`from ..x import y` has level 2).
    pub fn absolute_module(&self, module: Option<&str>, level: usize) -> String {
        if level == 0 {
            let module = module.unwrap_or_default();
            // `from a.b import c`: `a.b` may be a package module under another prefix.
            if let Some(resolved) = self.package_modules.resolve(module, self.module_name) {
                return resolved;
            }
            // `import a.b.c` where only the package `a` or `a.b` is known under a prefix.
            let segments: Vec<&str> = module.split('.').collect();
            for end in (1..segments.len()).rev() {
                let head = segments[..end].join(".");
                if let Some(resolved) = self.package_modules.resolve(&head, self.module_name) {
                    return format!("{resolved}.{}", segments[end..].join("."));
                }
            }
            return module.to_string();
        }
        let mut base: Vec<&str> = self
            .current_package()
            .split('.')
            .filter(|p| !p.is_empty())
            .collect();
        for _ in 1..level {
            base.pop();
        }
        let mut parts: Vec<String> = base.into_iter().map(String::from).collect();
        if let Some(module) = module {
            parts.push(module.to_string());
        }
        parts.join(".")
    }
}

/// Adds the bindings of one import statement.
pub fn add_import_bindings(stmt: &Stmt, context: &ModuleContext, bindings: &mut Bindings) {
    match stmt {
        Stmt::Import(import) => {
            for alias in &import.names {
                let module = context.absolute_module(Some(alias.name.as_str()), 0);
                let (name, qualified) = match &alias.asname {
                    Some(asname) => (asname.to_string(), module),
                    // `import a.b.c` binds `a`; `a.b.c.X` then resolves through attributes.
                    None => {
                        let first = alias.name.split('.').next().unwrap_or_default();
                        let dropped = alias.name.split('.').count() - 1;
                        let segments: Vec<&str> = module.split('.').collect();
                        let kept = segments.len().saturating_sub(dropped).max(1);
                        (first.to_string(), segments[..kept].join("."))
                    }
                };
                bindings.insert(
                    &name,
                    Binding {
                        qualified,
                        statement: span(stmt),
                        kind: BindingKind::Import,
                    },
                );
            }
        }
        Stmt::ImportFrom(import) => {
            let level = import.level.map_or(0, |level| level.to_u32() as usize);
            let module = context.absolute_module(import.module.as_deref(), level);
            for alias in &import.names {
                if alias.name.as_str() == "*" {
                    bindings.star_imports.push(module.clone());
                    continue;
                }
                let name = alias.asname.as_ref().unwrap_or(&alias.name).to_string();
                let qualified = if module.is_empty() {
                    alias.name.to_string()
                } else {
                    format!("{module}.{}", alias.name)
                };
                bindings.insert(
                    &name,
                    Binding {
                        qualified,
                        statement: span(stmt),
                        kind: BindingKind::Import,
                    },
                );
            }
        }
        _ => {}
    }
}

/// The string module name given to `importlib.import_module("...")` or `__import__("...")`.
fn dynamic_import_target(value: &Expr, bindings: &Bindings) -> Option<String> {
    let Expr::Call(call) = value else { return None };
    let callee = dotted_name(&call.func)?;
    let resolved = bindings.resolve_raw(&call.func).unwrap_or(callee.clone());
    if resolved != "importlib.import_module" && callee != "__import__" {
        return None;
    }
    match call.args.first() {
        Some(Expr::Constant(ast::ExprConstant {
            value: ast::Constant::Str(module),
            ..
        })) => Some(module.clone()),
        _ => None,
    }
}

/// Collects the bindings of a statement list: imports anywhere in it (not in
/// nested functions or classes), dynamic imports of tensorflow, and aliases of
/// library members assigned at this level.
pub fn collect_bindings(body: &[Stmt], context: &ModuleContext, inherited: &Bindings) -> Bindings {
    let mut bindings = Bindings::nested_in(inherited);
    for_each_statement(body, false, &mut |stmt| {
        add_import_bindings(stmt, context, &mut bindings);
        if let Stmt::Assign(assign) = stmt
            && let [Expr::Name(target)] = assign.targets.as_slice()
        {
            if let Some(module) = dynamic_import_target(&assign.value, &bindings) {
                bindings.insert(
                    target.id.as_str(),
                    Binding {
                        qualified: module,
                        statement: span(stmt),
                        kind: BindingKind::DynamicImport,
                    },
                );
            } else if matches!(*assign.value, Expr::Attribute(_))
                && let Some(raw) = bindings.resolve_raw(&assign.value)
                && is_library_member(&raw, context)
            {
                bindings.insert(
                    target.id.as_str(),
                    Binding {
                        qualified: raw,
                        statement: span(stmt),
                        kind: BindingKind::MemberAlias,
                    },
                );
            }
        }
    });
    bindings
}

/// A member of a library, not of the package (`tf.keras.layers.Dense`,
/// `tfa.optimizers.SWA`, `plt.savefig`): an alias of it is resolved to it.
fn is_library_member(qualified: &str, context: &ModuleContext) -> bool {
    let root = qualified.split('.').next().unwrap_or_default();
    is_tensorflow(&canonical_name(qualified)) || !context.package_modules.contains(root)
}

/// Names assigned anywhere in a statement list (not in nested scopes): used to
/// pick generated names that collide with nothing.
pub fn assigned_names(body: &[Stmt]) -> HashSet<String> {
    let mut names = HashSet::new();
    for_each_statement(body, true, &mut |stmt| match stmt {
        Stmt::Assign(assign) => {
            for target in &assign.targets {
                names.extend(target_names(target).into_iter().map(String::from));
            }
        }
        Stmt::AnnAssign(assign) => {
            names.extend(target_names(&assign.target).into_iter().map(String::from))
        }
        Stmt::AugAssign(assign) => {
            names.extend(target_names(&assign.target).into_iter().map(String::from))
        }
        Stmt::For(node) => names.extend(target_names(&node.target).into_iter().map(String::from)),
        Stmt::FunctionDef(function) => {
            names.insert(function.name.to_string());
        }
        Stmt::ClassDef(class) => {
            names.insert(class.name.to_string());
        }
        Stmt::With(node) => {
            for item in &node.items {
                if let Some(vars) = &item.optional_vars {
                    names.extend(target_names(vars).into_iter().map(String::from));
                }
            }
        }
        Stmt::Import(import) => {
            for alias in &import.names {
                let name = alias.asname.as_ref().map_or_else(
                    || alias.name.split('.').next().unwrap_or_default().to_string(),
                    |asname| asname.to_string(),
                );
                names.insert(name);
            }
        }
        Stmt::ImportFrom(import) => {
            for alias in &import.names {
                names.insert(alias.asname.as_ref().unwrap_or(&alias.name).to_string());
            }
        }
        _ => {}
    });
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffix_matches_stay_within_the_importers_tree() {
        let index = ModuleIndex::new(
            [
                "examples.app.pkg.model",
                "vendored.stdlib.os",
                "src.mypkg.models",
            ]
            .map(String::from),
        );
        // A package root above the analysed root: found through the shared prefix.
        assert_eq!(
            index
                .resolve("pkg.model", "examples.app.pkg.train")
                .as_deref(),
            Some("examples.app.pkg.model")
        );
        assert_eq!(
            index.resolve("mypkg.models", "src.mypkg.train").as_deref(),
            Some("src.mypkg.models")
        );
        // `import os` in an unrelated tree is the standard library, not a copy elsewhere.
        assert_eq!(index.resolve("os", "examples.app.pkg.train"), None);
    }
}
