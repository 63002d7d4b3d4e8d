//! The split of a `fit`'s work among the workers, once: its step counts
//! divided, else its tf.data source sharded, else the epochs over in-memory
//! arrays divided; or DST101 saying why none applies. Arrays a single batch
//! covers (four XOR rows, the default batch of 32) are not split: every
//! worker would compute the same gradient.

use rustpython_parser::ast::{self, Expr};

use crate::analysis::training::Scope;
use crate::analysis::walk::{dotted_name, keyword};
use crate::diagnostics::Diagnostic;
use crate::python::parse::span;
use crate::rules::passes::arrays::is_in_memory_array;
use crate::rules::passes::epochs::EPOCHS_DIVIDED;
use crate::rules::passes::loop_steps::DATASET_NOT_SHARDED;
use crate::rules::passes::sharding::{shard_dataset, why_not_shardable};
use crate::rules::passes::shuffled_pipeline::{shuffled_per_process, why_left_whole};
use crate::rules::rewrite::ModuleRewrite;

/// Keras' batch size when `fit` is given none.
const DEFAULT_BATCH_SIZE: usize = 32;

/// Splits the work of one `fit` (see the module comment).
pub(super) fn divide_steps(rewrite: &mut ModuleRewrite, scope: &Scope, fit: &ast::ExprCall) {
    if rewrite.had_horovod {
        // Code that already uses Horovod split its work as it chose.
        return;
    }
    let mut divided = false;
    for name in ["steps_per_epoch", "validation_steps"] {
        if let Some(steps) = keyword(fit, name)
            && !matches!(
                &steps.value,
                Expr::Constant(ast::ExprConstant {
                    value: ast::Constant::None,
                    ..
                })
            )
        {
            rewrite.divide_expression(&steps.value);
            divided |= name == "steps_per_epoch";
        }
    }
    if let Some(Expr::Call(take)) = fit.args.first()
        && let Expr::Attribute(attribute) = take.func.as_ref()
        && attribute.attr.as_str() == "take"
        && let Some(count) = take.args.first()
    {
        rewrite.divide_expression(count);
        divided = true;
    }
    let shards = rewrite.calls_method("shard");
    if !divided
        && !shards
        && rewrite.options.shard_datasets
        && let Some(data) = fit.args.first()
        && shard_dataset(rewrite, scope, data)
    {
        return;
    }
    if !divided
        && !shards
        && let Some(why) = rows_one_batch_covers(rewrite, scope, fit)
    {
        report_full_batch(rewrite, fit, why);
        return;
    }
    if !divided && !shards && divide_epochs_of_arrays(rewrite, scope, fit) {
        return;
    }
    if !divided && !shards && divide_epochs_of_shuffled_pipeline(rewrite, scope, fit) {
        return;
    }
    if !divided && !shards && divide_epochs_of_augmented_arrays(rewrite, scope, fit) {
        return;
    }
    if !divided && !shards {
        rewrite.learning_rates.leave_rate_of_fit(span(fit));
        let data = fit
            .args
            .first()
            .map(|argument| rewrite.expression_text(argument).to_string())
            .unwrap_or_else(|| "the data".into());
        let unshardable = fit.args.first().and_then(|data| {
            why_not_shardable(rewrite, scope, data)
                .or_else(|| why_left_whole(rewrite, scope, data))
                .or_else(|| why_flow_left_whole(rewrite, scope, fit))
        });
        let why = if one_epoch_of_arrays(rewrite, scope, fit) {
            "its one epoch over in-memory arrays cannot be divided among workers".to_string()
        } else if let Some(reason) = unshardable {
            format!("{reason}, and no step count bounds it")
        } else {
            "nothing the tool can shard or divide bounds it".to_string()
        };
        rewrite.diagnose(
            Diagnostic::new(
                DATASET_NOT_SHARDED,
                span(fit),
                format!("every worker trains on all of `{data}` each epoch and {why}, so more workers bring no speed-up; the learning rate was left as written"),
            )
            .with_suggestion(format!(
                "shard the dataset with `.shard({0}, {1})` before batching, or pass `steps_per_epoch=<steps> // {0}`",
                rewrite.horovod_call("size"),
                rewrite.horovod_call("rank")
            )),
        );
    }
}

