//! Splits a loader returns at once (`tfds.load` with several splits, or
//! none): which one a name holds where a pipeline is trained on, so that
//! the shard goes on that split alone. For the sharding pass.

use std::ops::Range;

use rustpython_parser::ast::{Expr, Stmt};

use super::sharding::{continues_name, draws_no_order_of_its_own, plain_assignments};
use crate::analysis::catalogue::Effect;
use crate::analysis::training::Scope;
use crate::analysis::walk::method_chain;
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

/// `ds_train = ds_split[1]` (or `splits["train"]`) of the splits a source
/// loads at once (`ds_split, info = tfds.load(..., split=[...])`): the shard
/// goes after the subscript, on that split alone. Not when the source draws
/// an order of its own in each process: the shards would overlap.
pub(super) fn split_of_loaded_source(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    dataset: &Expr,
) -> Option<Range<usize>> {
    let Expr::Name(name) = dataset else {
        return None;
    };
    let used_at = span(dataset).start;
    let top_level = &rewrite.module.scopes[0];
    let (builder, picked) = [scope, top_level].into_iter().find_map(|candidate| {
        picked_split(candidate, name.id.as_str(), used_at).map(|picked| (candidate, picked))
    })?;
    let (statement, value) = picked;
    let Expr::Subscript(subscript) = value else {
        return None;
    };
    // `x_full[5000:]` cuts rows of an array a loader returned; a split is
    // picked by its index or name.
    if matches!(subscript.slice.as_ref(), Expr::Slice(_)) {
        return None;
    }
    let Expr::Name(splits) = subscript.value.as_ref() else {
        return None;
    };
    let loaded = builder
        .facts
        .assignments
        .iter()
        .filter(|assignment| assignment.name == splits.id.as_str())
        .rfind(|assignment| span(assignment.statement).start < span(statement).start)?;
    // A source of several splits (`tfds.load` with a list of splits, or
    // none): each element is a pipeline.
    let Expr::Call(load) = loaded.value else {
        return None;
    };
    let loads_splits = rewrite
        .catalogued_effects(builder, load)
        .iter()
        .any(|effect| matches!(effect, Effect::DataSource { .. }));
    (loads_splits && draws_no_order_of_its_own(rewrite, &span(load))).then(|| span(value))
}

/// The statement that picks the split `name` holds where it is used, and
/// the expression it picks with: past the assignments that continue the
/// same name (`train = train.shuffle(n)`), unless one cuts the stream
/// (`take`, `skip`: a shard above it would leave the cut whole); the element
/// at the name's place when a tuple is unpacked (`train, test = d["train"],
/// d["test"]`).
fn picked_split<'a>(scope: &Scope<'a>, name: &str, used_at: usize) -> Option<(&'a Stmt, &'a Expr)> {
    let mut before = used_at;
    loop {
        let assignment = plain_assignments(scope, name)
            .rfind(|assignment| span(assignment.statement).start < before)?;
        let continues =
            continues_name(assignment.value, name) && !matches!(assignment.value, Expr::Name(_));
        if !continues {
            let Stmt::Assign(assign) = assignment.statement else {
                return None;
            };
            return match (assign.targets.as_slice(), assignment.value) {
                ([Expr::Tuple(_)], Expr::Tuple(_)) => {
                    crate::analysis::walk::unpacked_element(assignment.statement, name)
                        .map(|element| (assignment.statement, element))
                }
                ([Expr::Name(_)], value) => Some((assignment.statement, value)),
                _ => None,
            };
        }
        let cuts = method_chain(assignment.value)
            .iter()
            .any(|(method, _)| matches!(*method, "take" | "skip"));
        if cuts {
            return None;
        }
        before = span(assignment.statement).start;
    }
}

/// `train` of `(train, test), info = tfds.load(..., split=[...])`: one of
/// the splits a source loads at once, unpacked to names. The shard goes on
/// the name where a pipeline continues it (`train.shuffle(n)`), on that
/// split alone. Not when the source draws an order of its own in each
/// process: the shards would overlap.
pub(super) fn unpacked_split(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    root: &Expr,
) -> Option<Range<usize>> {
    let Expr::Name(name) = root else {
        return None;
    };
    let assignment = plain_assignments(scope, name.id.as_str())
        .rfind(|assignment| span(assignment.statement).start < span(root).start)?;
    let (Stmt::Assign(assign), Expr::Call(load)) = (assignment.statement, assignment.value) else {
        return None;
    };
    let several = matches!(assign.targets.as_slice(), [Expr::Tuple(_)])
        && crate::analysis::walk::keyword(load, "split")
            .is_some_and(|split| matches!(split.value, Expr::List(_) | Expr::Tuple(_)));
    let loads = rewrite
        .catalogued_effects(scope, load)
        .iter()
        .any(|effect| matches!(effect, Effect::DataSource { .. }));
    (several && loads && draws_no_order_of_its_own(rewrite, &span(load))).then(|| span(root))
}
