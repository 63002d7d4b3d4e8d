//! The package's call graph: each module's top level and each function mapped
//! to the functions it may call, in the format of PyCG's micro-benchmark
//! (`main.MyClass.__init__`, `<builtin>.print`, `numpy.save`).
//!
//! Built by abstract interpretation (`call_graph_eval.rs`): modules run in
//! order, calls to package functions are followed with the argument values
//! known at the call, so that functions passed, returned, stored or decorated
//! resolve to what they hold; a function no call reaches runs once with its
//! defaults. Edges an analysis is unsure of are left out.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use rustpython_parser::ast::{self, Expr, Stmt};

use super::bindings::ModuleIndex;
use super::package::{FileProblem, FileProblemKind, Module, Package, read_files};
use super::walk;
use crate::python::parse::parse_module_in_pieces;

#[path = "call_graph_eval.rs"]
mod eval;

/// Callees by caller (module top levels and functions, by dotted name).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CallGraph {
    edges: BTreeMap<String, BTreeSet<String>>,
    /// The module (dotted name) each caller is defined in.
    module_of: BTreeMap<String, String>,
}

impl CallGraph {
    /// The call graph of every parsed module of the package.
    pub fn build(package: &Package) -> CallGraph {
        let defs = collect_defs(&package.modules);
        let mut graph = CallGraph::default();
        for module in &package.modules {
            graph.add_caller(&module.name, &module.name);
        }
        for def in defs.iter().filter(|def| def.is_function()) {
            graph.add_caller(&def.name, &package.modules[def.module].name);
        }
        // Followed calls and imports nest deeply in large packages.
        let edges = std::thread::scope(|scope| {
            std::thread::Builder::new()
                .stack_size(256 * 1024 * 1024)
                .spawn_scoped(scope, || eval::run(package, &defs))
                .expect("spawning the call-graph thread")
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        for (caller, callee) in edges {
            graph.edges.entry(caller).or_default().insert(callee);
        }
        graph
    }

    fn add_caller(&mut self, caller: &str, module: &str) {
        self.edges.entry(caller.to_string()).or_default();
        self.module_of
            .insert(caller.to_string(), module.to_string());
    }

    /// What `function` (a module or function's dotted name) may call, sorted.
    pub fn callees(&self, function: &str) -> impl Iterator<Item = &str> {
        self.edges
            .get(function)
            .into_iter()
            .flatten()
            .map(String::as_str)
    }

    /// Every caller, sorted.
    pub fn callers(&self) -> impl Iterator<Item = &str> {
        self.edges.keys().map(String::as_str)
    }

    /// The callers defined in the given modules only (dotted module names).
    pub fn restricted_to(&self, modules: &BTreeSet<String>) -> CallGraph {
        let keep = |caller: &String| {
            self.module_of
                .get(caller)
                .is_some_and(|module| modules.contains(module))
        };
        CallGraph {
            edges: self
                .edges
                .iter()
                .filter(|(caller, _)| keep(caller))
                .map(|(caller, callees)| (caller.clone(), callees.clone()))
                .collect(),
            module_of: self
                .module_of
                .iter()
                .filter(|(caller, _)| keep(caller))
                .map(|(caller, module)| (caller.clone(), module.clone()))
                .collect(),
        }
    }

    /// `{"caller": ["callee", ...], ...}`, keys and callees sorted.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Object(
            self.edges
                .iter()
                .map(|(caller, callees)| {
                    let callees = callees.iter().cloned().map(serde_json::Value::from);
                    (caller.clone(), serde_json::Value::Array(callees.collect()))
                })
                .collect(),
        )
    }
}

/// Every Python file under `root` (as `discover_python_files` finds them)
/// parsed, with module names relative to the root itself: the call graph
/// names functions as the package's own imports name them.
pub fn load_package(root: &Path, relative_paths: &[String]) -> Package {
    let mut package = Package::default();
    package.root = root.to_path_buf();
    let mut files = Vec::new();
    for result in read_files(root, relative_paths) {
        match result {
            Ok(file) => files.push(file),
            Err(problem) => package.problems.push(problem),
        }
    }
    files.retain(|file| file.notebook.is_none());
    let names: Vec<(String, bool)> = files
        .iter()
        .map(|file| module_name(&file.relative_path))
        .collect();
    package.module_names = ModuleIndex::new(names.iter().map(|(name, _)| name.clone()));
    for (file, (name, is_init)) in files.into_iter().zip(names) {
        match parse_module_in_pieces(&file.text, &file.relative_path) {
            Ok(parsed) => {
                let source = crate::python::source::SourceFile::new(
                    file.relative_path.clone(),
                    file.path.clone(),
                    file.text,
                );
                let module = Module::new(name, is_init, source, parsed.body, &package.module_names);
                package.modules.push(module);
            }
            Err(error) => package.problems.push(FileProblem {
                relative_path: file.relative_path,
                kind: FileProblemKind::Error(error),
            }),
        }
    }
    package
}

