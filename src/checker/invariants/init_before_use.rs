//! ## Invariant 1: Horovod is initialised, and every name bound, before use
//!
//! `hvd.init()` must run before any other Horovod call (`hvd.rank()` before
//! it raises), and every name a line of the module-level code reads must be
//! bound by then: an import placed after its first use, or a `tf` alias first
//! imported in a later notebook cell, is a `NameError` on every rank.
//!
//! **Proven** when every module-level Horovod call follows the module's own
//! `hvd.init()` and every name read by generated module-level code, and by
//! any module-level line using Horovod, is bound by an earlier statement.
//! **Violated** when a call or a name comes first. **Unknown** when a name
//! read is bound nowhere the checker can see (a star import), or when the
//! module calls Horovod at import time and initialises it elsewhere.

use std::collections::HashSet;

use rustpython_parser::ast::{self, Expr, ExprContext, Stmt};

use crate::analysis::walk::{
    for_each_statement, target_names, walk_expression, walk_statement_expressions,
};
use crate::checker::{Decision, Invariant, Program, Verdict};
use crate::diagnostics::{Code, Severity};
use crate::python::parse::span;

pub const INIT_BEFORE_USE: Code = Code::new(
    "DST301",
    "init-before-use",
    Severity::Error,
    "`hvd.init()` runs before every Horovod call, and every name the module-level code reads is bound before that line runs.",
);

pub struct InitBeforeUse;

impl Invariant for InitBeforeUse {
    fn code(&self) -> Code {
        INIT_BEFORE_USE
    }

    fn check(&self, program: &Program) -> Vec<Decision> {
        if !program.uses_horovod() {
            return Vec::new();
        }
        let mut decisions = horovod_calls_before_init(program);
        decisions.extend(names_read_before_bound(program));
        decisions
    }
}

/// Module-level Horovod calls that run before the module's `hvd.init()`.
fn horovod_calls_before_init(program: &Program) -> Vec<Decision> {
    let index = &program.module.index;
    let top_level = &program.module.scopes[0];
    let init_at_top = index
        .horovod_init
        .clone()
        .filter(|init| top_level.facts.call_at(init).is_some());
    let calls: Vec<_> = program
        .calls()
        .iter()
        .filter(|call| std::ptr::eq(call.scope, top_level))
        .filter(|call| {
            call.horovod_function()
                .is_some_and(|function| !matches!(function, "init" | "run"))
        })
        .filter(|call| !index.is_in_launcher(&span(call.site.statement)))
        .collect();
    let mut decisions = Vec::new();
    for call in calls {
        let range = call.range();
        let line = program.line(range.start);
        match &init_at_top {
            Some(init) if init.start < range.start => {}
            Some(init) => decisions.push(
                Decision::new(
                    INIT_BEFORE_USE,
                    Verdict::Violated,
                    range,
                    format!(
                        "line {line} calls Horovod before `hvd.init()` runs (line {}): it raises on every rank",
                        program.line(init.start)
                    ),
                )
                .with_suggestion("call `hvd.init()` before the first Horovod call"),
            ),
            None if index.horovod_init.is_some() => decisions.push(Decision::new(
                INIT_BEFORE_USE,
                Verdict::Violated,
                range,
                format!("line {line} calls Horovod when the module is loaded, but `hvd.init()` only runs later, inside a function"),
            ).with_suggestion("call `hvd.init()` at the top of the module, after its imports")),
            None => match program.package_calls_horovod(&["init"]) {
                Some((path, init_line)) => decisions.push(Decision::new(
                    INIT_BEFORE_USE,
                    Verdict::Unknown,
                    range,
                    format!("line {line} calls Horovod when the module is loaded; `hvd.init()` is called in {path} (line {init_line}), and the checker cannot show that it runs first"),
                ).with_suggestion("read the Horovod values inside the functions that need them, or make sure the module is imported after `hvd.init()`")),
                None => decisions.push(Decision::new(
                    INIT_BEFORE_USE,
                    Verdict::Violated,
                    range,
                    format!("line {line} calls Horovod, but no module of the package calls `hvd.init()`"),
                ).with_suggestion("call `hvd.init()` at the start of the training script")),
            },
        }
    }
    decisions
}

