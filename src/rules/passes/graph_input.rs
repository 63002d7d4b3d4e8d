//! The tf.data pipeline a graph reads through an iterator
//! (`X, Y = iterator.get_next()`, nothing fed): when the steps of the loop
//! that runs the graph are divided, every worker would still read the same
//! stream from its start, so the pipeline is sharded right after its source
//! as well. Each worker then takes its part of the steps over its own part
//! of the data; the work is divided once, by the steps.
//!
//! Input: the module's calls. Output: the shard (through `sharding`), when
//! exactly one pipeline feeds the module's iterators.

use rustpython_parser::ast::{self, Expr};

use super::sharding::shard_dataset;
use crate::analysis::training::Scope;
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

/// Iterator constructors that take the dataset as their receiver
/// (`ds.make_one_shot_iterator()`) or first argument
/// (`tf.data.make_one_shot_iterator(ds)`).
const ITERATOR_CONSTRUCTORS: &[&str] = &["make_one_shot_iterator", "make_initializable_iterator"];

/// Shards the one pipeline the module's `get_next()` calls read. Returns
/// whether it did.
pub fn shard_graph_input(rewrite: &mut ModuleRewrite) -> bool {
    if !rewrite.options.shard_datasets || rewrite.calls_method("shard") {
        return false;
    }
    let module = rewrite.module;
    let mut read: Vec<(&Scope, &Expr)> = Vec::new();
    for scope in &module.scopes {
        for site in &scope.facts.calls {
            let Expr::Attribute(attribute) = site.call.func.as_ref() else {
                continue;
            };
            if attribute.attr.as_str() != "get_next" {
                continue;
            }
            if let Some(dataset) = dataset_of_iterator(scope, &attribute.value) {
                read.push((scope, dataset));
            }
        }
    }
    let first_text = read
        .first()
        .map(|(_, dataset)| rewrite.expression_text(dataset).to_string());
    let one_pipeline = read
        .iter()
        .all(|(_, dataset)| Some(rewrite.expression_text(dataset)) == first_text.as_deref());
    match read.first() {
        Some((scope, dataset)) if one_pipeline => shard_dataset(rewrite, scope, dataset),
        _ => false,
    }
}

/// The dataset an iterator expression is built from: the constructor call
/// itself, or a name the scope (or the top level) assigns one.
fn dataset_of_iterator<'a>(scope: &Scope<'a>, iterator: &'a Expr) -> Option<&'a Expr> {
    match iterator {
        Expr::Call(call) => dataset_of_constructor(call),
        Expr::Name(name) => scope
            .facts
            .assignments
            .iter()
            .filter(|assignment| assignment.name == name.id.as_str())
            .filter(|assignment| span(assignment.statement).start < span(iterator).start)
            .filter_map(|assignment| match assignment.value {
                Expr::Call(call) => dataset_of_constructor(call),
                _ => None,
            })
            .next_back(),
        _ => None,
    }
}

fn dataset_of_constructor(call: &ast::ExprCall) -> Option<&Expr> {
    let Expr::Attribute(attribute) = call.func.as_ref() else {
        return None;
    };
    if !ITERATOR_CONSTRUCTORS.contains(&attribute.attr.as_str()) {
        return None;
    }
    match call.args.first() {
        // `tf.data.make_one_shot_iterator(ds)`, `tf.compat.v1.data...(ds)`.
        Some(dataset) => Some(dataset),
        None => Some(attribute.value.as_ref()),
    }
}
