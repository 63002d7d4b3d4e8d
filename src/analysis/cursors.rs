//! Batch cursors a program advances itself: a position kept across calls or
//! iterations, advanced from itself (`data_index += span`,
//! `self._cursor = (self._cursor + b) % n`, `start += batch_size`) and read
//! at by a cut of the data (`data[data_index:data_index + span]`,
//! `self._data[self._cursor]`). The batches follow from how many times it
//! was advanced, so every process that advances it as often walks the same
//! positions: no seed or shard changes them.
//!
//! Three kinds keep their position: a `global` name a function declares, an
//! attribute of the object a method is called on, and a name the training
//! loop itself advances.

use std::ops::Range;

use rustpython_parser::ast::{Expr, ExprContext, Stmt};

use crate::analysis::training::{ModuleAnalysis, Scope};
use crate::analysis::walk::{
    dotted_name, for_each_statement, walk_expression, walk_statement_expressions,
};
use crate::python::parse::span;

/// A cut of the data at a cursor: where, and the cursor as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// `data_index`, `self._cursor` or `start`.
    pub name: String,
    /// The subscript that cuts the data at it.
    pub cut: Range<usize>,
}

/// The first cut of data at a cursor kept in module or object state: a
/// `global` name or an attribute of `self`, advanced and read at in a
/// function of the module.
pub fn state_cursor(module: &ModuleAnalysis) -> Option<Cursor> {
    state_cursor_in(module, &|_| true)
}

/// The state cursor (as `state_cursor`) of the functions a loop calls,
/// directly or through functions of the module, by name: a cursor in a
/// function the loop never reaches cuts none of its batches.
pub fn state_cursor_of_loop(module: &ModuleAnalysis, loop_statement: &Stmt) -> Option<Cursor> {
    let mut reached = called_names(std::slice::from_ref(loop_statement));
    let mut frontier: Vec<String> = reached.iter().cloned().collect();
    // A few calls deep: a step helper calling the batch helper.
    for _ in 0..4 {
        let mut next = Vec::new();
        for scope in module
            .scopes
            .iter()
            .filter(|scope| scope.function.is_some())
        {
            if frontier.iter().any(|name| name == scope.name()) {
                for name in called_names(scope.body) {
                    if reached.insert(name.clone()) {
                        next.push(name);
                    }
                }
            }
        }
        frontier = next;
    }
    state_cursor_in(module, &|scope| reached.contains(scope.name()))
}

/// The names the statements call (a function's name, a method's attribute).
fn called_names(statements: &[Stmt]) -> std::collections::HashSet<String> {
    let mut names = std::collections::HashSet::new();
    for_each_statement(statements, true, &mut |statement| {
        walk_statement_expressions(statement, &mut |expr| {
            if let Expr::Call(call) = expr {
                match call.func.as_ref() {
                    Expr::Name(name) => {
                        names.insert(name.id.to_string());
                    }
                    Expr::Attribute(attribute) => {
                        names.insert(attribute.attr.to_string());
                    }
                    _ => {}
                }
            }
        });
    });
    names
}

fn state_cursor_in(module: &ModuleAnalysis, holds: &dyn Fn(&Scope) -> bool) -> Option<Cursor> {
    let seeded = module.scopes.iter().any(|scope| {
        scope
            .facts
            .calls
            .iter()
            .any(|site| dotted_name(&site.call.func).is_some_and(|name| name.ends_with("seed")))
    });
    module
        .scopes
        .iter()
        .filter(|scope| scope.function.is_some() && holds(scope))
        .filter_map(cursor_of_scope)
        // An object whose data its class draws at random, unseeded, holds
        // other data in every process: its cursor walks each one's own.
        .find(|cursor| {
            seeded
                || !cursor.name.starts_with("self.")
                || !cursor
                    .class
                    .is_some_and(|class| draws_at_random(&class.body))
        })
        .map(|cursor| cursor.cursor)
}

/// A cursor found in a method, with the method's class.
struct ScopeCursor<'a> {
    cursor: Cursor,
    name: String,
    class: Option<&'a rustpython_parser::ast::StmtClassDef>,
}

