//! Orders drawn from a set: `list(set(words))`, `enumerate(set(text))` and
//! `for c in set(text)` walk the set in the order of its items' hashes, and
//! Python hashes strings with a seed of each process's own. Every worker
//! would number the vocabulary differently, and the gradients they average
//! would belong to different words. The walk becomes `sorted(set(...))`,
//! one order in every process.
//!
//! Input: every scope of the module. Output: per walk, a replacement with
//! its DST139 diagnostic. Sets of numbers (`set(range(n))`) hash the same
//! everywhere and are left alone.

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::analysis::walk::{walk_expression, walk_statement_expressions};
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::edit::Edit;
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

pub const SET_ORDER_SORTED: Code = Code::new(
    "DST139",
    "set-order-sorted",
    Severity::Info,
    "A list made from a set (`list(set(words))`) has the order of the items' hashes, which Python seeds per process: each worker would number the items differently, so it is sorted.",
);

pub const CODES: &[Code] = &[SET_ORDER_SORTED];

pub fn run(rewrite: &mut ModuleRewrite) {
    let module = rewrite.module;
    let mut walks = Vec::new();
    // `sorted(list(set(x)))` is in order already: nothing to sort.
    let mut sorted_already = Vec::new();
    for scope in &module.scopes {
        for statement in &scope.facts.statements {
            if let Stmt::For(node) = statement
                && let Some(set) = as_set_call(&node.iter)
            {
                walks.push((span(node.iter.as_ref()), set));
            }
            walk_statement_expressions(statement, &mut |expr| {
                let Expr::Call(call) = expr else {
                    return;
                };
                if matches!(call.func.as_ref(), Expr::Name(name) if name.id.as_str() == "sorted")
                    && let Some(first) = call.args.first()
                {
                    sorted_already.push(span(first));
                }
                let ordering = matches!(call.func.as_ref(), Expr::Name(name)
                    if matches!(name.id.as_str(), "list" | "enumerate" | "tuple"));
                if let (true, Some(first)) = (ordering, call.args.first())
                    && let Some(set) = as_set_call(first)
                {
                    walks.push((span(expr), set));
                }
            });
        }
    }
    walks.retain(|(range, _)| !sorted_already.contains(range));
    walks.sort_by_key(|(range, _)| range.start);
    walks.dedup_by_key(|(range, _)| range.clone());
    for (walk, set) in walks {
        sort_walk(rewrite, walk, set);
    }
}

/// `set(x)` (one argument, not of numbers), the call itself.
fn as_set_call(expr: &Expr) -> Option<&ast::ExprCall> {
    let Expr::Call(call) = expr else {
        return None;
    };
    let is_set = matches!(call.func.as_ref(), Expr::Name(name) if name.id.as_str() == "set");
    (is_set && call.args.len() == 1 && call.keywords.is_empty() && !of_numbers(&call.args[0]))
        .then_some(call)
}

/// A set built from `range(...)`: integers hash to themselves.
fn of_numbers(expr: &Expr) -> bool {
    let mut ranges = false;
    walk_expression(expr, &mut |inner| {
        if let Expr::Call(call) = inner {
            ranges |= matches!(call.func.as_ref(), Expr::Name(name) if name.id.as_str() == "range");
        }
    });
    ranges
}

/// `list(set(x))` becomes `sorted(set(x))`; in `enumerate(set(x))`,
/// `tuple(set(x))` and `for c in set(x)`, the set is sorted.
fn sort_walk(rewrite: &mut ModuleRewrite, walk: std::ops::Range<usize>, set: &ast::ExprCall) {
    let set_text = rewrite.source(span(set)).to_string();
    let whole = match walk == span(set) {
        true => format!("for ... in {set_text}"),
        false => rewrite.source(walk.clone()).to_string(),
    };
    let (range, replacement) = if whole.starts_with("list(") {
        (walk.clone(), format!("sorted({set_text})"))
    } else {
        (span(set), format!("sorted({set_text})"))
    };
    rewrite.edit(Edit::replacement(range, replacement));
    rewrite.diagnose(Diagnostic::new(
        SET_ORDER_SORTED,
        walk,
        format!("`{whole}` walks `{set_text}` in the order of its items' hashes, which Python seeds in each process its own way: every worker would number the items differently, and the gradients they average would not line up; it is sorted now"),
    ));
}