/// `fit(x, y, **fit_config)`: a step count in the dict is divided by the
/// merge `callbacks::rewrite_unpacked_fit` writes; a dataset is sharded; the
/// epochs of a fit on arrays are divided in the dict literal itself.
/// Otherwise the rate stays as written, and DST101 says why.
pub(super) fn divide_steps_of_unpacked_fit(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    fit: &ast::ExprCall,
    unpacked: &Expr,
) {
    if rewrite.had_horovod {
        return;
    }
    let dict = rewrite.expression_text(unpacked).to_string();
    let why = match super::optimizer::dict_entries(&rewrite.module.scopes[0], scope, unpacked) {
        Some(entries) => {
            let entry = |name: &str| {
                entries
                    .iter()
                    .find(|(key, _)| key == name)
                    .map(|(_, value)| *value)
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
            if entry("steps_per_epoch").is_some_and(|steps| !is_none(steps)) {
                return;
            }
            if !rewrite.calls_method("shard")
                && rewrite.options.shard_datasets
                && let Some(data) = fit.args.first()
                && shard_dataset(rewrite, scope, data)
            {
                return;
            }
            if divide_epochs_of_arrays_at(rewrite, scope, fit, entry("epochs")) {
                return;
            }
            format!("`{dict}` holds no step count or epochs the tool can divide")
        }
        None => format!("its arguments come from `**{dict}`, which the tool cannot read"),
    };
    rewrite.learning_rates.leave_rate_of_fit(span(fit));
    rewrite.diagnose(
        Diagnostic::new(
            DATASET_NOT_SHARDED,
            span(fit),
            format!("this fit may run all of its steps on every worker: {why}, so more workers may bring no speed-up; the learning rate was left as written"),
        )
        .with_suggestion(format!(
            "give the fit `epochs=` or `steps_per_epoch=` itself, or build `{dict}` as a dict literal in this scope"
        )),
    );
}

/// `fit(x, y, epochs=n)` on in-memory arrays: each worker runs `n // N`
/// epochs over its data, as Horovod's own Keras examples do. Returns whether
/// it divided them.
fn divide_epochs_of_arrays(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    fit: &ast::ExprCall,
) -> bool {
    divide_epochs_of_arrays_at(rewrite, scope, fit, fit_epochs(fit))
}

/// The same, with the epochs written where `epochs` is (in the fit, or in
/// the dict it unpacks).
fn divide_epochs_of_arrays_at(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    fit: &ast::ExprCall,
    epochs: Option<&Expr>,
) -> bool {
    let has_labels = fit.args.len() >= 2 || keyword(fit, "y").is_some();
    // `fit(x)` alone may be of a dataset or a generator; of arrays when the
    // code shows `x` is one (an autoencoder's input), or a list of them (the
    // inputs of a model of several, a loss added with `add_loss`).
    let in_memory = |data: &Expr| is_in_memory_array(rewrite, scope, data, span(fit).start, 0);
    let arrays_alone = keyword(fit, "x")
        .map(|keyword| &keyword.value)
        .or_else(|| fit.args.first())
        .is_some_and(|data| match data {
            Expr::List(ast::ExprList { elts, .. }) | Expr::Tuple(ast::ExprTuple { elts, .. }) => {
                !elts.is_empty() && elts.iter().all(in_memory)
            }
            data => in_memory(data),
        });
    if !has_labels && !arrays_alone {
        return false;
    }
    // One epoch (written out, a name assigned 1, or Keras' default) stays one
    // when divided: the rows are shared out instead.
    match epochs {
        Some(epochs) if literal_int(rewrite, scope, epochs) != Some(1) => {
            // Code reading the history or a later epoch's checkpoint needs
            // every epoch: the rows are shared out instead.
            if (super::array_shares::history_is_read(rewrite, scope, fit)
                || super::array_shares::epoch_checkpoints_loaded_later(rewrite, scope, fit))
                && super::array_shares::share_rows_by_rank(rewrite, fit)
            {
                return true;
            }
            divide_fit_epochs(rewrite, fit, epochs);
            true
        }
        // Only `fit` takes arrays as `fit(x, y)`: `fit_generator(gen, steps, epochs)`
        // holds a generator and a step count there.
        _ => is_fit_itself(fit) && super::array_shares::share_rows_by_rank(rewrite, fit),
    }
}

/// `fit(train, epochs=n)` on a finite pipeline that cannot be sharded and
/// that each process shuffles its own way (`shuffled_pipeline`): each
/// worker runs `n // N` epochs over all of it, in its own order, with
/// DST140. Not when a later epoch's checkpoint is loaded afterwards (it
/// would never be written). Returns whether it divided them.
fn divide_epochs_of_shuffled_pipeline(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    fit: &ast::ExprCall,
) -> bool {
    let Some(data) = fit_data(fit) else {
        return false;
    };
    let Some(epochs) = fit_epochs(fit) else {
        return false;
    };
    if literal_int(rewrite, scope, epochs) == Some(1)
        || !shuffled_per_process(rewrite, scope, data)
        || super::array_shares::epoch_checkpoints_loaded_later(rewrite, scope, fit)
    {
        return false;
    }
    let why = format!(
        "`{}` cannot be split among the workers, and each draws its own order of it (an unseeded `shuffle`): each worker now runs its share of the `{}` epochs over all of it, as Horovod's Keras examples divide the epochs of `fit` on arrays",
        rewrite.expression_text(data),
        rewrite.expression_text(epochs)
    );
    divide_fit_epochs(rewrite, fit, epochs);
    rewrite.diagnose(Diagnostic::new(EPOCHS_DIVIDED, span(epochs), why));
    true
}

/// `fit(augmenter.flow(x, y, batch_size=b), epochs=n)` (or `fit_generator`):
/// Keras' image augmenter walks in-memory arrays in an order it draws in
/// each process (`shuffle`, on unless passed false), so each worker runs
/// `n // N` epochs over all of them, as for the arrays themselves, with
/// DST140. Returns whether it divided them.
fn divide_epochs_of_augmented_arrays(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    fit: &ast::ExprCall,
) -> bool {
    let Some(flow) = augmenter_flow(rewrite, scope, fit) else {
        return false;
    };
    let one_order = walks_in_one_order(flow);
    // `fit_generator(generator, steps_per_epoch, epochs)` holds the epochs third.
    let epochs = match is_fit_itself(fit) {
        true => fit_epochs(fit),
        false => keyword(fit, "epochs")
            .map(|keyword| &keyword.value)
            .or_else(|| fit.args.get(2)),
    };
    let Some(epochs) = epochs else {
        return false;
    };
    if one_order
        || literal_int(rewrite, scope, epochs) == Some(1)
        || super::array_shares::epoch_checkpoints_loaded_later(rewrite, scope, fit)
    {
        return false;
    }
    let why = format!(
        "`{}` walks in-memory arrays in an order each worker draws for itself: each worker now runs its share of the `{}` epochs over all of them, as Horovod's Keras examples divide the epochs of `fit` on arrays",
        rewrite.expression_text(&flow.func),
        rewrite.expression_text(epochs)
    );
    divide_fit_epochs(rewrite, fit, epochs);
    rewrite.diagnose(Diagnostic::new(EPOCHS_DIVIDED, span(epochs), why));
    true
}

/// The augmenter's `flow(x, y)` a fit trains on, if it does.
fn augmenter_flow<'a>(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    fit: &'a ast::ExprCall,
) -> Option<&'a ast::ExprCall> {
    let Some(Expr::Call(flow)) = keyword(fit, "generator")
        .map(|keyword| &keyword.value)
        .or_else(|| fit_data(fit))
    else {
        return None;
    };
    // Only Keras' augmenter has `flow(x, y)`, and it walks NumPy arrays.
    matches!(flow.func.as_ref(), Expr::Attribute(method)
        if method.attr.as_str() == "flow" && is_image_augmenter(rewrite, scope, &method.value, span(fit).start))
    .then_some(flow)
}

