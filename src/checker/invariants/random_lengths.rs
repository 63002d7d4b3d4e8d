//! Part of invariant 8 (collectives aligned, DST308): a training loop over a
//! collection whose length each rank decides with random draws of its own
//! (`train_words = [w for w in words if random.random() < keep[w]]`, or
//! `xs[np.random.rand(len(xs)) < p]`), directly or through what is made of
//! it (`for x, y in get_batches(train_words, ...)`). Each rank keeps a
//! different number of items, so the ranks take different numbers of steps,
//! and the one with fewer leaves the others waiting in an allreduce.

use std::ops::Range;

use rustpython_parser::ast::Expr;

use crate::analysis::training::Scope;
use crate::analysis::walk::walk_expression;
use crate::checker::{Decision, Program, Verdict};
use crate::python::parse::span;

use super::collectives_aligned::COLLECTIVES_ALIGNED;

/// How many assignments back a length is followed.
const DEPTH: usize = 6;

/// A decision on the `for` loop at `line` whose iterable `iterable` takes
/// its length from a collection filtered at random in this scope.
pub(super) fn loop_over_randomly_filtered(
    program: &Program,
    scope: &Scope,
    iterable: &Expr,
    line: usize,
) -> Option<Decision> {
    let draws = super::collectives_aligned::random_draws(program, scope);
    if draws.is_empty() {
        return None;
    }
    let draw = filtered_into(scope, &draws, iterable, span(iterable).start, 0)
        .filter(|draw| !drawn_alike(program, draw))?;
    Some(
        Decision::new(
            COLLECTIVES_ALIGNED,
            Verdict::Unknown,
            span(iterable),
            format!(
                "the training loop at line {line} runs over items kept or dropped by a random draw (line {}), which each rank makes for itself: the ranks keep different numbers of items and take different numbers of steps, and the one with fewer leaves the others waiting in an allreduce",
                program.line(draw.start)
            ),
        )
        .with_suggestion("draw with one seed on every rank (`random.seed(0)` before the draw), then take this rank's share of what is kept"),
    )
}

/// Rows shared out by rank (`rank_rows(x_train)`) that a random draw kept
/// or dropped, in the scope of the share or, for a parameter, in what the
/// function's callers pass (`x_train = data[np.random.rand(n) < 0.8]`, or
/// rows appended group by group under a random mask): each rank keeps a
/// different number of rows, so the ranks take different numbers of steps.
pub(super) fn rows_kept_at_random(program: &Program) -> Vec<Decision> {
    let helpers = super::facts::row_share_helpers(program);
    let mut decisions = Vec::new();
    for call in program.calls() {
        let Expr::Name(called) = call.site.call.func.as_ref() else {
            continue;
        };
        let [rows] = call.site.call.args.as_slice() else {
            continue;
        };
        if !helpers.contains(&called.id.as_str()) {
            continue;
        }
        let Some(draw) = kept_at_random(program, call.scope_index, rows, call.range().start, 0)
            .filter(|draw| !drawn_alike(program, draw))
        else {
            continue;
        };
        let line = program.line(call.range().start);
        decisions.push(
            Decision::new(
                COLLECTIVES_ALIGNED,
                Verdict::Unknown,
                call.range(),
                format!(
                    "the rows shared out by rank at line {line} are kept or dropped by a random draw (line {}), which each rank makes for itself: each rank shares out rows of its own draw, so the shares overlap (rows one rank trains on may be another's held-out rows), and when the ranks keep different numbers of rows they may take different numbers of steps, the one with fewer leaving the others waiting in an allreduce",
                    program.line(draw.start)
                ),
            )
            .with_suggestion("draw with one seed on every rank (`np.random.seed(0)` before the draw), so that every rank keeps the same rows before taking its share"),
        );
    }
    decisions
}

/// Whether every rank makes the same draw: the last call before it that
/// seeds its generator gives one seed on every rank (`np.random.seed(42)`,
/// not one made per rank).
fn drawn_alike(program: &Program, draw: &Range<usize>) -> bool {
    let calls = program.calls();
    let Some(drawer) = calls.iter().find(|call| call.range() == *draw) else {
        return false;
    };
    calls
        .iter()
        .filter(|call| {
            call.range().end <= draw.start
                && super::data_differs::is_seeding(program, call)
                && super::data_differs::seeds_generator_of(call, drawer)
        })
        .max_by_key(|call| call.range().start)
        .is_some_and(|seed| !super::data_differs::seeds_by_rank(program, seed))
}

