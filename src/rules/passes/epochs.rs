//! A loop over data the tool cannot split (a pipeline each process shuffles
//! its own way, a list shuffled anew each epoch), run inside a loop over a
//! count of epochs: each worker runs its share of the epochs over all of the
//! data, in its own order, as Horovod's own Keras examples divide the epochs
//! of `fit` on arrays. With one order in every process, that would give
//! every worker the same batches: left whole then, with DST101.
//!
//! Input: the loop that steps and what it iterates. Output: the division of
//! the epoch loop's bound, with DST140.

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::analysis::training::Scope;
use crate::analysis::walk::{dotted_name, is_loop, path_to, walk_statement_expressions};
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

pub const EPOCHS_DIVIDED: Code = Code::new(
    "DST140",
    "epochs-divided",
    Severity::Info,
    "The data a training loop walks cannot be split, and each worker draws its own order of it: the epochs around the loop are divided among the workers instead.",
);

/// Divides the epochs around `loop_statement` when it walks `iterable` in
/// an order of each process's own (`ordered_per_process`: a pipeline
/// shuffled in each process) and an epoch loop over a `range` holds it.
/// Returns whether it did.
pub fn divide_epochs_instead(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    loop_statement: &Stmt,
    iterable: &Expr,
    ordered_per_process: bool,
) -> bool {
    let Some((epochs, range)) =
        epoch_loop_around(scope, loop_statement, iterable, ordered_per_process)
    else {
        return false;
    };
    let data = rewrite.expression_text(iterable).to_string();
    let bound = rewrite.expression_text(&epochs.iter).to_string();
    super::loop_steps::divide_range(rewrite, &Stmt::For(epochs.clone()), range);
    rewrite.diagnose(Diagnostic::new(
        EPOCHS_DIVIDED,
        span(epochs.iter.as_ref()),
        format!("`{data}` cannot be split among the workers, and each draws its own order of it: each worker now runs its share of the epochs of `for ... in {bound}` over all of it, as Horovod's Keras examples divide the epochs of `fit` on arrays"),
    ));
    true
}

/// The nearest loop over `range(...)` in `scope` around `loop_statement`,
/// with its range, when the data the loop walks is ordered per process.
pub fn epoch_loop_around<'a>(
    scope: &'a Scope<'a>,
    loop_statement: &Stmt,
    iterable: &Expr,
    ordered_per_process: bool,
) -> Option<(&'a ast::StmtFor, &'a ast::ExprCall)> {
    let path = path_to(scope.body, &span(loop_statement))?;
    let (epochs, range) = path
        .iter()
        .rev()
        .skip(1)
        .filter(|statement| is_loop(statement))
        .find_map(|statement| match statement {
            Stmt::For(node) => {
                let range = super::loop_steps::range_bound(super::loop_steps::unwrap_enumerate(
                    &node.iter,
                ))?;
                Some((node, range))
            }
            _ => None,
        })?;
    let shuffled_each_epoch = shuffles_in(&epochs.body, loop_statement, iterable);
    (ordered_per_process || shuffled_each_epoch).then_some((epochs, range))
}

/// Whether the epoch's body shuffles the list the loop walks, before it
/// (`random.shuffle(batches)`, `np.random.shuffle(rows)`): the seed pass
/// gives each worker its own draw.
fn shuffles_in(body: &[Stmt], loop_statement: &Stmt, iterable: &Expr) -> bool {
    let Some(walked) = dotted_name(iterable) else {
        return false;
    };
    let before = span(loop_statement).start;
    let mut found = false;
    crate::analysis::walk::for_each_statement(body, false, &mut |statement| {
        if span(statement).end > before {
            return;
        }
        walk_statement_expressions(statement, &mut |expr| {
            if let Expr::Call(call) = expr
                && matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "shuffle")
                && call.args.first().and_then(dotted_name).as_deref() == Some(walked.as_str())
                && dotted_name(&call.func).is_some_and(|name| name.contains("random"))
            {
                found = true;
            }
        });
    });
    found
}
