//! In-memory arrays: what the rewrite may cut by rank itself (epochs of a
//! `fit` on them, a worker's share of the examples a loop zips together),
//! unlike a stream it must shard where it is built.

use rustpython_parser::ast::Expr;

use crate::analysis::training::Scope;
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

/// Whether an expression is an in-memory NumPy array: what a Keras dataset
/// loader or a NumPy function returns, and arithmetic, slices, `astype` or
/// `reshape` of one, through the names last assigned before `before`.
pub fn is_in_memory_array(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    value: &Expr,
    before: usize,
    depth: usize,
) -> bool {
    if depth > 6 {
        return false;
    }
    let recurse =
        |inner: &Expr, at: usize| is_in_memory_array(rewrite, scope, inner, at, depth + 1);
    match value {
        Expr::BinOp(operation) => {
            recurse(&operation.left, before) || recurse(&operation.right, before)
        }
        Expr::Subscript(subscript) => recurse(&subscript.value, before),
        Expr::Call(call) => {
            let callee = rewrite.callee(scope, &call.func).unwrap_or_default();
            let loads =
                callee.starts_with("tensorflow.keras.datasets.") && callee.ends_with(".load_data");
            let numpy = callee.starts_with("numpy.") && !callee.starts_with("numpy.random.");
            // One-hot labels of an array are an array.
            let one_hot = matches!(
                callee.as_str(),
                "tensorflow.keras.utils.to_categorical" | "keras.utils.to_categorical"
            ) && call
                .args
                .first()
                .is_some_and(|labels| recurse(labels, before));
            let converts = matches!(call.func.as_ref(), Expr::Attribute(method)
                if matches!(method.attr.as_str(), "astype" | "reshape")
                    && recurse(&method.value, before));
            loads || numpy || converts || one_hot
        }
        Expr::Name(name) => {
            let places = [scope, &rewrite.module.scopes[0]];
            let Some(assignment) = places.iter().find_map(|place| {
                place.facts.assignments.iter().rfind(|assignment| {
                    assignment.name == name.id.as_str() && span(assignment.statement).end <= before
                })
            }) else {
                return false;
            };
            recurse(assignment.value, span(assignment.statement).start)
        }
        _ => false,
    }
}

/// `for x, y in zip(train_x, train_y):` over in-memory arrays, one example
/// (or row) per step: the loop can walk this worker's share of the pairs.
pub fn zips_arrays(rewrite: &ModuleRewrite, scope: &Scope, iterable: &Expr) -> bool {
    let Expr::Call(call) = iterable else {
        return false;
    };
    let is_zip = matches!(call.func.as_ref(), Expr::Name(name) if name.id.as_str() == "zip");
    is_zip
        && !call.args.is_empty()
        && call.keywords.is_empty()
        && call
            .args
            .iter()
            .all(|array| is_in_memory_array(rewrite, scope, array, span(iterable).start, 0))
}