/// `flow(..., shuffle=False)`: the same order in every process.
fn walks_in_one_order(flow: &ast::ExprCall) -> bool {
    keyword(flow, "shuffle").is_some_and(|shuffle| {
        matches!(
            &shuffle.value,
            Expr::Constant(ast::ExprConstant {
                value: ast::Constant::Bool(false),
                ..
            })
        )
    })
}

/// Why a fit on the augmenter's `flow` is left whole (said in DST101).
fn why_flow_left_whole(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    fit: &ast::ExprCall,
) -> Option<String> {
    let flow = augmenter_flow(rewrite, scope, fit)?;
    walks_in_one_order(flow).then(|| {
        "it walks its arrays in one order on every worker (`shuffle=False`), so divided epochs would give every worker the same batches".to_string()
    })
}

/// Whether `receiver` names a Keras `ImageDataGenerator`, as last bound
/// before `at` (in the scope or at the top level).
fn is_image_augmenter(rewrite: &ModuleRewrite, scope: &Scope, receiver: &Expr, at: usize) -> bool {
    let Expr::Name(name) = receiver else {
        return false;
    };
    [scope, &rewrite.module.scopes[0]].iter().any(|place| {
        place
            .facts
            .last_assignment_before(name.id.as_str(), at)
            .and_then(|assignment| assignment.callee.as_deref())
            .is_some_and(|callee| callee.ends_with("preprocessing.image.ImageDataGenerator"))
    })
}

