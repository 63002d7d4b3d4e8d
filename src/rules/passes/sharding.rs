//! Sharding a tf.data pipeline right after its source, so that each worker
//! reads its own part of the data: `.apply(equal_shard)`, a generated helper
//! that takes `.shard(hvd.size(), hvd.rank())` and cuts every shard to the
//! same count. Shards of a plain `.shard` differ by one example when the
//! count does not divide evenly; a loop that runs to the end of the data
//! then takes one step more on some workers, whose last allreduce waits
//! forever.
//!
//! Input: the scope and the dataset expression (a pipeline or a name bound to
//! one). Output: one insertion, and whether a pipeline was found.

use std::ops::Range;

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::analysis::catalogue::Effect;
use crate::analysis::training::Scope;
use crate::analysis::walk::walk_expression;
use crate::python::edit::Edit;
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

/// Inserts the shard after the source of the pipeline `dataset` names (or is).
/// Returns whether it found a pipeline to shard.
pub fn shard_dataset(rewrite: &mut ModuleRewrite, scope: &Scope, dataset: &Expr) -> bool {
    let Some(source) = pipeline_source(rewrite, scope, dataset) else {
        return false;
    };
    if shuffled_upstream(rewrite, scope, &source) {
        return false;
    }
    let helper = equal_shard_helper(rewrite, source.start);
    rewrite.edit(Edit::insertion(source.end, format!(".apply({helper})")));
    true
}

/// The helper, defined once per module. A count TensorFlow does not know
/// (or an infinite one) is negative, and `take` of a negative count keeps
/// the whole shard.
fn equal_shard_helper(rewrite: &mut ModuleRewrite, site: usize) -> String {
    let (size, rank) = (rewrite.horovod_call("size"), rewrite.horovod_call("rank"));
    rewrite.helper(
        &["equal_shard", "horovod_equal_shard"],
        site,
        |helper, rewrite| {
            let (tf, unit) = (&rewrite.tf, &rewrite.stylist.indent_unit);
            vec![
                format!("def {helper}(dataset):"),
                format!("{unit}\"\"\"This worker's shard of a dataset: every N-th example from its rank,"),
                format!("{unit}the same count on every worker (their allreduces pair up).\"\"\""),
                format!("{unit}count = {tf}.data.experimental.cardinality(dataset)"),
                format!("{unit}return dataset.shard({size}, {rank}).take(count // {size})"),
            ]
        },
    )
}

/// Whether the source combines streams built from names that an unseeded
/// `shuffle` reorders (`Dataset.zip((a, b))` of shuffled `a` and `b`): each
/// worker would shuffle its own order, and shards of it would overlap.
fn shuffled_upstream(rewrite: &ModuleRewrite, scope: &Scope, source: &Range<usize>) -> bool {
    let top_level = &rewrite.module.scopes[0];
    let Some(call) = [scope, top_level]
        .iter()
        .flat_map(|candidate| candidate.facts.calls.iter())
        .find(|site| span(site.call) == *source)
    else {
        return false;
    };
    let mut names = Vec::new();
    for argument in &call.call.args {
        walk_expression(argument, &mut |inner| {
            if let Expr::Name(name) = inner {
                names.push(name.id.to_string());
            }
        });
    }
    [scope, top_level]
        .iter()
        .flat_map(|candidate| candidate.facts.assignments.iter())
        .filter(|assignment| names.contains(&assignment.name))
        .filter(|assignment| span(assignment.statement).start < source.start)
        .any(|assignment| {
            let mut shuffled = false;
            walk_expression(assignment.value, &mut |inner| {
                if let Expr::Call(inner_call) = inner
                    && let Expr::Attribute(attribute) = inner_call.func.as_ref()
                    && attribute.attr.as_str() == "shuffle"
                {
                    let seed = crate::analysis::walk::keyword(inner_call, "seed")
                        .map(|keyword| &keyword.value)
                        .or(inner_call.args.get(1));
                    shuffled |= seed.is_none();
                }
            });
            shuffled
        })
}

/// Whether `dataset` is (or names) a tf.data pipeline whose source can be sharded.
pub fn is_shardable(rewrite: &ModuleRewrite, scope: &Scope, dataset: &Expr) -> bool {
    pipeline_source(rewrite, scope, dataset)
        .is_some_and(|source| !shuffled_upstream(rewrite, scope, &source))
}

