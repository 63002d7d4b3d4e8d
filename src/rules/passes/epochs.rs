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
    divide_epochs(
        rewrite,
        epochs,
        range,
        format!(
            "`{data}` cannot be split among the workers, and each draws its own order of it: each worker now runs its share of the epochs of `for ... in {bound}` over all of it, as Horovod's Keras examples divide the epochs of `fit` on arrays"
        ),
    );
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
    let (epochs, range) = enclosing_range_loop(scope, loop_statement)?;
    let shuffled_each_epoch = shuffles_in(&epochs.body, loop_statement, iterable);
    (ordered_per_process || shuffled_each_epoch).then_some((epochs, range))
}

/// Divides the epoch loop's range and says why with DST140.
fn divide_epochs(
    rewrite: &mut ModuleRewrite,
    epochs: &ast::StmtFor,
    range: &ast::ExprCall,
    why: String,
) {
    super::loop_steps::divide_range(rewrite, &Stmt::For(epochs.clone()), range);
    rewrite.diagnose(Diagnostic::new(
        EPOCHS_DIVIDED,
        span(epochs.iter.as_ref()),
        why,
    ));
}

/// The nearest loop over `range(...)` around `loop_statement` in `scope`,
/// with its range.
fn enclosing_range_loop<'a>(
    scope: &'a Scope<'a>,
    loop_statement: &Stmt,
) -> Option<(&'a ast::StmtFor, &'a ast::ExprCall)> {
    let path = path_to(scope.body, &span(loop_statement))?;
    path.iter()
        .rev()
        .skip(1)
        .filter(|statement| is_loop(statement))
        .find_map(|statement| match statement {
            Stmt::For(node) => Some((
                node,
                super::loop_steps::range_bound(super::loop_steps::unwrap_enumerate(&node.iter))?,
            )),
            _ => None,
        })
}

/// Whether the epoch's body shuffles the list the loop walks, before it
/// (`random.shuffle(batches)`, `np.random.shuffle(rows)`): the seed pass
/// gives each worker its own draw.
fn shuffles_in(body: &[Stmt], loop_statement: &Stmt, iterable: &Expr) -> bool {
    dotted_name(iterable)
        .is_some_and(|walked| shuffled_before(body, loop_statement).contains(&walked))
}

/// The lists the statements shuffle at random before `loop_statement`.
fn shuffled_before(body: &[Stmt], loop_statement: &Stmt) -> Vec<String> {
    let before = span(loop_statement).start;
    let mut shuffled = Vec::new();
    crate::analysis::walk::for_each_statement(body, false, &mut |statement| {
        if span(statement).end > before {
            return;
        }
        walk_statement_expressions(statement, &mut |expr| {
            if let Expr::Call(call) = expr
                && matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "shuffle")
                && dotted_name(&call.func).is_some_and(|name| name.contains("random"))
                && let Some(list) = call.args.first().and_then(dotted_name)
            {
                shuffled.push(list);
            }
        });
    });
    shuffled
}

/// A `while` that cuts its batches from a list the epoch around it
/// shuffles first (`np.random.shuffle(rows)`, then `rows[start:end]` until
/// the end of the rows): each process walks its own order, so the epochs
/// are divided, with DST140. Returns whether it did.
pub fn divide_epochs_around_walk(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    loop_statement: &Stmt,
) -> bool {
    let Stmt::While(walk) = loop_statement else {
        return false;
    };
    let Some((epochs, range)) = enclosing_range_loop(scope, loop_statement) else {
        return false;
    };
    let shuffled = shuffled_before(&epochs.body, loop_statement);
    let mut sliced = None;
    crate::analysis::walk::for_each_statement(&walk.body, false, &mut |statement| {
        walk_statement_expressions(statement, &mut |expr| {
            if let Expr::Subscript(subscript) = expr
                && let Some(list) = dotted_name(&subscript.value)
                && shuffled.contains(&list)
                && cuts_a_slice(&subscript.slice)
            {
                sliced.get_or_insert(list);
            }
        });
    });
    let Some(data) = sliced else {
        return false;
    };
    let bound = rewrite.expression_text(&epochs.iter).to_string();
    divide_epochs(
        rewrite,
        epochs,
        range,
        format!(
            "the batches of `while ...` are cut from `{data}`, which each worker shuffles its own way every epoch: each worker now runs its share of the epochs of `for ... in {bound}` over all of it, as Horovod's Keras examples divide the epochs of `fit` on arrays"
        ),
    );
    true
}

