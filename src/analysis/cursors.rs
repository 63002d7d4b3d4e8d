//! Batch cursors a program advances itself through module-level state: a
//! function declares `global data_index`, advances it (`data_index += span`,
//! `data_index = (data_index + 1) % len(data)`) and cuts the data at it
//! (`data[data_index:data_index + span]`, `data[data_index]`). The batches
//! follow from how many times the function was called, so every process that
//! calls it as often walks the same positions: no seed or shard changes them.

use std::ops::Range;

use rustpython_parser::ast::{Expr, ExprContext, Stmt};

use crate::analysis::training::{ModuleAnalysis, Scope};
use crate::analysis::walk::{walk_expression, walk_statement_expressions};
use crate::python::parse::span;

/// A cut of the data at a global cursor: where, and the cursor's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalCursor {
    pub name: String,
    /// The subscript that cuts the data at it.
    pub cut: Range<usize>,
}

/// The first cut of data at a global cursor in any function of the module.
pub fn global_cursor(module: &ModuleAnalysis) -> Option<GlobalCursor> {
    module
        .scopes
        .iter()
        .filter(|scope| scope.function.is_some())
        .find_map(cursor_of_scope)
}

fn cursor_of_scope(scope: &Scope) -> Option<GlobalCursor> {
    let globals: Vec<&str> = scope
        .facts
        .statements
        .iter()
        .filter_map(|statement| match statement {
            Stmt::Global(global) => Some(global.names.iter().map(|name| name.as_str())),
            _ => None,
        })
        .flatten()
        .collect();
    let advanced: Vec<&str> = globals
        .iter()
        .copied()
        .filter(|name| is_advanced(scope, name))
        .collect();
    if advanced.is_empty() {
        return None;
    }
    scope.facts.statements.iter().find_map(|statement| {
        let mut found = None;
        walk_statement_expressions(statement, &mut |expr| {
            if found.is_none()
                && let Some(name) = cut_position(expr)
                && advanced.contains(&name)
            {
                found = Some(GlobalCursor {
                    name: name.to_string(),
                    cut: span(expr),
                });
            }
        });
        found
    })
}

/// `name += step`, or `name = f(name)` (a value computed from itself).
fn is_advanced(scope: &Scope, name: &str) -> bool {
    scope
        .facts
        .statements
        .iter()
        .any(|statement| match statement {
            Stmt::AugAssign(node) => {
                matches!(node.target.as_ref(), Expr::Name(target) if target.id.as_str() == name)
            }
            Stmt::Assign(node) => {
                let assigns = node.targets.iter().any(
                    |target| matches!(target, Expr::Name(target) if target.id.as_str() == name),
                );
                let mut from_itself = false;
                walk_expression(&node.value, &mut |inner| {
                    from_itself |= matches!(inner, Expr::Name(read) if read.id.as_str() == name);
                });
                assigns && from_itself
            }
            _ => false,
        })
}

/// The name data is cut at: the lower bound of `x[a:b]` (or of the first
/// axis of `x[a:b, :]`), or the index of `x[a]`.
fn cut_position(expr: &Expr) -> Option<&str> {
    // A store (`history[step] = loss`) writes at the position, reads no data.
    let Expr::Subscript(subscript) = expr else {
        return None;
    };
    if subscript.ctx != ExprContext::Load {
        return None;
    }
    let first_axis = match subscript.slice.as_ref() {
        Expr::Tuple(axes) => axes.elts.first()?,
        other => other,
    };
    let position = match first_axis {
        Expr::Slice(slice) => slice.lower.as_deref()?,
        other => other,
    };
    match position {
        Expr::Name(name) => Some(name.id.as_str()),
        _ => None,
    }
}
