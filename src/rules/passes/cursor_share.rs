//! A batch cursor over in-memory arrays, split by rank: the loop
//! `for start in range(0, len(x), batch)` (or a `zip` of such ranges giving
//! a batch's start and end) that slices the data with its variables walks
//! this worker's share of the positions instead, `rank_share(range(...))`:
//! every N-th from its rank, cut to the same count on every worker (equal
//! counts keep the workers' gradient allreduces paired). Cutting the range
//! short instead would give every worker the same first batches.
//!
//! A modular offset computed from the step in a divided loop
//! (`offset = (step * batch) % (n - batch)`) counts the job's steps instead
//! of the worker's: `(step * hvd.size() + hvd.rank())`, so that the workers
//! together walk the offsets the single process walked, each its own.

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::analysis::training::Scope;
use crate::analysis::walk::{
    expression_shape, target_names, walk_expression, walk_statement_expressions,
};
use crate::python::edit::Edit;
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

/// Whether a loop is a batch cursor: it walks stepped ranges (one, or a
/// `zip` of them with one step) and slices data with its variables.
pub fn is_batch_cursor(for_loop: &ast::StmtFor) -> bool {
    walks_stepped_ranges(&for_loop.iter, for_loop)
}

/// `is_batch_cursor`, also through a name the scope assigned the ranges to
/// before the loop (`batches = zip(range(0, n, b), range(b, n + 1, b))`,
/// then `for start, end in batches:`).
pub fn is_batch_cursor_in(scope: &Scope, for_loop: &ast::StmtFor) -> bool {
    if is_batch_cursor(for_loop) {
        return true;
    }
    let Expr::Name(name) = for_loop.iter.as_ref() else {
        return false;
    };
    let loop_start = span(for_loop.iter.as_ref()).start;
    scope
        .facts
        .assignment_before(name.id.as_str(), loop_start)
        .is_some_and(|assignment| walks_stepped_ranges(assignment.value, for_loop))
}

/// Whether a loop counts batches (`for tt in range(len(x) // batch)`) and
/// slices data by bounds made from its counter (`start = batch * tt`, then
/// `x[start:end]`, or `x[batch * tt:batch * (tt + 1)]`): dividing its count
/// would give every worker the same first batches, so it walks this
/// worker's share of the counts instead. A modular offset (`(tt * b) % n`)
/// is left to `offset_by_rank`.
pub fn counts_sliced_batches(for_loop: &ast::StmtFor) -> bool {
    let Expr::Call(range) = for_loop.iter.as_ref() else {
        return false;
    };
    if !is_builtin(range, "range") || range.args.len() > 2 || !range.keywords.is_empty() {
        return false;
    }
    let counters = target_names(&for_loop.target);
    let reads = |expr: &Expr, names: &[String]| {
        let mut found = false;
        walk_expression(expr, &mut |inner| {
            found |= matches!(inner, Expr::Name(name) if names.iter().any(|known| known == name.id.as_str()));
        });
        found
    };
    let mut names: Vec<String> = counters.iter().map(|name| name.to_string()).collect();
    let mut modular = false;
    crate::analysis::walk::for_each_statement(&for_loop.body, false, &mut |statement| {
        if let Stmt::Assign(assign) = statement
            && let [Expr::Name(target)] = assign.targets.as_slice()
            && reads(&assign.value, &names)
        {
            modular |= matches!(assign.value.as_ref(), Expr::BinOp(operation) if operation.op == ast::Operator::Mod);
            names.push(target.id.to_string());
        }
    });
    let mut sliced = false;
    crate::analysis::walk::for_each_statement(&for_loop.body, false, &mut |statement| {
        walk_statement_expressions(statement, &mut |expression| {
            if let Expr::Subscript(subscript) = expression
                && let Expr::Slice(slice) = subscript.slice.as_ref()
            {
                sliced |= [&slice.lower, &slice.upper]
                    .into_iter()
                    .flatten()
                    .any(|bound| reads(bound, &names));
            }
        });
    });
    sliced && !modular
}

