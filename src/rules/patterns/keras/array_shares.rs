//! A fit on in-memory arrays whose history is read afterwards (plotted
//! against `range(1, epochs + 1)`, averaged per epoch across folds, drawn
//! against a learning-rate sweep) keeps its epochs: dividing them would
//! shorten the history, and the code reading it would fail on every worker.
//! Each worker trains every epoch on its own share of the rows instead,
//! `x[hvd.rank()::hvd.size()]`, which splits the same work.
//!
//! Input: the fit and its scope. Output: the edits slicing its arrays, or
//! nothing when its inputs are not plain arrays (a dict of inputs).

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::analysis::training::Scope;
use crate::analysis::walk::{dotted_name, keyword, walk_statement_expressions};
use crate::python::edit::Edit;
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

/// Whether what the fit returns is read for its per-epoch history after it
/// (`history.history[...]`, `history.epoch`, or `model.history.history`).
pub(super) fn history_is_read(rewrite: &ModuleRewrite, scope: &Scope, fit: &ast::ExprCall) -> bool {
    let mut names: Vec<String> = Vec::new();
    for statement in scope.facts.statements.iter().copied() {
        if let Stmt::Assign(assign) = statement
            && span(assign.value.as_ref()) == span(fit)
            && let [Expr::Name(target)] = assign.targets.as_slice()
        {
            names.push(target.id.to_string());
        }
    }
    // Keras keeps the last fit's history on the model too.
    if let Expr::Attribute(method) = fit.func.as_ref()
        && let Some(model) = dotted_name(&method.value)
    {
        names.push(format!("{model}.history"));
    }
    let after = span(fit).end;
    let mut read = false;
    for candidate in &rewrite.module.scopes {
        for statement in &candidate.facts.statements {
            walk_statement_expressions(statement, &mut |expr| {
                if let Expr::Attribute(attribute) = expr
                    && matches!(attribute.attr.as_str(), "history" | "epoch")
                    && span(expr).start >= after
                    && dotted_name(&attribute.value).is_some_and(|name| names.contains(&name))
                {
                    read = true;
                }
            });
        }
    }
    read
}

/// Slices each array the fit trains on (`x`, `y`, `sample_weight`; each
/// input of a list of model inputs) to the worker's share of its rows.
/// False, with nothing edited, when an input is not one the tool can slice.
pub(super) fn share_rows_by_rank(rewrite: &mut ModuleRewrite, fit: &ast::ExprCall) -> bool {
    let argument = |name: &str, position: usize| {
        keyword(fit, name)
            .map(|keyword| &keyword.value)
            .or_else(|| fit.args.get(position))
    };
    let mut arrays: Vec<&Expr> = Vec::new();
    for (name, position) in [("x", 0), ("y", 1), ("sample_weight", usize::MAX)] {
        match argument(name, position) {
            None => {}
            Some(Expr::Dict(_)) => return false,
            Some(
                Expr::List(ast::ExprList { elts, .. }) | Expr::Tuple(ast::ExprTuple { elts, .. }),
            ) => {
                if elts.iter().any(|element| {
                    matches!(element, Expr::Constant(_) | Expr::List(_) | Expr::Tuple(_))
                }) {
                    return false;
                }
                arrays.extend(elts.iter());
            }
            Some(array) => arrays.push(array),
        }
    }
    if arrays.is_empty() {
        return false;
    }
    let hvd = rewrite.hvd.clone();
    for array in arrays {
        let text = rewrite.expression_text(array).to_string();
        let sliceable = matches!(
            array,
            Expr::Name(_) | Expr::Attribute(_) | Expr::Call(_) | Expr::Subscript(_)
        );
        let text = if sliceable { text } else { format!("({text})") };
        rewrite.edit(Edit::replacement(
            span(array),
            format!("{text}[{hvd}.rank()::{hvd}.size()]"),
        ));
    }
    true
}