/// Module-level lines (generated, or using Horovod) that read a name bound
/// only further down.
fn names_read_before_bound(program: &Program) -> Vec<Decision> {
    let bound = module_level_bindings(program.top_level());
    let horovod_names: HashSet<&str> = program
        .module
        .module
        .bindings
        .iter()
        .filter(|(_, binding)| crate::analysis::library::is_horovod(&binding.qualified))
        .map(|(name, _)| name.as_str())
        .collect();
    let star_imports = !program.module.module.bindings.star_imports.is_empty();
    let mut decisions = Vec::new();
    let mut reported: HashSet<String> = HashSet::new();
    for_each_statement(program.top_level(), false, &mut |statement| {
        let own_range = own_range(statement);
        for (name, at) in names_read(statement) {
            let concerns =
                program.is_generated(&own_range) || horovod_names.contains(name.as_str());
            if !concerns || is_builtin(&name) || reported.contains(&name) {
                continue;
            }
            let bound_before = bound
                .iter()
                .any(|(bound, point)| *bound == name && *point <= at);
            if bound_before {
                continue;
            }
            let later = bound.iter().find(|(bound, _)| *bound == name);
            let line = program.line(at);
            let decision = match later {
                Some((_, point)) => Decision::new(
                    INIT_BEFORE_USE,
                    Verdict::Violated,
                    at..at + name.len(),
                    format!("line {line} reads `{name}`, which is bound only at line {}: a NameError on every rank", program.line(*point)),
                ).with_suggestion(format!("move the statement binding `{name}` above line {line}")),
                None if star_imports => Decision::new(
                    INIT_BEFORE_USE,
                    Verdict::Unknown,
                    at..at + name.len(),
                    format!("line {line} reads `{name}`, which no statement before it binds (it may come from a star import)"),
                ),
                None => Decision::new(
                    INIT_BEFORE_USE,
                    Verdict::Unknown,
                    at..at + name.len(),
                    format!("line {line} reads `{name}`, which the checker finds bound nowhere in the module"),
                ),
            };
            reported.insert(name);
            decisions.push(decision);
        }
    });
    decisions
}

/// The range of a statement's own header (a compound statement's body is
/// checked statement by statement).
fn own_range(statement: &Stmt) -> std::ops::Range<usize> {
    let whole = span(statement);
    let body_start = match statement {
        Stmt::For(node) => node.body.first().map(|first| span(first).start),
        Stmt::While(node) => node.body.first().map(|first| span(first).start),
        Stmt::If(node) => node.body.first().map(|first| span(first).start),
        Stmt::With(node) => node.body.first().map(|first| span(first).start),
        Stmt::Try(node) => node.body.first().map(|first| span(first).start),
        Stmt::FunctionDef(node) => node.body.first().map(|first| span(first).start),
        Stmt::ClassDef(node) => node.body.first().map(|first| span(first).start),
        _ => None,
    };
    whole.start..body_start.unwrap_or(whole.end)
}

/// Every name the module level binds, with the offset from which it is bound.
fn module_level_bindings(body: &[Stmt]) -> Vec<(String, usize)> {
    let mut bound = Vec::new();
    for_each_statement(body, false, &mut |statement| {
        let end = span(statement).end;
        let mut bind = |target: &Expr, point: usize| {
            for name in target_names(target) {
                bound.push((name.to_string(), point));
            }
        };
        match statement {
            Stmt::Assign(node) => node.targets.iter().for_each(|target| bind(target, end)),
            Stmt::AnnAssign(node) => bind(&node.target, end),
            Stmt::AugAssign(node) => bind(&node.target, end),
            Stmt::For(node) => bind(&node.target, span(node.target.as_ref()).end),
            Stmt::With(node) => {
                for item in &node.items {
                    if let Some(target) = &item.optional_vars {
                        bind(target, span(target.as_ref()).end);
                    }
                }
            }
            Stmt::FunctionDef(node) => bound.push((node.name.to_string(), span(statement).start)),
            Stmt::AsyncFunctionDef(node) => {
                bound.push((node.name.to_string(), span(statement).start))
            }
            Stmt::ClassDef(node) => bound.push((node.name.to_string(), span(statement).start)),
            Stmt::Import(node) => {
                for alias in &node.names {
                    let name = match &alias.asname {
                        Some(asname) => asname.to_string(),
                        None => alias.name.split('.').next().unwrap_or_default().to_string(),
                    };
                    bound.push((name, end));
                }
            }
            Stmt::ImportFrom(node) => {
                for alias in &node.names {
                    let name = alias.asname.as_ref().unwrap_or(&alias.name);
                    bound.push((name.to_string(), end));
                }
            }
            Stmt::Try(node) => {
                for handler in &node.handlers {
                    let ast::ExceptHandler::ExceptHandler(handler) = handler;
                    if let Some(name) = &handler.name {
                        bound.push((name.to_string(), span(statement).start));
                    }
                }
            }
            _ => {}
        }
        // `(x := ...)` binds at module level too.
        walk_statement_expressions(statement, &mut |expr| {
            if let Expr::NamedExpr(named) = expr {
                for name in target_names(&named.target) {
                    bound.push((name.to_string(), span(expr).end));
                }
            }
        });
    });
    bound
}

