//! The TF1 loops an optimizer drives, so that its rate follows their split
//! and not the module's: the train ops its `minimize` or `apply_gradients`
//! makes (`training_op = tf.train.AdamOptimizer(lr).minimize(loss)`, or
//! through the name the optimizer is bound to until its next binding), and
//! the loops around every `run` of one of them. A notebook binds
//! `optimizer` and `training_op` again in each cell: each binding drives
//! the runs it reaches. `None` when the tool cannot name them all (a train
//! op kept in a list or handed on, a run outside any loop, an optimizer
//! used some other way): then the module's rates are decided together.

use std::ops::Range;

use rustpython_parser::ast::{self, Expr, ExprContext, Stmt};

use super::fits_driven::{assigned_name, binding_of};
use crate::analysis::library::{self, LibraryClass};
use crate::analysis::training::Scope;
use crate::analysis::walk::{dotted_name, keyword, walk_expression, walk_statement_expressions};
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

/// Methods of an optimizer whose use says nothing about where it steps.
const STEP_METHODS: &[&str] = &["minimize", "apply_gradients"];
const OTHER_METHODS: &[&str] = &[
    "compute_gradients",
    "get_slot",
    "get_slot_names",
    "variables",
];

/// The loops (statement ranges, innermost and outer ones) around every run
/// of a train op the TF1 optimizer built by `call` makes.
pub fn loops_driven_by(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    call: &ast::ExprCall,
) -> Option<Vec<Range<usize>>> {
    let callee = rewrite.callee(scope, &call.func)?;
    let is_tf1 = library::canonical_name(&callee).starts_with("tensorflow.train.");
    if !is_tf1
        || !matches!(
            library::library_class(&callee),
            Some(LibraryClass::Optimizer(_))
        )
    {
        return None;
    }
    let train_ops = train_ops_of(scope, call)?;
    let mut loops = Vec::new();
    for (name, binding) in &train_ops {
        loops.extend(loops_running(rewrite, scope, name, binding, 0)?);
    }
    (!loops.is_empty()).then_some(loops)
}

/// The train ops (name, where that binding holds) the optimizer makes.
fn train_ops_of(scope: &Scope, call: &ast::ExprCall) -> Option<Vec<(String, Range<usize>)>> {
    let built = span(call);
    // `train_op = tf.train.AdamOptimizer(lr).minimize(loss)`.
    if let Some(train_op) = step_assigned(scope, |receiver| span(receiver) == built) {
        return Some(vec![train_op]);
    }
    let name = assigned_name(scope, &built)?;
    let holds = binding_of(scope, name, built.start);
    let mut train_ops = Vec::new();
    for statement in scope.facts.statements.iter().copied() {
        let at = span(statement);
        if !holds.contains(&at.start) || at.start == built.start {
            continue;
        }
        let mut other_use = false;
        let mut steps = false;
        walk_statement_expressions(statement, &mut |expr| match expr {
            Expr::Call(method) => {
                if let Expr::Attribute(attribute) = method.func.as_ref()
                    && matches!(attribute.value.as_ref(), Expr::Name(receiver) if receiver.id.as_str() == name)
                {
                    steps |= STEP_METHODS.contains(&attribute.attr.as_str());
                }
            }
            Expr::Name(used) if used.id.as_str() == name && used.ctx == ExprContext::Load => {
                other_use |= !receives_a_method(statement, expr);
            }
            _ => {}
        });
        if other_use {
            return None;
        }
        if steps {
            let in_statement = |receiver: &Expr| {
                matches!(receiver, Expr::Name(receiver) if receiver.id.as_str() == name)
                    && at.contains(&span(receiver).start)
            };
            train_ops.push(step_assigned(scope, in_statement)?);
        }
    }
    (!train_ops.is_empty()).then_some(train_ops)
}

/// `name = <receiver>.minimize(...)` in the scope for a receiver `is_it`
/// accepts: the train op's name and where that binding holds.
fn step_assigned(scope: &Scope, is_it: impl Fn(&Expr) -> bool) -> Option<(String, Range<usize>)> {
    scope.facts.statements.iter().find_map(|statement| {
        let Stmt::Assign(assign) = statement else {
            return None;
        };
        let [Expr::Name(target)] = assign.targets.as_slice() else {
            return None;
        };
        let Expr::Call(step) = assign.value.as_ref() else {
            return None;
        };
        let Expr::Attribute(attribute) = step.func.as_ref() else {
            return None;
        };
        (STEP_METHODS.contains(&attribute.attr.as_str()) && is_it(&attribute.value)).then(|| {
            let name = target.id.to_string();
            let holds = binding_of(scope, &name, span(*statement).start);
            (name, holds)
        })
    })
}