/// The draw that keeps or drops the items of `expr` in the scope, or, for
/// a parameter of a function, in what its callers pass.
fn kept_at_random(
    program: &Program,
    scope_index: usize,
    expr: &Expr,
    at: usize,
    hops: usize,
) -> Option<Range<usize>> {
    let scope = &program.module.scopes[scope_index];
    let draws = super::collectives_aligned::random_draws(program, scope);
    if !draws.is_empty()
        && let Some(draw) = filtered_into(scope, &draws, expr, at, 0)
    {
        return Some(draw);
    }
    let Expr::Name(name) = expr else {
        return None;
    };
    if hops >= 2 || scope.facts.last_assignment_before(&name.id, at).is_some() {
        return None;
    }
    crate::analysis::effects::arguments_for_parameter(program.module, scope_index, &name.id)
        .into_iter()
        .find_map(|(caller, site, passed)| {
            kept_at_random(program, caller, passed, span(site.call).start, hops + 1)
        })
}

/// The draw that filters a collection `expr` is made of: a comprehension
/// whose `if` draws, or a subscript whose mask draws, in `expr` or in the
/// last assignment before `at` of a name it reads, a few assignments deep.
fn filtered_into(
    scope: &Scope,
    draws: &[Range<usize>],
    expr: &Expr,
    at: usize,
    depth: usize,
) -> Option<Range<usize>> {
    let draw_within = |inner: &Expr| {
        let within = span(inner);
        draws
            .iter()
            .find(|draw| within.start <= draw.start && draw.end <= within.end)
            .cloned()
    };
    let mut found = None;
    walk_expression(expr, &mut |inner| {
        if found.is_some() {
            return;
        }
        found = match inner {
            Expr::ListComp(node) => node
                .generators
                .iter()
                .flat_map(|g| &g.ifs)
                .find_map(draw_within),
            Expr::SetComp(node) => node
                .generators
                .iter()
                .flat_map(|g| &g.ifs)
                .find_map(draw_within),
            Expr::GeneratorExp(node) => node
                .generators
                .iter()
                .flat_map(|g| &g.ifs)
                .find_map(draw_within),
            Expr::DictComp(node) => node
                .generators
                .iter()
                .flat_map(|g| &g.ifs)
                .find_map(draw_within),
            Expr::Subscript(node) if matches!(node.slice.as_ref(), Expr::Compare(_)) => {
                draw_within(&node.slice)
            }
            // A mask held by a name (`keep = np.random.rand(n) < p`, then
            // `rows[keep]` or `rows[~keep]`).
            Expr::Subscript(node) => mask_name(&node.slice)
                .and_then(|mask| scope.facts.last_assignment_before(mask, at))
                .filter(|assignment| matches!(assignment.value, Expr::Compare(_)))
                .and_then(|assignment| draw_within(assignment.value)),
            _ => None,
        };
    });
    if found.is_some() || depth >= DEPTH {
        return found;
    }
    let mut names = Vec::new();
    walk_expression(expr, &mut |inner| {
        if let Expr::Name(name) = inner {
            names.push(name.id.to_string());
        }
    });
    names.iter().find_map(|name| {
        // Items added to the collection one part at a time
        // (`kept.append(group[mask])`), then what it was bound to.
        let added = scope.facts.calls.iter().filter(|site| {
            span(site.call).end <= at
                && matches!(site.call.func.as_ref(), Expr::Attribute(attribute)
                    if matches!(attribute.attr.as_str(), "append" | "extend" | "add" | "update")
                        && matches!(attribute.value.as_ref(), Expr::Name(receiver) if receiver.id.as_str() == name.as_str()))
        });
        for site in added {
            let start = span(site.call).start;
            if let Some(draw) = site
                .call
                .args
                .iter()
                .find_map(|part| filtered_into(scope, draws, part, start, depth + 1))
            {
                return Some(draw);
            }
        }
        let assignment = scope.facts.last_assignment_before(name, at)?;
        let assigned_at = span(assignment.statement).start;
        filtered_into(scope, draws, assignment.value, assigned_at, depth + 1)
    })
}

/// The name a mask subscript reads: `keep` of `rows[keep]` or `rows[~keep]`.
fn mask_name(slice: &Expr) -> Option<&str> {
    match slice {
        Expr::Name(name) => Some(name.id.as_str()),
        Expr::UnaryOp(operation) => match operation.operand.as_ref() {
            Expr::Name(name) => Some(name.id.as_str()),
            _ => None,
        },
        _ => None,
    }
}