/// The names a statement's own expressions read, with their offsets; names
/// bound inside the expression (comprehension targets, lambda parameters)
/// are left out.
fn names_read(statement: &Stmt) -> Vec<(String, usize)> {
    let mut local: HashSet<String> = HashSet::new();
    walk_statement_expressions(statement, &mut |expr| match expr {
        Expr::ListComp(node) => local_targets(&node.generators, &mut local),
        Expr::SetComp(node) => local_targets(&node.generators, &mut local),
        Expr::DictComp(node) => local_targets(&node.generators, &mut local),
        Expr::GeneratorExp(node) => local_targets(&node.generators, &mut local),
        Expr::Lambda(node) => {
            for argument in node
                .args
                .posonlyargs
                .iter()
                .chain(&node.args.args)
                .chain(&node.args.kwonlyargs)
            {
                local.insert(argument.def.arg.to_string());
            }
            if let Some(vararg) = &node.args.vararg {
                local.insert(vararg.arg.to_string());
            }
            if let Some(kwarg) = &node.args.kwarg {
                local.insert(kwarg.arg.to_string());
            }
        }
        _ => {}
    });
    let mut names = Vec::new();
    let mut visit = |expr: &Expr| {
        if let Expr::Name(name) = expr
            && name.ctx == ExprContext::Load
            && !local.contains(name.id.as_str())
        {
            names.push((name.id.to_string(), span(expr).start));
        }
    };
    match statement {
        // A function's body runs later; its decorators and defaults now.
        Stmt::FunctionDef(_) | Stmt::AsyncFunctionDef(_) | Stmt::ClassDef(_) => {
            walk_statement_expressions(statement, &mut visit)
        }
        _ => walk_statement_expressions(statement, &mut visit),
    }
    names
}

fn local_targets(generators: &[ast::Comprehension], local: &mut HashSet<String>) {
    for generator in generators {
        walk_expression(&generator.target, &mut |expr| {
            if let Expr::Name(name) = expr {
                local.insert(name.id.to_string());
            }
        });
    }
}

fn is_builtin(name: &str) -> bool {
    const BUILTINS: &[&str] = &[
        "abs",
        "all",
        "any",
        "ascii",
        "bin",
        "bool",
        "breakpoint",
        "bytearray",
        "bytes",
        "callable",
        "chr",
        "classmethod",
        "compile",
        "complex",
        "delattr",
        "dict",
        "dir",
        "divmod",
        "enumerate",
        "eval",
        "exec",
        "filter",
        "float",
        "format",
        "frozenset",
        "getattr",
        "globals",
        "hasattr",
        "hash",
        "help",
        "hex",
        "id",
        "input",
        "int",
        "isinstance",
        "issubclass",
        "iter",
        "len",
        "list",
        "locals",
        "map",
        "max",
        "memoryview",
        "min",
        "next",
        "object",
        "oct",
        "open",
        "ord",
        "pow",
        "print",
        "property",
        "range",
        "repr",
        "reversed",
        "round",
        "set",
        "setattr",
        "slice",
        "sorted",
        "staticmethod",
        "str",
        "sum",
        "super",
        "tuple",
        "type",
        "vars",
        "zip",
        "__name__",
        "__file__",
        "__doc__",
        "__spec__",
        "__builtins__",
        "__package__",
        "Exception",
        "ValueError",
        "TypeError",
        "KeyError",
        "IndexError",
        "RuntimeError",
        "ImportError",
        "ModuleNotFoundError",
        "AttributeError",
        "NotImplementedError",
        "StopIteration",
        "KeyboardInterrupt",
        "OSError",
        "IOError",
        "FileNotFoundError",
        "FileExistsError",
        "AssertionError",
        "ZeroDivisionError",
        "NameError",
        "True",
        "False",
        "None",
        "Ellipsis",
        "NotImplemented",
        "exit",
        "quit",
        "get_ipython",
        "display",
        "copyright",
        "credits",
        "license",
        "reload",
        "unicode",
        "xrange",
        "raw_input",
        "long",
        "basestring",
        "file",
        "execfile",
        "cmp",
        "reduce",
    ];
    BUILTINS.contains(&name)
}
