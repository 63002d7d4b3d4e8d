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
    let draw = filtered_into(scope, &draws, iterable, span(iterable).start, 0)?;
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
        let assignment = scope.facts.last_assignment_before(name, at)?;
        let assigned_at = span(assignment.statement).start;
        filtered_into(scope, draws, assignment.value, assigned_at, depth + 1)
    })
}