/// `pkg/mod.py` is `pkg.mod`, `pkg/__init__.py` is `pkg`.
fn module_name(relative_path: &str) -> (String, bool) {
    let stem = relative_path.strip_suffix(".py").unwrap_or(relative_path);
    let mut parts: Vec<&str> = stem.split('/').collect();
    let is_init = parts.last() == Some(&"__init__");
    if is_init {
        parts.pop();
    }
    (parts.join("."), is_init)
}

pub(super) type DefId = usize;

/// A function, lambda or class of the package, with its dotted name.
pub(super) struct Def<'a> {
    pub name: String,
    pub module: usize,
    pub kind: DefKind<'a>,
    /// The class whose body defines it directly (a method).
    pub owner: Option<DefId>,
}

pub(super) enum DefKind<'a> {
    Function {
        args: &'a ast::Arguments,
        body: &'a [Stmt],
        generator: bool,
    },
    Lambda {
        args: &'a ast::Arguments,
        body: &'a Expr,
    },
    Class,
}

impl Def<'_> {
    pub fn is_function(&self) -> bool {
        !matches!(self.kind, DefKind::Class)
    }
}

/// The definitions of every module, and where each starts (module, offset).
pub(super) struct Defs<'a> {
    pub defs: Vec<Def<'a>>,
    pub at: HashMap<(usize, usize), DefId>,
}

impl<'a> Defs<'a> {
    fn iter(&self) -> impl Iterator<Item = &Def<'a>> {
        self.defs.iter()
    }
}

fn collect_defs(modules: &[Module]) -> Defs<'_> {
    let mut collector = Collector {
        defs: Defs {
            defs: Vec::new(),
            at: HashMap::new(),
        },
        lambdas: HashMap::new(),
        module: 0,
    };
    for (index, module) in modules.iter().enumerate() {
        collector.module = index;
        collector.body(&module.body, &module.name, None);
    }
    collector.defs
}

struct Collector<'a> {
    defs: Defs<'a>,
    /// Lambdas numbered per enclosing scope, as PyCG names them (`<lambda1>`).
    lambdas: HashMap<String, usize>,
    module: usize,
}

impl<'a> Collector<'a> {
    fn add(
        &mut self,
        start: usize,
        name: String,
        kind: DefKind<'a>,
        owner: Option<DefId>,
    ) -> DefId {
        let id = self.defs.defs.len();
        self.defs.defs.push(Def {
            name,
            module: self.module,
            kind,
            owner,
        });
        self.defs.at.insert((self.module, start), id);
        id
    }

    fn body(&mut self, body: &'a [Stmt], scope: &str, class: Option<DefId>) {
        for stmt in body {
            for expr in walk::own_expressions(stmt) {
                self.expression(expr, scope);
            }
            let start = crate::python::parse::span(stmt).start;
            match stmt {
                Stmt::FunctionDef(ast::StmtFunctionDef {
                    name, args, body, ..
                })
                | Stmt::AsyncFunctionDef(ast::StmtAsyncFunctionDef {
                    name, args, body, ..
                }) => {
                    let qualified = format!("{scope}.{name}");
                    let generator = is_generator(body);
                    let kind = DefKind::Function {
                        args,
                        body,
                        generator,
                    };
                    self.add(start, qualified.clone(), kind, class);
                    self.body(body, &qualified, None);
                }
                Stmt::ClassDef(node) => {
                    let qualified = format!("{scope}.{}", node.name);
                    let id = self.add(start, qualified.clone(), DefKind::Class, class);
                    self.body(&node.body, &qualified, Some(id));
                }
                _ => {
                    for nested in walk::nested_bodies(stmt) {
                        self.body(nested, scope, class);
                    }
                }
            }
        }
    }

    fn expression(&mut self, expr: &'a Expr, scope: &str) {
        if let Expr::Lambda(lambda) = expr {
            let count = self.lambdas.entry(scope.to_string()).or_default();
            *count += 1;
            let name = format!("{scope}.<lambda{count}>");
            let kind = DefKind::Lambda {
                args: &lambda.args,
                body: &lambda.body,
            };
            self.add(
                crate::python::parse::span(expr).start,
                name.clone(),
                kind,
                None,
            );
            self.expression(&lambda.body, &name);
            return;
        }
        for child in walk::child_expressions(expr) {
            self.expression(child, scope);
        }
    }
}

/// Whether a function body yields (its own, not a nested function's).
fn is_generator(body: &[Stmt]) -> bool {
    let mut found = false;
    walk::for_each_statement(body, false, &mut |stmt| {
        walk::walk_statement_expressions(stmt, &mut |expr| {
            found |= matches!(expr, Expr::Yield(_) | Expr::YieldFrom(_));
        });
    });
    found
}

#[cfg(test)]
#[path = "call_graph_tests.rs"]
mod tests;