/// `rows[a:b]`, or `rows[a:b, 0:1]` (a slice on the first axis).
fn cuts_a_slice(slice: &Expr) -> bool {
    match slice {
        Expr::Slice(_) => true,
        Expr::Tuple(axes) => axes
            .elts
            .first()
            .is_some_and(|first| matches!(first, Expr::Slice(_))),
        _ => false,
    }
}

/// A `range` loop that runs once whatever the workers (`total_batch =
/// int(ntrain / batch_size)` with `batch_size = ntrain`, each pass one
/// random batch of every row): dividing it changes nothing, so the epoch
/// loop around it is divided instead, with DST140. Returns whether it was.
pub fn divide_epochs_around_single_pass(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    loop_statement: &Stmt,
    range: &ast::ExprCall,
) -> bool {
    let [bound] = range.args.as_slice() else {
        return false;
    };
    let at = span(loop_statement).start;
    if !is_one(rewrite, scope, bound, at, 0) {
        return false;
    }
    let Some((epochs, epochs_range)) = enclosing_range_loop(scope, loop_statement) else {
        return false;
    };
    let inner = rewrite.expression_text(&range.func).to_string();
    let bound_text = rewrite.expression_text(bound).to_string();
    let outer = rewrite.expression_text(&epochs.iter).to_string();
    divide_epochs(
        rewrite,
        epochs,
        epochs_range,
        format!(
            "`{inner}({bound_text})` runs once (its batch is all of the data): each worker now runs its share of the epochs of `for ... in {outer}` instead"
        ),
    );
    true
}

/// Whether `expr` is 1 on every run: the literal, or a ratio of two values
/// the same before `at` (`int(n / n)`, `n // batch` with `batch = n`),
/// following names through their last assignment before it.
fn is_one(rewrite: &ModuleRewrite, scope: &Scope, expr: &Expr, at: usize, depth: usize) -> bool {
    if depth > 4 {
        return false;
    }
    match expr {
        Expr::Constant(constant) => {
            matches!(&constant.value, ast::Constant::Int(value) if value.to_string() == "1")
        }
        Expr::Call(call)
            if matches!(call.func.as_ref(), Expr::Name(name) if name.id.as_str() == "int")
                && call.args.len() == 1 =>
        {
            is_one(rewrite, scope, &call.args[0], at, depth + 1)
        }
        Expr::BinOp(ratio) if matches!(ratio.op, ast::Operator::Div | ast::Operator::FloorDiv) => {
            let left = resolved(scope, &ratio.left, at, 0);
            let right = resolved(scope, &ratio.right, at, 0);
            rewrite.expression_text(left) == rewrite.expression_text(right)
        }
        Expr::Name(_) => {
            let value = resolved(scope, expr, at, 0);
            !std::ptr::eq(value, expr) && is_one(rewrite, scope, value, at, depth + 1)
        }
        _ => false,
    }
}

/// What a name holds: the value of its last assignment in the scope before
/// `at`, followed a few names deep; anything else is itself.
fn resolved<'a>(scope: &Scope<'a>, expr: &'a Expr, at: usize, depth: usize) -> &'a Expr {
    let Expr::Name(name) = expr else {
        return expr;
    };
    if depth > 4 {
        return expr;
    }
    scope
        .facts
        .last_assignment_before(name.id.as_str(), at)
        // One that always runs before `at`: in no block that `at` is not in
        // (`if batch is None: batch = n` holds only sometimes).
        .filter(|assignment| {
            path_to(scope.body, &span(assignment.statement)).is_some_and(|path| {
                path.iter()
                    .rev()
                    .skip(1)
                    .all(|holder| span(*holder).contains(&at))
            })
        })
        .filter(|assignment| matches!(assignment.statement, Stmt::Assign(assign) if assign.targets.len() == 1 && matches!(assign.targets[0], Expr::Name(_))))
        .map_or(expr, |assignment| resolved(scope, assignment.value, at, depth + 1))
}
