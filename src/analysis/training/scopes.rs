//! The scopes of a module (its top level, functions and methods) and the calls
//! each scope makes.

use std::collections::HashSet;
use std::ops::Range;

use rayon::prelude::*;
use rustpython_parser::ast::{self, Expr, Stmt};

use super::Scope;
use crate::analysis::bindings::{Bindings, collect_bindings};
use crate::analysis::index;
use crate::analysis::library;
use crate::analysis::package::{Module, Package};
use crate::analysis::walk::{dotted_name, is_scope, nested_bodies};

/// Every scope of a module: its top level first, then each function and method.
pub(super) fn collect_scopes<'a>(module: &'a Module, package: &Package) -> Vec<Scope<'a>> {
    let mut collector = ScopeCollector {
        module,
        package,
        scopes: vec![Scope {
            qualified_name: module.name.clone(),
            function: None,
            body: &module.body,
            bindings: module.bindings.clone(),
            parameters: Vec::new(),
            is_tf_function: false,
            class: None,
            parent: None,
            defined_conditionally: false,
            facts: Default::default(),
        }],
    };
    let top_level = Enclosing {
        parent: 0,
        prefix: &module.name,
        class: None,
        conditional: false,
    };
    collector.collect_nested_scopes(&module.body, &top_level);
    // Each scope's facts are its own: indexed in parallel once scopes are known.
    let mut scopes = collector.scopes;
    scopes
        .par_iter_mut()
        .for_each(|scope| scope.facts = index::scope_facts(scope.body));
    scopes
}

/// Where a body sits while its scopes are collected.
struct Enclosing<'a, 'p> {
    /// Index of the scope whose names the body sees.
    parent: usize,
    /// Qualified name of the enclosing function, class or module.
    prefix: &'p str,
    /// The class whose body this is (functions in it are its methods).
    class: Option<&'a ast::StmtClassDef>,
    /// Inside an `if`/`try`/loop rather than unconditional (a `with` block
    /// runs its body).
    conditional: bool,
}

/// The parts of a `def` or `async def` statement that make a scope.
struct FunctionDefinition<'a> {
    name: &'a str,
    args: &'a ast::Arguments,
    body: &'a [Stmt],
    decorators: &'a [Expr],
}

impl<'a> FunctionDefinition<'a> {
    fn of(stmt: &'a Stmt) -> Option<Self> {
        match stmt {
            Stmt::FunctionDef(ast::StmtFunctionDef {
                name,
                args,
                body,
                decorator_list,
                ..
            })
            | Stmt::AsyncFunctionDef(ast::StmtAsyncFunctionDef {
                name,
                args,
                body,
                decorator_list,
                ..
            }) => Some(FunctionDefinition {
                name: name.as_str(),
                args,
                body,
                decorators: decorator_list,
            }),
            _ => None,
        }
    }

    /// Positional-only, ordinary and keyword-only parameters, in order.
    fn parameters(&self) -> Vec<String> {
        self.args
            .posonlyargs
            .iter()
            .chain(self.args.args.iter())
            .chain(self.args.kwonlyargs.iter())
            .map(|argument| argument.def.arg.to_string())
            .collect()
    }
}

struct ScopeCollector<'a, 'p> {
    module: &'a Module,
    package: &'p Package,
    scopes: Vec<Scope<'a>>,
}

impl<'a> ScopeCollector<'a, '_> {
    fn collect_nested_scopes(&mut self, body: &'a [Stmt], enclosing: &Enclosing<'a, '_>) {
        for stmt in body {
            if let Some(function) = FunctionDefinition::of(stmt) {
                self.collect_function(stmt, &function, enclosing);
            } else if let Stmt::ClassDef(class_def) = stmt {
                let qualified_name = format!("{}.{}", enclosing.prefix, class_def.name);
                let class_body = Enclosing {
                    parent: enclosing.parent,
                    prefix: &qualified_name,
                    class: Some(class_def),
                    conditional: enclosing.conditional,
                };
                self.collect_nested_scopes(&class_def.body, &class_body);
            } else {
                // A `with` block always runs its body (`with strategy.scope():`).
                let always_runs = matches!(stmt, Stmt::With(_) | Stmt::AsyncWith(_));
                let conditional_body = Enclosing {
                    conditional: enclosing.conditional || !always_runs,
                    ..*enclosing
                };
                for nested in nested_bodies(stmt) {
                    self.collect_nested_scopes(nested, &conditional_body);
                }
            }
        }
    }

    /// Adds a function's scope, then the scopes defined in its body.
    fn collect_function(
        &mut self,
        stmt: &'a Stmt,
        function: &FunctionDefinition<'a>,
        enclosing: &Enclosing<'a, '_>,
    ) {
        let inherited = &self.scopes[enclosing.parent].bindings;
        let context = self.module.context(&self.package.module_names);
        let bindings = collect_bindings(function.body, &context, inherited);
        let is_tf_function = function
            .decorators
            .iter()
            .any(|decorator| is_tf_function_decorator(&bindings, decorator));
        let qualified_name = format!("{}.{}", enclosing.prefix, function.name);
        self.scopes.push(Scope {
            qualified_name: qualified_name.clone(),
            function: Some(stmt),
            body: function.body,
            bindings,
            parameters: function.parameters(),
            is_tf_function,
            class: enclosing.class,
            parent: Some(enclosing.parent),
            defined_conditionally: enclosing.conditional,
            facts: Default::default(),
        });
        let function_body = Enclosing {
            parent: self.scopes.len() - 1,
            prefix: &qualified_name,
            class: None,
            conditional: false,
        };
        self.collect_nested_scopes(function.body, &function_body);
    }
}