/// What a fit trains on: `x`, or its first argument.
fn fit_data(fit: &ast::ExprCall) -> Option<&Expr> {
    keyword(fit, "x")
        .map(|keyword| &keyword.value)
        .or_else(|| fit.args.first())
}

/// A fit's epochs: `epochs=`, or the fourth argument of `fit(x, y, batch_size, epochs)`.
fn fit_epochs(fit: &ast::ExprCall) -> Option<&Expr> {
    keyword(fit, "epochs")
        .map(|keyword| &keyword.value)
        .or_else(|| fit.args.get(3))
}

/// Divides a fit's epochs by the worker count, and tells the rate pass
/// that this fit's work is split.
fn divide_fit_epochs(rewrite: &mut ModuleRewrite, fit: &ast::ExprCall, epochs: &Expr) {
    rewrite.divide_expression(epochs);
    rewrite
        .learning_rates
        .fits_with_divided_epochs
        .push(span(fit));
}

/// Whether the call is `receiver.fit(...)` (not `fit_generator`).
fn is_fit_itself(fit: &ast::ExprCall) -> bool {
    matches!(fit.func.as_ref(), Expr::Attribute(method) if method.attr.as_str() == "fit")
}

/// A fit on in-memory arrays (with labels) for exactly one epoch.
fn one_epoch_of_arrays(rewrite: &ModuleRewrite, scope: &Scope, fit: &ast::ExprCall) -> bool {
    let has_labels = fit.args.len() >= 2 || keyword(fit, "y").is_some();
    has_labels
        && fit_epochs(fit).is_some_and(|epochs| literal_int(rewrite, scope, epochs) == Some(1))
}

/// A list (or tuple) of the model's inputs, each an array of rows, rather
/// than a list of literal rows.
fn is_list_of_inputs(value: &Expr) -> bool {
    matches!(value, Expr::List(ast::ExprList { elts, .. }) | Expr::Tuple(ast::ExprTuple { elts, .. })
    if elts.first().is_some_and(|first| {
        !matches!(first, Expr::List(_) | Expr::Tuple(_) | Expr::Constant(_))
    }))
}

