//! Where the shard goes when the name a source is bound to serves more than
//! the training stream. `raw = text_dataset_from_directory(...)` is read for
//! `raw.class_names`, which the dataset `.apply(...)` returns no longer has
//! (an AttributeError), and feeds `vectorize.adapt(raw.map(...))`, which
//! must see all of the data on every worker (a vocabulary of its own per
//! worker would number the words differently). The shard goes instead where
//! the training stream leaves that name: `train = raw.apply(shard).map(f)`.
//!
//! Input: the source's range and the dataset the training reads. Output:
//! the range of the source's name in that continuation, or that there is
//! no need to move the shard.

use std::ops::Range;

use rustpython_parser::ast::Expr;

use crate::analysis::training::Scope;
use crate::analysis::walk::{chain_root, walk_statement_expressions};
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

/// Attributes a directory dataset carries that a transformed one loses.
const SOURCE_ATTRIBUTES: &[&str] = &["class_names", "file_paths"];

/// Where the shard must go instead of after the source: `Some(None)` when
/// the source's name serves more than training and no continuation of it
/// leads to `dataset` (then the stream cannot be sharded safely), `None`
/// when the place after the source is right.
pub(super) fn moved_shard(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    dataset: &Expr,
    source: &Range<usize>,
) -> Option<Option<Range<usize>>> {
    let (name, last_other_use) = name_used_beside_training(rewrite, source)?;
    Some(training_continuation(
        rewrite,
        scope,
        dataset,
        &name,
        last_other_use,
    ))
}

/// The name the source is assigned to, when it is also read for an
/// attribute only the source has or fed to a layer's `adapt` (itself or a
/// stream another name derives from it), with where the last such use ends.
fn name_used_beside_training(
    rewrite: &ModuleRewrite,
    source: &Range<usize>,
) -> Option<(String, usize)> {
    let module = rewrite.module;
    let (builder, assignment) = module.scopes.iter().find_map(|scope| {
        scope
            .facts
            .assignments
            .iter()
            .find(|assignment| span(assignment.value) == *source)
            .map(|assignment| (scope, assignment))
    })?;
    let name = assignment.name.as_str();
    let top_level = &module.scopes[0];
    // Names bound to a stream derived from the source's
    // (`text_only = raw.map(lambda x, y: x)`), which an `adapt` may read.
    let derived: Vec<&str> = [builder, top_level]
        .iter()
        .flat_map(|scope| scope.facts.assignments.iter())
        .filter(|other| {
            other.name != name
                && matches!(chain_root(other.value), Expr::Name(root) if root.id.as_str() == name)
        })
        .map(|other| other.name.as_str())
        .collect();
    let from_source = |used: &str| used == name || derived.contains(&used);
    let mut last_other_use: Option<usize> = None;
    for scope in [builder, top_level] {
        for statement in &scope.facts.statements {
            walk_statement_expressions(statement, &mut |expr| {
                let other_use = match expr {
                    Expr::Attribute(attribute) => {
                        SOURCE_ATTRIBUTES.contains(&attribute.attr.as_str())
                            && matches!(attribute.value.as_ref(), Expr::Name(used) if used.id.as_str() == name)
                    }
                    Expr::Call(call) => {
                        matches!(call.func.as_ref(), Expr::Attribute(method) if method.attr.as_str() == "adapt")
                            && call.args.iter().any(|argument| {
                                matches!(chain_root(argument), Expr::Name(used) if from_source(used.id.as_str()))
                            })
                    }
                    _ => false,
                };
                if other_use {
                    let end = span(expr).end;
                    last_other_use = Some(last_other_use.map_or(end, |last| last.max(end)));
                }
            });
        }
    }
    last_other_use.map(|end| (name.to_string(), end))
}

/// The range of `source_name` where the stream the training reads is
/// derived from it (`train = raw.map(f)`, then `train = train.cache()`),
/// followed back through the names assigned before the use.
fn training_continuation(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    dataset: &Expr,
    source_name: &str,
    last_other_use: usize,
) -> Option<Range<usize>> {
    let top_level = &rewrite.module.scopes[0];
    let mut current = chain_root(dataset);
    let mut before = span(dataset).start;
    for _ in 0..16 {
        let Expr::Name(name) = current else {
            return None;
        };
        let assigned = [scope, top_level].into_iter().find_map(|candidate| {
            super::sharding::plain_assignments(candidate, name.id.as_str())
                .rfind(|assignment| span(assignment.statement).end <= before)
        })?;
        let root = chain_root(assigned.value);
        // A continuation of the source's name after its other uses
        // (`raw.map(f)`, or `ds = ds.prefetch(n)` once `ds.class_names`
        // was read); the source's own assignment is none.
        // Bound to another name, the source's name keeps the whole data
        // for its other uses wherever they are; rebinding the source's name
        // must come after them.
        if let Expr::Name(root_name) = root
            && root_name.id.as_str() == source_name
            && (assigned.name != source_name || span(assigned.statement).start >= last_other_use)
        {
            return Some(span(root));
        }
        if name.id.as_str() == source_name && !matches!(root, Expr::Name(_)) {
            return None;
        }
        before = span(assigned.statement).start;
        current = root;
    }
    None
}