/// Whether `iterable` is stepped ranges (one, or a `zip` of them with one
/// step) whose variables slice data in the loop's body.
fn walks_stepped_ranges(iterable: &Expr, for_loop: &ast::StmtFor) -> bool {
    let ranges: Option<Vec<&ast::ExprCall>> = match iterable {
        Expr::Call(call) if is_builtin(call, "zip") => {
            call.args.iter().map(stepped_range).collect()
        }
        other => stepped_range(other).map(|range| vec![range]),
    };
    let Some(ranges) = ranges.filter(|ranges| !ranges.is_empty()) else {
        return false;
    };
    let step = |range: &ast::ExprCall| expression_shape(&range.args[2]);
    let same_step = ranges.windows(2).all(|pair| step(pair[0]) == step(pair[1]));
    same_step && slices_by(&for_loop.body, &target_names(&for_loop.target))
}

/// Makes the loop walk this worker's share of its positions.
pub fn share_by_rank(rewrite: &mut ModuleRewrite, loop_statement: &Stmt, for_loop: &ast::StmtFor) {
    rewrite.data_split_by_rank = true;
    let helper = rewrite.helper(
        &["rank_share", "horovod_rank_share"],
        span(loop_statement).start,
        |helper, rewrite| {
            let hvd = &rewrite.hvd;
            let unit = &rewrite.stylist.indent_unit;
            vec![
                format!("def {helper}(positions):"),
                format!(
                    "{unit}\"\"\"This worker's share of a cursor's positions: every N-th from its"
                ),
                format!(
                    "{unit}rank, the same count on every worker (their allreduces pair up).\"\"\""
                ),
                format!("{unit}positions = list(positions)"),
                format!("{unit}usable = len(positions) // {hvd}.size() * {hvd}.size()"),
                format!("{unit}return positions[{hvd}.rank():usable:{hvd}.size()]"),
            ]
        },
    );
    let iterable = span(for_loop.iter.as_ref());
    rewrite.edit(Edit::insertion(iterable.start, format!("{helper}(")));
    rewrite.edit(Edit::insertion(iterable.end, ")"));
}

/// In a divided `for` loop, makes each modular offset computed from the
/// loop's counter count the job's steps, from this worker's rank.
pub fn offset_by_rank(rewrite: &mut ModuleRewrite, for_loop: &ast::StmtFor) {
    rewrite.data_split_by_rank = true;
    let counters = target_names(&for_loop.target);
    let mut occurrences = Vec::new();
    crate::analysis::walk::for_each_statement(&for_loop.body, false, &mut |statement| {
        let Stmt::Assign(assign) = statement else {
            return;
        };
        let Expr::BinOp(modulo) = assign.value.as_ref() else {
            return;
        };
        let mut calls = false;
        walk_expression(&assign.value, &mut |inner| {
            calls |= matches!(inner, Expr::Call(_))
        });
        if modulo.op != ast::Operator::Mod || calls {
            return;
        }
        walk_expression(&modulo.left, &mut |inner| {
            if let Expr::Name(name) = inner
                && counters.contains(&name.id.as_str())
            {
                occurrences.push(span(inner));
            }
        });
    });
    let (size, rank) = (rewrite.horovod_call("size"), rewrite.horovod_call("rank"));
    for occurrence in occurrences {
        let counter = rewrite.text[occurrence.clone()].to_string();
        let job_step = format!("({counter} * {size} + {rank})");
        rewrite.edit(Edit::replacement(occurrence, job_step));
    }
}

/// `range(a, b, s)`.
fn stepped_range(expr: &Expr) -> Option<&ast::ExprCall> {
    match expr {
        Expr::Call(call)
            if (is_builtin(call, "range") || is_builtin(call, "xrange"))
                && call.args.len() == 3
                && call.keywords.is_empty() =>
        {
            Some(call)
        }
        _ => None,
    }
}

fn is_builtin(call: &ast::ExprCall, name: &str) -> bool {
    matches!(call.func.as_ref(), Expr::Name(function) if function.id.as_str() == name)
}

/// Whether the body takes a slice or an index of something by one of the
/// loop's variables (`x[start:end]`, `x[start:start + batch]`).
fn slices_by(body: &[Stmt], variables: &[&str]) -> bool {
    let mut found = false;
    crate::analysis::walk::for_each_statement(body, false, &mut |statement| {
        walk_statement_expressions(statement, &mut |expression| {
            if let Expr::Subscript(subscript) = expression {
                walk_expression(&subscript.slice, &mut |index| {
                    found |=
                        matches!(index, Expr::Name(name) if variables.contains(&name.id.as_str()));
                });
            }
        });
    });
    found
}