/// Why one batch of a fit on arrays holds all its rows (said in DST101):
/// `batch_size` counts the data's rows, or the rows are written out in the
/// code and `batch_size` (a number, or Keras' default) is at least their number.
fn rows_one_batch_covers(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    fit: &ast::ExprCall,
) -> Option<String> {
    let data = keyword(fit, "x")
        .map(|keyword| &keyword.value)
        .or_else(|| fit.args.first())?;
    // `fit([user_ids, movie_ids], ...)`: a list of the model's inputs, each
    // with the rows; a list of literal rows is the data itself. Also through
    // a name bound to such a list (`inputs = [prices, volumes]`).
    let data = match data {
        Expr::Name(name) => scope
            .facts
            .assignment_before(name.id.as_str(), span(fit).start)
            .map(|assignment| assignment.value)
            .filter(|value| is_list_of_inputs(value))
            .unwrap_or(data),
        other => other,
    };
    let data = match data {
        Expr::List(ast::ExprList { elts, .. }) | Expr::Tuple(ast::ExprTuple { elts, .. })
            if elts.first().is_some_and(|first| {
                !matches!(first, Expr::List(_) | Expr::Tuple(_) | Expr::Constant(_))
            }) =>
        {
            &elts[0]
        }
        other => other,
    };
    let batch_size = keyword(fit, "batch_size").map(|keyword| &keyword.value);
    // `batch_size=len(rows)` for `fit(np.array(rows), ...)`: one batch of all of them.
    if let Some(batch) = batch_size
        && counts_rows_of(batch, data)
    {
        return Some(format!(
            "each step of this fit trains on all the rows it is given (`batch_size={}`): a share of them per worker would still be one step each, so its epochs were not divided and the learning rate was left as written",
            rewrite.expression_text(batch)
        ));
    }
    let rows = literal_rows(rewrite, scope, data, span(fit).start, 0)?;
    let batch = match batch_size {
        None => DEFAULT_BATCH_SIZE,
        Some(value) => literal_int(rewrite, scope, value)?,
    };
    (rows <= batch).then(|| format!("each step of this fit trains on all {rows} rows of its data (one batch holds them), so every worker would compute the same gradient: its epochs were not divided and the learning rate was left as written"))
}

/// Whether `count` is the number of rows of `data`: `len(x)` or
/// `x.shape[0]` of the name `data` is, or converts (`np.array(x)`).
fn counts_rows_of(count: &Expr, data: &Expr) -> bool {
    fn rows_name(expr: &Expr) -> Option<String> {
        match expr {
            Expr::Call(call)
                if call.args.len() == 1
                    && dotted_name(&call.func).is_some_and(|name| {
                        name.ends_with("array") || name.ends_with("asarray")
                    }) =>
            {
                rows_name(&call.args[0])
            }
            other => dotted_name(other),
        }
    }
    let counted = match count {
        Expr::Call(call)
            if matches!(call.func.as_ref(), Expr::Name(name) if name.id.as_str() == "len")
                && call.args.len() == 1 =>
        {
            rows_name(&call.args[0])
        }
        Expr::Subscript(subscript) if matches!(subscript.slice.as_ref(), Expr::Constant(ast::ExprConstant { value: ast::Constant::Int(index), .. }) if index.to_string() == "0") => {
            match subscript.value.as_ref() {
                Expr::Attribute(shape) if shape.attr.as_str() == "shape" => rows_name(&shape.value),
                _ => None,
            }
        }
        _ => None,
    };
    counted.is_some_and(|name| rows_name(data).as_deref() == Some(name.as_str()))
}