/// Whether a class body calls Python's or NumPy's random draws.
fn draws_at_random(body: &[Stmt]) -> bool {
    let mut draws = false;
    for_each_statement(body, true, &mut |statement| {
        walk_statement_expressions(statement, &mut |expr| {
            if let Expr::Call(call) = expr
                && let Some(name) = dotted_name(&call.func)
            {
                draws |= ["random.", "np.random.", "numpy.random."]
                    .iter()
                    .any(|prefix| name.starts_with(prefix));
            }
        });
    });
    draws
}

/// The cursor of a loop's own: a name its body advances and cuts data at.
pub fn loop_cursor(loop_statement: &Stmt) -> Option<Cursor> {
    let body = match loop_statement {
        Stmt::For(node) => &node.body,
        Stmt::While(node) => &node.body,
        Stmt::AsyncFor(node) => &node.body,
        _ => return None,
    };
    let mut statements = Vec::new();
    for_each_statement(body, false, &mut |statement| statements.push(statement));
    let advanced: Vec<String> = statements
        .iter()
        .filter_map(|statement| advanced_position(statement))
        .filter(|position| !position.contains('.'))
        .collect();
    first_cut(&statements, &advanced)
}

fn cursor_of_scope<'a>(scope: &Scope<'a>) -> Option<ScopeCursor<'a>> {
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
    // A local name starts again at each call: only globals and attributes
    // of `self` keep their position between calls.
    let advanced: Vec<String> = scope
        .facts
        .statements
        .iter()
        .filter_map(|statement| advanced_position(statement))
        .filter(|position| position.starts_with("self.") || globals.contains(&position.as_str()))
        .collect();
    let statements: Vec<&Stmt> = scope.facts.statements.to_vec();
    let cursor = first_cut(&statements, &advanced)?;
    Some(ScopeCursor {
        name: cursor.name.clone(),
        cursor,
        class: scope.class,
    })
}

fn first_cut(statements: &[&Stmt], advanced: &[String]) -> Option<Cursor> {
    if advanced.is_empty() {
        return None;
    }
    // A local name read from the cursor (`start = self._cursor[b]`) cuts
    // where the cursor does.
    let aliases: Vec<(String, String)> = statements
        .iter()
        .filter_map(|statement| match statement {
            Stmt::Assign(assign) => match (assign.targets.as_slice(), position_of(&assign.value)) {
                ([Expr::Name(alias)], Some(position)) if advanced.contains(&position) => {
                    Some((alias.id.to_string(), position))
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    let cursor_at = |position: String| -> Option<String> {
        if advanced.contains(&position) {
            return Some(position);
        }
        aliases
            .iter()
            .find(|(alias, _)| *alias == position)
            .map(|(_, cursor)| cursor.clone())
    };
    statements.iter().find_map(|statement| {
        let mut found = None;
        walk_statement_expressions(statement, &mut |expr| {
            if found.is_none()
                && let Some(position) = cut_position(expr).and_then(cursor_at)
            {
                found = Some(Cursor {
                    name: position,
                    cut: span(expr),
                });
            }
        });
        found
    })
}

/// The position a statement advances from itself: `name += step`,
/// `self.attr += step`, or `x = f(x)` for either.
fn advanced_position(statement: &Stmt) -> Option<String> {
    match statement {
        Stmt::AugAssign(node) => position_of(&node.target),
        Stmt::Assign(node) => {
            let [target] = node.targets.as_slice() else {
                return None;
            };
            let position = position_of(target)?;
            let mut from_itself = false;
            walk_expression(&node.value, &mut |inner| {
                from_itself |= position_of(inner).as_deref() == Some(position.as_str());
            });
            from_itself.then_some(position)
        }
        _ => None,
    }
}

/// `name`, or `self.attr`, as written; an element of positions kept on the
/// object (`self._cursor[b]`, one per row of a batch) is `self._cursor`.
fn position_of(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Subscript(subscript) => {
            position_of(&subscript.value).filter(|position| position.starts_with("self."))
        }
        Expr::Name(name) => Some(name.id.to_string()),
        Expr::Attribute(attribute) => match attribute.value.as_ref() {
            Expr::Name(base) if base.id.as_str() == "self" => {
                Some(format!("self.{}", attribute.attr))
            }
            _ => None,
        },
        _ => None,
    }
}

/// The position data is cut at: the lower bound of `x[a:b]` (or of the
/// first axis of `x[a:b, :]`), or the index of `x[a]`.
fn cut_position(expr: &Expr) -> Option<String> {
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
    position_of(position)
}
