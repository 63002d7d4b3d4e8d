//! The Keras fits an optimizer drives, so that its rate follows their split:
//! an optimizer built in a `compile` call (or assigned to a name a `compile`
//! of the same scope is given) drives the fits of that model in that scope.
//! `None` when the tool cannot name them all (the optimizer is kept on an
//! object, handed to a function, compiled for a model fitted elsewhere): then
//! the module's rates are decided together.

use std::ops::Range;

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::analysis::library;
use crate::analysis::training::{Scope, TrainingPattern};
use crate::analysis::walk::{dotted_name, keyword};
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

/// The fits (call ranges) the optimizer or schedule built by `call` drives,
/// when the tool can name every one.
pub fn fits_driven_by(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    call: &ast::ExprCall,
) -> Option<Vec<Range<usize>>> {
    let built = span(call);
    let compiles = compiles_of(scope);
    // `model.compile(optimizer=Adam(...))`.
    if let Some(compile) = compiles.iter().find(|compile| {
        optimizer_given(compile).is_some_and(|given| contains(&span(given), &built))
    }) {
        return fits_of_compiled_model(rewrite, scope, compile);
    }
    // `opt = Adam(...)`, then `model.compile(optimizer=opt)`, in one scope;
    // a name bound again (a notebook's `optimizer = ...` cell after cell)
    // holds this optimizer only until its next binding.
    let name = assigned_name(scope, &built)?;
    let holds = binding_of(scope, name, built.start);
    let given: Vec<&&ast::ExprCall> = compiles
        .iter()
        .filter(|compile| holds.contains(&span(**compile).start))
        .filter(|compile| {
            optimizer_given(compile)
                .is_some_and(|given| dotted_name(given).as_deref() == Some(name))
        })
        .collect();
    let handed_elsewhere = scope.facts.calls.iter().any(|site| {
        holds.contains(&span(site.call).start)
            && !given
                .iter()
                .any(|compile| std::ptr::eq(**compile, site.call))
            && site
                .call
                .args
                .iter()
                .chain(site.call.keywords.iter().map(|keyword| &keyword.value))
                .any(|argument| dotted_name(argument).as_deref() == Some(name))
    });
    if given.is_empty() || handed_elsewhere {
        return None;
    }
    let mut fits = Vec::new();
    for compile in given {
        fits.extend(fits_of_compiled_model(rewrite, scope, compile)?);
    }
    Some(fits)
}

/// The fits of the model a `compile` call compiles, in the same scope; `None`
/// when there are none there.
pub fn fits_of_compiled_model(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    compile: &ast::ExprCall,
) -> Option<Vec<Range<usize>>> {
    let Expr::Attribute(attribute) = compile.func.as_ref() else {
        return None;
    };
    let model = dotted_name(&attribute.value)?;
    let fits = fits_of_model(rewrite, scope, &model)?;
    // A name compiled again (a notebook's `model` rebuilt cell after cell)
    // holds another model with another optimizer: this compile drives the
    // fits between it and the next compile of the name.
    let compiled_at = span(compile).end;
    let next_compile = compiles_of(scope)
        .into_iter()
        .filter(|other| {
            matches!(other.func.as_ref(), Expr::Attribute(method)
                if dotted_name(&method.value).as_deref() == Some(model.as_str()))
        })
        .map(|other| span(other).start)
        .filter(|start| *start > compiled_at)
        .min();
    let driven: Vec<Range<usize>> = fits
        .iter()
        .filter(|fit| fit.start > compiled_at && next_compile.is_none_or(|next| fit.start < next))
        .cloned()
        .collect();
    Some(if driven.is_empty() { fits } else { driven })
}

/// The fits of `model` in the scope, as the Keras pattern found them.
pub fn fits_of_model(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    model: &str,
) -> Option<Vec<Range<usize>>> {
    let module = rewrite.module;
    let fits: Vec<Range<usize>> = module
        .sites
        .iter()
        .filter(|site| {
            site.pattern == TrainingPattern::Keras
                && std::ptr::eq(&module.scopes[site.scope], scope)
        })
        .filter_map(|site| {
            scope.facts.calls.iter().find_map(|other| {
                let Expr::Attribute(method) = other.call.func.as_ref() else {
                    return None;
                };
                let is_fit = library::is_keras_fit_method(method.attr.as_str())
                    && dotted_name(&method.value).as_deref() == Some(model)
                    && contains(&site.range, &span(other.call));
                is_fit.then(|| span(other.call))
            })
        })
        .collect();
    (!fits.is_empty()).then_some(fits)
}

fn compiles_of<'a>(scope: &Scope<'a>) -> Vec<&'a ast::ExprCall> {
    scope
        .facts
        .calls
        .iter()
        .map(|site| site.call)
        .filter(|call| matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "compile"))
        .collect()
}

/// The optimizer a `compile` call is given (keyword, else first argument).
fn optimizer_given(compile: &ast::ExprCall) -> Option<&Expr> {
    keyword(compile, "optimizer")
        .map(|keyword| &keyword.value)
        .or_else(|| compile.args.first())
}

/// `name = <call>`: the one name a statement of the scope binds the call to.
pub(super) fn assigned_name<'a>(scope: &Scope<'a>, built: &Range<usize>) -> Option<&'a str> {
    scope
        .facts
        .statements
        .iter()
        .find_map(|statement| match statement {
            Stmt::Assign(assign) if span(assign.value.as_ref()) == *built => {
                match assign.targets.as_slice() {
                    [Expr::Name(name)] => Some(name.id.as_str()),
                    _ => None,
                }
            }
            _ => None,
        })
}

/// Where `name` holds what its assignment at `assigned_at` gave it: up to
/// its next assignment in the scope's own block (to the scope's end when an
/// assignment in a branch or a loop leaves that open).
pub(super) fn binding_of(scope: &Scope, name: &str, assigned_at: usize) -> Range<usize> {
    let mut next = usize::MAX;
    for assignment in scope
        .facts
        .assignments
        .iter()
        .filter(|assignment| assignment.name == name)
    {
        let start = span(assignment.statement).start;
        if !scope
            .body
            .iter()
            .any(|top| std::ptr::eq(top, assignment.statement))
        {
            return assigned_at..usize::MAX;
        }
        if start > assigned_at {
            next = next.min(start);
        }
    }
    assigned_at..next
}

fn contains(outer: &Range<usize>, inner: &Range<usize>) -> bool {
    outer.start <= inner.start && inner.end <= outer.end
}