/// The length of a list written out in the code (`[[0, 0], [0, 1]]`,
/// `np.array([...])`), through names assigned once.
fn literal_rows(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    value: &Expr,
    at: usize,
    depth: usize,
) -> Option<usize> {
    match value {
        Expr::List(list) => Some(list.elts.len()),
        Expr::Tuple(tuple) => Some(tuple.elts.len()),
        Expr::Call(call)
            if dotted_name(&call.func).is_some_and(|name| {
                name.ends_with(".array")
                    || name.ends_with(".asarray")
                    || name == "array"
                    || name.ends_with(".constant")
            }) =>
        {
            literal_rows(rewrite, scope, call.args.first()?, at, depth + 1)
        }
        // `tf.expand_dims(x, axis=-1)`: a new last axis keeps the rows (a
        // new first axis would make one row).
        Expr::Call(call)
            if dotted_name(&call.func).is_some_and(|name| name.ends_with("expand_dims")) =>
        {
            let axis = keyword(call, "axis")
                .map(|keyword| &keyword.value)
                .or_else(|| call.args.get(1))?;
            let keeps_rows = match axis {
                Expr::UnaryOp(negative) => matches!(negative.op, ast::UnaryOp::USub),
                Expr::Constant(ast::ExprConstant {
                    value: ast::Constant::Int(number),
                    ..
                }) => usize::try_from(number).is_ok_and(|axis| axis >= 1),
                _ => false,
            };
            if !keeps_rows {
                return None;
            }
            literal_rows(rewrite, scope, call.args.first()?, at, depth + 1)
        }
        Expr::Name(name) if depth < 4 => {
            let (statement, assigned) = reaching_assignment(rewrite, scope, name.id.as_str(), at)?;
            literal_rows(rewrite, scope, assigned, span(statement).start, depth + 1)
        }
        _ => None,
    }
}

/// An integer written in the code, or a name assigned one once.
pub(super) fn literal_int(rewrite: &ModuleRewrite, scope: &Scope, value: &Expr) -> Option<usize> {
    match value {
        Expr::Constant(ast::ExprConstant {
            value: ast::Constant::Int(number),
            ..
        }) => usize::try_from(number).ok(),
        Expr::Name(name) => match single_assignment(rewrite, scope, name.id.as_str())? {
            Expr::Constant(ast::ExprConstant {
                value: ast::Constant::Int(number),
                ..
            }) => usize::try_from(number).ok(),
            _ => None,
        },
        _ => None,
    }
}

/// The value of the only assignment to `name` in the scope, or at the top
/// level when the scope has none.
fn single_assignment<'a>(
    rewrite: &ModuleRewrite<'a>,
    scope: &Scope<'a>,
    name: &str,
) -> Option<&'a Expr> {
    match super::optimizer::name_assignments(rewrite, scope, name).as_slice() {
        [(_, value)] => Some(*value),
        _ => None,
    }
}

/// The assignment of `name` a use at `at` sees: the only one, or, when
/// every assignment of it is a statement of the scope's own block (none in a
/// branch or a loop), the last one before `at`.
fn reaching_assignment<'a>(
    rewrite: &ModuleRewrite<'a>,
    scope: &Scope<'a>,
    name: &str,
    at: usize,
) -> Option<(&'a ast::Stmt, &'a Expr)> {
    let assignments = super::optimizer::name_assignments(rewrite, scope, name);
    if let [only] = assignments.as_slice() {
        return Some(*only);
    }
    let in_block =
        |statement: &ast::Stmt| scope.body.iter().any(|top| std::ptr::eq(top, statement));
    if !assignments.iter().all(|(statement, _)| in_block(statement)) {
        return None;
    }
    assignments
        .into_iter()
        .rev()
        .find(|(statement, _)| span(*statement).end <= at)
}

fn report_full_batch(rewrite: &mut ModuleRewrite, fit: &ast::ExprCall, why: String) {
    rewrite.learning_rates.leave_rate_of_fit(span(fit));
    rewrite.diagnose(
        Diagnostic::new(DATASET_NOT_SHARDED, span(fit), why)
            .with_suggestion("train on more rows than one batch holds to gain from more workers"),
    );
}
