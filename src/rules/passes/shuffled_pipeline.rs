//! A finite tf.data pipeline that each process orders its own way: an
//! unseeded `shuffle` in its chain, followed back through the names bound
//! before the use (`train = examples.skip(n)`, `examples =
//! examples.shuffle(1000)`) to a tf.data or TFDS source. When such a stream
//! cannot be sharded (it is cut into splits by `take`/`skip` after the
//! shuffle, so a shard above the cut would change the splits), each worker
//! may instead run its share of the epochs over all of it, in its own order.
//!
//! Not when the shuffle keeps one order across epochs
//! (`reshuffle_each_iteration=False`) and a cut follows it: the split is
//! then fixed in each process, and a worker would train on the examples
//! another holds out. Not when it repeats (a step count bounds it then).

use rustpython_parser::ast::{self, Expr};

use crate::analysis::catalogue::Effect;
use crate::analysis::training::Scope;
use crate::analysis::walk::{chain_root, keyword, method_chain};
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

/// How far names are followed back.
const MAX_NAMES: usize = 12;

/// What the chain of a pipeline holds, from its use back to its source.
#[derive(Default)]
struct ChainFacts {
    unseeded_shuffle: bool,
    seeded_shuffle: bool,
    /// A `take`/`skip` downstream of what has been walked so far.
    cut_below: bool,
    /// A shuffle that keeps its order across epochs with a cut below it.
    fixed_split: bool,
    /// A shuffle with a cut below it.
    cut_after_shuffle: bool,
    repeats: bool,
    reached_source: bool,
}

/// Whether `dataset` is (or names) a finite tf.data pipeline whose order an
/// unseeded `shuffle` draws in each process (see the module comment).
pub fn shuffled_per_process(rewrite: &ModuleRewrite, scope: &Scope, dataset: &Expr) -> bool {
    let facts = chain_facts(rewrite, scope, dataset);
    facts.reached_source
        && facts.unseeded_shuffle
        && !facts.seeded_shuffle
        && !facts.fixed_split
        && !facts.repeats
}

/// Why a pipeline cut into splits after its shuffle is left whole when its
/// epochs cannot be divided either (said in DST101): `None` when it is not
/// such a pipeline, or when `shuffled_per_process` holds.
pub fn why_left_whole(rewrite: &ModuleRewrite, scope: &Scope, dataset: &Expr) -> Option<String> {
    let facts = chain_facts(rewrite, scope, dataset);
    if !facts.reached_source || !facts.cut_after_shuffle {
        return None;
    }
    if facts.fixed_split {
        Some("it is cut into splits (`take`/`skip`) after a shuffle that keeps one order per process (`reshuffle_each_iteration=False`): a shard would change the splits, and divided epochs would let a worker train on examples another holds out".to_string())
    } else if facts.seeded_shuffle {
        Some("it is cut into splits (`take`/`skip`) after a seeded shuffle: a shard would change the splits, and divided epochs would give every worker the same batches".to_string())
    } else {
        None
    }
}

/// What the chain of the pipeline `dataset` holds, walked back from its use.
fn chain_facts(rewrite: &ModuleRewrite, scope: &Scope, dataset: &Expr) -> ChainFacts {
    let mut facts = ChainFacts::default();
    walk_back(rewrite, scope, dataset, span(dataset).start, 0, &mut facts);
    facts
}

fn walk_back(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    expr: &Expr,
    before: usize,
    depth: usize,
    facts: &mut ChainFacts,
) {
    if depth > MAX_NAMES {
        return;
    }
    // Downstream first: a cut seen before a shuffle lies below it.
    for (method, call) in method_chain(expr).into_iter().rev() {
        match method {
            "shuffle" => note_shuffle(call, facts),
            "take" | "skip" => facts.cut_below = true,
            "repeat" => facts.repeats = true,
            // `tf.data.Dataset.from_tensor_slices(...)`: a method of the
            // library's names, the source itself.
            _ => facts.reached_source |= is_data_source(rewrite, scope, call),
        }
    }
    match chain_root(expr) {
        Expr::Name(name) => {
            let top_level = &rewrite.module.scopes[0];
            let bound = [scope, top_level].into_iter().find_map(|place| {
                place
                    .facts
                    .last_assignment_before(name.id.as_str(), before)
                    .map(|assignment| (place, assignment))
            });
            if let Some((place, assignment)) = bound {
                let at = span(assignment.statement).start;
                walk_back(rewrite, place, assignment.value, at, depth + 1, facts);
            }
        }
        Expr::Call(call) => facts.reached_source |= is_data_source(rewrite, scope, call),
        _ => {}
    }
}

fn note_shuffle(call: &ast::ExprCall, facts: &mut ChainFacts) {
    let argument = |position: usize, name: &str| {
        keyword(call, name)
            .map(|keyword| &keyword.value)
            .or_else(|| call.args.get(position))
    };
    let is_none = |value: &Expr| {
        matches!(
            value,
            Expr::Constant(ast::ExprConstant {
                value: ast::Constant::None,
                ..
            })
        )
    };
    match argument(1, "seed") {
        Some(seed) if !is_none(seed) => facts.seeded_shuffle = true,
        _ => facts.unseeded_shuffle = true,
    }
    let keeps_order = argument(2, "reshuffle_each_iteration").is_some_and(|value| {
        matches!(
            value,
            Expr::Constant(ast::ExprConstant {
                value: ast::Constant::Bool(false),
                ..
            })
        )
    });
    facts.fixed_split |= keeps_order && facts.cut_below;
    facts.cut_after_shuffle |= facts.cut_below;
}

/// A call that makes a tf.data stream: a `tf.data` constructor, a TFDS
/// loader, or a source the catalogue knows.
fn is_data_source(rewrite: &ModuleRewrite, scope: &Scope, call: &ast::ExprCall) -> bool {
    let callee = rewrite.callee(scope, &call.func).unwrap_or_default();
    callee.starts_with("tensorflow.data.")
        || callee.starts_with("tensorflow_datasets.")
        || rewrite
            .catalogued_effects(scope, call)
            .iter()
            .any(|effect| matches!(effect, Effect::DataSource { .. }))
}