fn pipeline_source(rewrite: &ModuleRewrite, scope: &Scope, dataset: &Expr) -> Option<Range<usize>> {
    if let Expr::Name(name) = dataset
        && let Some(position) = scope.parameters.iter().position(|p| p == name.id.as_str())
    {
        return argument_pipeline_source(rewrite, scope, name.id.as_str(), position);
    }
    let pipeline: Option<&Expr> = match dataset {
        Expr::Name(name) => {
            let top_level = &rewrite.module.scopes[0];
            let used_at = span(dataset).start;
            [scope, top_level].into_iter().find_map(|candidate| {
                let sources: Vec<_> = candidate
                    .facts
                    .assignments
                    .iter()
                    .filter(|assignment| matches!(assignment.statement, Stmt::Assign(_)))
                    .filter(|assignment| {
                        assignment.name == name.id.as_str()
                            && dataset_source(rewrite, candidate, assignment.value).is_some()
                    })
                    .collect();
                // The pipeline the use reads: the last one built before it
                // (a name rebuilt from another source, `ds = list_files(...)`
                // then `ds = from_tensor_slices(loaded)`), else the first.
                sources
                    .iter()
                    .rfind(|assignment| span(assignment.statement).start < used_at)
                    .or(sources.first())
                    .map(|assignment| assignment.value)
            })
        }
        other => Some(other),
    };
    if let Some(source) = pipeline.and_then(|pipeline| dataset_source(rewrite, scope, pipeline)) {
        return Some(source);
    }
    match dataset {
        Expr::Name(name) => factory_pipeline_source(rewrite, scope, name.id.as_str()),
        _ => None,
    }
}

/// `train_ds = mnist_dataset()` or `train, test = make_datasets()`: the
/// source of the pipeline a function of this module returns (at the
/// position the name takes in the unpacking).
fn factory_pipeline_source(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    name: &str,
) -> Option<Range<usize>> {
    let top_level = &rewrite.module.scopes[0];
    let (assignment, position) = [scope, top_level].into_iter().find_map(|candidate| {
        candidate.facts.assignments.iter().find_map(|assignment| {
            let Stmt::Assign(assign) = assignment.statement else {
                return None;
            };
            let position = match assign.targets.as_slice() {
                [Expr::Name(target)] if target.id.as_str() == name => None,
                [Expr::Tuple(tuple)] => Some(tuple.elts.iter().position(
                    |element| matches!(element, Expr::Name(target) if target.id.as_str() == name),
                )?),
                _ => return None,
            };
            Some((assignment, position))
        })
    })?;
    let Expr::Call(call) = assignment.value else {
        return None;
    };
    let Expr::Name(function) = call.func.as_ref() else {
        return None;
    };
    let factory = rewrite.module.scopes.iter().find(|candidate| {
        candidate.function.is_some()
            && candidate.parent == Some(0)
            && candidate.name() == function.id.as_str()
    })?;
    let returned = factory
        .facts
        .statements
        .iter()
        .find_map(|statement| match statement {
            Stmt::Return(ast::StmtReturn {
                value: Some(value), ..
            }) => Some(value.as_ref()),
            _ => None,
        })?;
    let returned = match (position, returned) {
        (None, value) => value,
        (Some(index), Expr::Tuple(tuple)) => tuple.elts.get(index)?,
        (Some(_), _) => return None,
    };
    // The factory's own name for it, or the expression it returns.
    pipeline_source(rewrite, factory, returned)
}

/// A pipeline a function receives as a parameter (`def train_one_epoch(data)`):
/// the source of the pipeline its callers in this module pass, when they all
/// pass the same one.
fn argument_pipeline_source(
    rewrite: &ModuleRewrite,
    function: &Scope,
    parameter: &str,
    position: usize,
) -> Option<Range<usize>> {
    function.function?;
    let offset = usize::from(function.class.is_some());
    let mut sources = Vec::new();
    for caller in &rewrite.module.scopes {
        for site in &caller.facts.calls {
            let calls_function = matches!(site.call.func.as_ref(), Expr::Name(callee) if callee.id.as_str() == function.name());
            if !calls_function || std::ptr::eq(caller, function) {
                continue;
            }
            let argument = crate::analysis::walk::keyword(site.call, parameter)
                .map(|keyword| &keyword.value)
                .or_else(|| site.call.args.get(position.checked_sub(offset)?));
            let source = argument.and_then(|argument| pipeline_source(rewrite, caller, argument));
            sources.push(source?);
        }
    }
    sources.dedup();
    match sources.as_slice() {
        [source] => Some(source.clone()),
        _ => None,
    }
}

/// The range of the call that creates a tf.data pipeline inside `expr`.
fn dataset_source(rewrite: &ModuleRewrite, scope: &Scope, expr: &Expr) -> Option<Range<usize>> {
    let mut found = None;
    walk_expression(expr, &mut |inner| {
        if found.is_none()
            && let Expr::Call(call) = inner
            && rewrite
                .catalogued_effects(scope, call)
                .iter()
                .any(|effect| matches!(effect, Effect::DataSource { pipeline: true, .. }))
        {
            found = Some(span(call));
        }
    });
    found
}