/// Whether the name at `used` only reads the optimizer: the receiver of
/// one of its own methods (`opt.minimize(...)`, `opt.compute_gradients`) or
/// of an attribute (`opt._lr`), or inspected by a builtin (`getattr(opt,
/// ...)`, `print(opt)`). Handed to anything else, it may step elsewhere.
fn receives_a_method(statement: &Stmt, used: &Expr) -> bool {
    const INSPECTING: &[&str] = &[
        "getattr",
        "hasattr",
        "isinstance",
        "type",
        "print",
        "str",
        "repr",
    ];
    let mut receives = false;
    walk_statement_expressions(statement, &mut |expr| match expr {
        Expr::Attribute(attribute) if span(attribute.value.as_ref()) == span(used) => {
            let method = attribute.attr.as_str();
            receives |= STEP_METHODS.contains(&method)
                || OTHER_METHODS.contains(&method)
                || method.starts_with('_');
        }
        Expr::Call(call)
            if matches!(call.func.as_ref(), Expr::Name(builtin) if INSPECTING.contains(&builtin.id.as_str()))
                && call
                    .args
                    .iter()
                    .any(|argument| span(argument) == span(used)) =>
        {
            receives = true;
        }
        _ => {}
    });
    receives
}

/// The loops around every run of the train op `name` (its binding in
/// `defining` holds over `binding`); `None` when it is used otherwise or
/// run outside a loop.
fn loops_running(
    rewrite: &ModuleRewrite,
    defining: &Scope,
    name: &str,
    binding: &Range<usize>,
    depth: usize,
) -> Option<Vec<Range<usize>>> {
    let mut loops = Vec::new();
    // `training_ops = [phase1_op, phase2_op]`, run as `training_ops[phase]`.
    let mut lists: Vec<(String, Range<usize>)> = Vec::new();
    for scope in &rewrite.module.scopes {
        let same = std::ptr::eq(scope, defining);
        // A function with a name of its own reads no global of this name.
        let local = !same
            && scope
                .facts
                .assignments
                .iter()
                .any(|assignment| assignment.name == name);
        if local {
            continue;
        }
        let reaches = |at: usize| !same || binding.contains(&at);
        let mut runs = Vec::new();
        for site in &scope.facts.calls {
            if reaches(span(site.call).start) && runs_it(site.call, name) {
                runs.push(site);
            }
        }
        // Every use of the name in reach is in one of those runs, or in a
        // list of train ops bound to a name (followed once).
        let mut stray = false;
        for statement in scope.facts.statements.iter().copied() {
            let listed = match (same, depth) {
                (true, 0) => listed_as(scope, statement, name),
                _ => None,
            };
            walk_statement_expressions(statement, &mut |expr| {
                if let Expr::Name(used) = expr
                    && used.id.as_str() == name
                    && used.ctx == ExprContext::Load
                    && reaches(span(expr).start)
                {
                    let in_a_run = runs
                        .iter()
                        .any(|site| within(&span(site.call), &span(expr)));
                    stray |= !in_a_run && listed.is_none();
                }
            });
            if let Some(list) = listed
                && reaches(span(statement).start)
            {
                lists.push(list);
            }
        }
        if stray {
            return None;
        }
        for site in runs {
            if site.enclosing_loops.is_empty() {
                return None;
            }
            loops.extend(
                site.enclosing_loops
                    .iter()
                    .map(|loop_statement| span(*loop_statement)),
            );
        }
    }
    for (list, holds) in lists {
        loops.extend(loops_running(rewrite, defining, &list, &holds, depth + 1)?);
    }
    Some(loops)
}

/// `list = [a, name, ...]` (or a tuple): the list's name and where that
/// binding holds.
fn listed_as(scope: &Scope, statement: &Stmt, name: &str) -> Option<(String, Range<usize>)> {
    let Stmt::Assign(assign) = statement else {
        return None;
    };
    let [Expr::Name(target)] = assign.targets.as_slice() else {
        return None;
    };
    let (Expr::List(ast::ExprList { elts, .. }) | Expr::Tuple(ast::ExprTuple { elts, .. })) =
        assign.value.as_ref()
    else {
        return None;
    };
    elts.iter()
        .any(|element| matches!(element, Expr::Name(listed) if listed.id.as_str() == name))
        .then(|| {
            let list = target.id.to_string();
            let holds = binding_of(scope, &list, span(statement).start);
            (list, holds)
        })
}

/// `sess.run(name, ...)`, `sess.run([cost, name], ...)` or `name.run(...)`.
fn runs_it(call: &ast::ExprCall, name: &str) -> bool {
    let Expr::Attribute(attribute) = call.func.as_ref() else {
        return false;
    };
    if attribute.attr.as_str() != "run" {
        return false;
    }
    if dotted_name(&attribute.value).as_deref() == Some(name) {
        return true;
    }
    let fetches = call
        .args
        .first()
        .or_else(|| keyword(call, "fetches").map(|keyword| &keyword.value));
    let mut fetched = false;
    if let Some(fetches) = fetches {
        walk_expression(fetches, &mut |expr| {
            fetched |= matches!(expr, Expr::Name(fetched) if fetched.id.as_str() == name);
        });
    }
    fetched
}

fn within(outer: &Range<usize>, inner: &Range<usize>) -> bool {
    outer.start <= inner.start && inner.end <= outer.end
}