fn is_tf_function_decorator(bindings: &Bindings, decorator: &Expr) -> bool {
    let target = match decorator {
        Expr::Call(call) => call.func.as_ref(),
        other => other,
    };
    bindings
        .resolve(target)
        .is_some_and(|name| library::is_tf_function(&name))
}

/// The final name of the function or class a call invokes, if the package or library defines it.
pub fn callee_name(
    package: &Package,
    module: &Module,
    scope: &Scope,
    func: &Expr,
) -> Option<String> {
    // The address with the source range: an expression built for a lookup,
    // not in the tree, cannot be taken for another one.
    let key = (
        std::ptr::from_ref(func) as usize,
        crate::python::parse::span(func),
    );
    let known = scope
        .facts
        .callees
        .lock()
        .map(|callees| callees.get(&key).cloned());
    if let Ok(Some(callee)) = known {
        return callee;
    }
    let callee = resolve_callee(package, module, scope, func);
    if let Ok(mut callees) = scope.facts.callees.lock() {
        callees.insert(key, callee.clone());
    }
    callee
}

fn resolve_callee(
    package: &Package,
    module: &Module,
    scope: &Scope,
    func: &Expr,
) -> Option<String> {
    if let Some(raw) = scope.bindings.resolve_raw(func) {
        return Some(package.final_name(&raw));
    }
    // A function or class defined in the same module.
    let name = dotted_name(func)?;
    if let Some(method) = own_method(scope, &name) {
        return Some(method);
    }
    let first = name.split('.').next()?;
    // At the top level, the binding the name holds where it is used.
    let at = scope
        .function
        .is_none()
        .then(|| crate::python::parse::span(func).start);
    module
        .definition_at(first, at)
        .map(|_| package.final_name(&format!("{}.{name}", module.name)))
}

/// `self.build()` in a method: the qualified name of the method `build`
/// its class defines (`module.Agent.build`).
fn own_method(scope: &Scope, name: &str) -> Option<String> {
    let method = name.strip_prefix("self.")?;
    let class = scope.class?;
    let defines = class.body.iter().any(
        |stmt| matches!(stmt, Stmt::FunctionDef(function) if function.name.as_str() == method),
    );
    let (class_path, _) = scope.qualified_name.rsplit_once('.')?;
    (defines && !method.contains('.')).then(|| format!("{class_path}.{method}"))
}

/// Every call of a scope's own statements, with its statement.
pub fn calls_in_scope<'a>(scope: &Scope<'a>) -> Vec<(&'a Stmt, &'a ast::ExprCall)> {
    let calls = scope.facts.calls.iter();
    calls.map(|site| (site.statement, site.call)).collect()
}

/// The call of a scope at exactly this range, with its statement.
pub fn find_call<'a>(
    scope: &Scope<'a>,
    range: &Range<usize>,
) -> Option<(&'a Stmt, &'a ast::ExprCall)> {
    scope
        .facts
        .call_at(range)
        .map(|site| (site.statement, site.call))
}

/// Package functions a scope calls (not counting nested scopes).
pub fn called_functions(package: &Package, module: &Module, scope: &Scope) -> HashSet<String> {
    let mut called = HashSet::new();
    // A `def` or `class` statement's own calls (decorators, defaults) are not
    // the scope calling a function.
    for site in scope
        .facts
        .calls
        .iter()
        .filter(|site| !is_scope(site.statement))
    {
        if let Some(name) = callee_name(package, module, scope, &site.call.func)
            && !library::is_tensorflow(&name)
        {
            called.insert(name);
        }
    }
    called
}
