//! A fit on in-memory arrays whose history is read afterwards (plotted
//! against `range(1, epochs + 1)`, averaged per epoch across folds, drawn
//! against a learning-rate sweep), or whose per-epoch checkpoints
//! (`weights.{epoch:02d}.hdf5`) are loaded afterwards, keeps its epochs:
//! dividing them would shorten the history or leave the later epochs'
//! files unwritten, and the code reading them would fail on every worker.
//! Each worker trains every epoch on its own share of the rows instead,
//! `rank_rows(x)` (every N-th row from its rank, the same count on every
//! worker), which splits the same work.
//!
//! Input: the fit and its scope. Output: the edits slicing its arrays, or
//! nothing when its inputs are not plain arrays (a dict of inputs).

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::analysis::catalogue::Effect;
use crate::analysis::training::Scope;
use crate::analysis::walk::{dotted_name, keyword, walk_expression, walk_statement_expressions};
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

/// Whether the fit writes a checkpoint per epoch (a `ModelCheckpoint` whose
/// path holds `{epoch`) and the module loads weights or a model after it:
/// the file of a later epoch may be the one it loads.
pub(super) fn epoch_checkpoints_loaded_later(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    fit: &ast::ExprCall,
) -> bool {
    let Some(callbacks) = keyword(fit, "callbacks").map(|keyword| &keyword.value) else {
        return false;
    };
    let at = span(fit).start;
    // A name holds what its last assignment before the fit bound.
    let bound = |name: &str| {
        scope
            .facts
            .assignment_before(name, at)
            .map(|assignment| assignment.value)
    };
    let elements: Vec<&Expr> = match callbacks {
        Expr::List(ast::ExprList { elts, .. }) => elts.iter().collect(),
        Expr::Name(name) => match bound(name.id.as_str()) {
            Some(Expr::List(ast::ExprList { elts, .. })) => elts.iter().collect(),
            _ => Vec::new(),
        },
        _ => Vec::new(),
    };
    let per_epoch_checkpoint = elements.into_iter().any(|element| {
        let made = match element {
            Expr::Name(name) => bound(name.id.as_str()),
            other => Some(other),
        };
        let Some(Expr::Call(call)) = made else {
            return false;
        };
        // A callback the catalogue says writes while `fit` runs, to a path.
        let path = rewrite
            .catalogued_effects(scope, call)
            .iter()
            .find_map(|effect| match effect {
                Effect::CallbackWrites { path: Some(path) } => path.of(call),
                _ => None,
            });
        let mut numbered = false;
        if let Some(path) = path {
            walk_expression(path, &mut |part| {
                numbered |= matches!(part, Expr::Constant(ast::ExprConstant { value: ast::Constant::Str(text), .. })
                    if text.contains("{epoch"));
            });
        }
        numbered
    });
    per_epoch_checkpoint && loads_after(rewrite, span(fit).end)
}

/// Whether any code after `offset` loads weights or a model.
fn loads_after(rewrite: &ModuleRewrite, offset: usize) -> bool {
    rewrite.module.scopes.iter().any(|scope| {
        scope.facts.calls.iter().any(|site| {
            span(site.call).start >= offset
                && dotted_name(&site.call.func).is_some_and(|callee| {
                    matches!(
                        callee.rsplit('.').next(),
                        Some("load_weights" | "load_model")
                    )
                })
        })
    })
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
    let helper = rank_rows_helper(rewrite, span(fit).start);
    for array in arrays {
        let text = rewrite.expression_text(array).to_string();
        rewrite.edit(Edit::replacement(span(array), format!("{helper}({text})")));
    }
    true
}

/// `rank_rows(rows)`: every N-th row from this worker's rank, cut to the
/// same count on every worker; each array of a list or dict of model inputs
/// (a name bound to `[input_a, input_b]`) alike. Shares that differ by one row can differ by
/// one batch, and a worker with one more step would wait forever for the
/// others' gradients.
fn rank_rows_helper(rewrite: &mut ModuleRewrite, site: usize) -> String {
    rewrite.helper(&["rank_rows", "horovod_rank_rows"], site, |helper, rewrite| {
        let hvd = &rewrite.hvd;
        let unit = &rewrite.stylist.indent_unit;
        vec![
            format!("def {helper}(rows):"),
            format!("{unit}\"\"\"This worker's share of the rows: every N-th from its rank, the same"),
            format!("{unit}count on every worker (their gradient allreduces pair up). A list or"),
            format!("{unit}dict holds one array per model input: each is shared alike.\"\"\""),
            format!("{unit}if isinstance(rows, (list, tuple)):"),
            format!("{unit}{unit}return type(rows)({helper}(part) for part in rows)"),
            format!("{unit}if isinstance(rows, dict):"),
            format!("{unit}{unit}return {{key: {helper}(part) for key, part in rows.items()}}"),
            format!("{unit}usable = len(rows) // {hvd}.size() * {hvd}.size()"),
            format!("{unit}return rows[{hvd}.rank():usable:{hvd}.size()]"),
        ]
    })
}
