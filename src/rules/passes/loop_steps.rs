//! Dividing the steps of the loop that drives training among the workers:
//! its step limit (`while step < n`, `if step >= n: break`), else the bound
//! of `range(n)` or `dataset.take(n)`, else (when configured) a shard of the
//! tf.data pipeline it iterates; when none applies, DST101 says that every
//! worker walks all the data.
//!
//! Input: the loop statement a pattern found to drive training. Output: the
//! division edits, or the shard, or the diagnostic.

use std::collections::HashSet;

use rustpython_parser::ast::{self, CmpOp, Constant, Expr, Stmt};

use super::episodes::{steps_an_environment, steps_differ_per_worker};
use super::sharding::{is_shardable, shard_dataset};
use crate::analysis::index::CallSite;
use crate::analysis::training::Scope;
use crate::analysis::walk::{
    dotted_name, for_each_statement, target_names, walk_expression, walk_statement_expressions,
};
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::edit::Edit;
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

pub const DATASET_NOT_SHARDED: Code = Code::new(
    "DST101",
    "dataset-not-sharded",
    Severity::Warning,
    "Every worker iterates the whole dataset and no step count divides the work: no speed-up.",
);

pub const STEPS_DIFFER_PER_WORKER: Code = Code::new(
    "DST126",
    "steps-differ-per-worker",
    Severity::Error,
    "Training steps run once per environment step inside a `while` loop that ends with the episode: each worker would take as many gradient allreduces as its own episodes last, so the module is left as written.",
);

pub const CODES: &[Code] = &[
    DATASET_NOT_SHARDED,
    STEPS_DIFFER_PER_WORKER,
    super::epochs::EPOCHS_DIVIDED,
];

/// How the work of one training loop was split among the workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkSplit {
    /// A bound that stops the loop was divided.
    Divided,
    /// The tf.data pipeline it walks once per epoch was sharded.
    Sharded,
    /// The module already splits it (`.shard(` in the source).
    AlreadySplit,
    /// Nothing splits it; a diagnostic says why.
    NotSplit,
}

/// Splits the work of the loop that drives training, once, in this order:
/// divide the step limit or bound that stops it; else shard the tf.data
/// pipeline it walks (one pass per epoch); else say why it cannot be split.
/// A loop whose iterations all train on the same full batch is not divided:
/// every worker would compute the same gradient.
pub fn divide_loop_steps(rewrite: &mut ModuleRewrite, loop_statement: &Stmt) -> WorkSplit {
    if rewrite.had_horovod {
        // Code that already uses Horovod split its work as it chose; whether
        // its loop trains on a full batch still decides the seeds, as it did
        // when the tool rewrote it.
        rewrite.loops_seen += 1;
        if let Stmt::For(for_loop) = loop_statement
            && range_bound(unwrap_enumerate(&for_loop.iter)).is_some()
            && is_full_batch(rewrite, for_loop)
        {
            rewrite.full_batch_loops += 1;
        }
        return WorkSplit::AlreadySplit;
    }
    let split = split_loop(rewrite, loop_statement);
    if split == WorkSplit::NotSplit {
        rewrite
            .learning_rates
            .leave_rate_of_loop(span(loop_statement));
    }
    if split != WorkSplit::AlreadySplit {
        rewrite.loops_seen += 1;
    }
    split
}

fn split_loop(rewrite: &mut ModuleRewrite, loop_statement: &Stmt) -> WorkSplit {
    let limits = step_limits(loop_statement);
    if counts_steps(loop_statement, &limits)
        && super::same_batches::report_same_batches(rewrite, loop_statement)
    {
        return WorkSplit::NotSplit;
    }
    if !limits.is_empty() {
        for limit in limits {
            divide_bound(rewrite, loop_statement, limit);
        }
        return WorkSplit::Divided;
    }
    let for_loop = match loop_statement {
        Stmt::For(for_loop) => for_loop,
        Stmt::While(while_loop) => {
            if let Some(dataset) = super::end_of_data::dataset_of(rewrite, loop_statement) {
                if rewrite.calls_method("shard") {
                    return WorkSplit::AlreadySplit;
                }
                let scope =
                    &rewrite.module.scopes[rewrite.module.scope_at(span(loop_statement).start)];
                if rewrite.options.shard_datasets && shard_dataset(rewrite, scope, dataset) {
                    return WorkSplit::Sharded;
                }
            }
            let scope = &rewrite.module.scopes[rewrite.module.scope_at(span(loop_statement).start)];
            if super::epochs::divide_epochs_around_walk(rewrite, scope, loop_statement) {
                return WorkSplit::Divided;
            }
            report_unbounded_while(rewrite, loop_statement, while_loop);
            return WorkSplit::NotSplit;
        }
        _ => return WorkSplit::NotSplit,
    };
    let loop_scope = &rewrite.module.scopes[rewrite.module.scope_at(span(loop_statement).start)];
    if super::cursor_share::is_batch_cursor_in(loop_scope, for_loop)
        || super::arrays::zips_arrays(rewrite, loop_scope, &for_loop.iter)
        || (super::cursor_share::counts_sliced_batches(for_loop)
            && !is_full_batch(rewrite, for_loop))
    {
        super::cursor_share::share_by_rank(rewrite, loop_statement, for_loop);
        return WorkSplit::Divided;
    }
    let iterable = unwrap_enumerate(&for_loop.iter);
    if let Some(bound) = range_bound(iterable) {
        if is_full_batch(rewrite, for_loop) {
            report_full_batch(rewrite, loop_statement);
            return WorkSplit::NotSplit;
        }
        if super::epochs::divide_epochs_around_single_pass(
            rewrite,
            loop_scope,
            loop_statement,
            bound,
        ) {
            return WorkSplit::Divided;
        }
        divide_range(rewrite, loop_statement, bound);
        super::cursor_share::offset_by_rank(rewrite, for_loop);
        super::graph_input::shard_graph_input(rewrite);
        return WorkSplit::Divided;
    }
    if let Some(count) = take_count(iterable) {
        divide_bound(rewrite, loop_statement, count);
        return WorkSplit::Divided;
    }
    if rewrite.calls_method("shard") {
        return WorkSplit::AlreadySplit;
    }
    let scope_index = rewrite.module.scope_at(span(loop_statement).start);
    let scope = &rewrite.module.scopes[scope_index];
    if rewrite.options.shard_datasets && shard_dataset(rewrite, scope, iterable) {
        return WorkSplit::Sharded;
    }
    let unshardable = super::sharding::why_not_shardable(rewrite, scope, iterable);
    if super::epochs::divide_epochs_instead(
        rewrite,
        scope,
        loop_statement,
        iterable,
        unshardable.is_some()
            || drawn_per_process(rewrite, scope_index, iterable)
            || super::shuffled_pipeline::shuffled_per_process(rewrite, scope, iterable),
    ) {
        return WorkSplit::Divided;
    }
    let pipeline = super::sharding::is_pipeline(rewrite, scope, iterable);
    let unshardable =
        unshardable.or_else(|| super::shuffled_pipeline::why_left_whole(rewrite, scope, iterable));
    report_unsplit_loop(rewrite, &for_loop.iter, unshardable, pipeline);
    WorkSplit::NotSplit
}

/// Whether the split leaves this loop whole (it changes nothing, so a
/// second run decides the same as the first): a full-batch `range` loop, or
/// a loop over something neither bounded nor shardable.
pub fn leaves_work_whole(rewrite: &ModuleRewrite, loop_statement: &Stmt) -> bool {
    if rewrite.had_horovod {
        return false;
    }
    let limits = step_limits(loop_statement);
    if counts_steps(loop_statement, &limits)
        && super::same_batches::draws_same_batches(rewrite, loop_statement)
    {
        return true;
    }
    if !limits.is_empty() {
        return false;
    }
    let Stmt::For(for_loop) = loop_statement else {
        return false;
    };
    let loop_scope = &rewrite.module.scopes[rewrite.module.scope_at(span(loop_statement).start)];
    if super::cursor_share::is_batch_cursor_in(loop_scope, for_loop)
        || super::arrays::zips_arrays(rewrite, loop_scope, &for_loop.iter)
    {
        return false;
    }
    let iterable = unwrap_enumerate(&for_loop.iter);
    if range_bound(iterable).is_some() {
        return is_full_batch(rewrite, for_loop);
    }
    if take_count(iterable).is_some() || rewrite.calls_method("shard") {
        return false;
    }
    let scope_index = rewrite.module.scope_at(span(loop_statement).start);
    let scope = &rewrite.module.scopes[scope_index];
    let ordered_per_process = super::sharding::why_not_shardable(rewrite, scope, iterable)
        .is_some()
        || drawn_per_process(rewrite, scope_index, iterable)
        || super::shuffled_pipeline::shuffled_per_process(rewrite, scope, iterable);
    !(rewrite.options.shard_datasets && is_shardable(rewrite, scope, iterable))
        && super::epochs::epoch_loop_around(scope, loop_statement, iterable, ordered_per_process)
            .is_none()
}

/// Whether the loop counts steps (a step limit, or `range(...)` that is not a
/// batch cursor of its own) rather than walking a dataset.
fn counts_steps(loop_statement: &Stmt, limits: &[&Expr]) -> bool {
    if !limits.is_empty() {
        return true;
    }
    let Stmt::For(for_loop) = loop_statement else {
        return false;
    };
    !super::cursor_share::is_batch_cursor(for_loop)
        && range_bound(unwrap_enumerate(&for_loop.iter)).is_some()
}

/// `x` in `enumerate(x)`, `enumerate(x, 1)` or `x.enumerate()`; the iterable itself otherwise.
pub(super) fn unwrap_enumerate(iterable: &Expr) -> &Expr {
    if let Expr::Call(call) = iterable
        && matches!(call.func.as_ref(), Expr::Name(name) if name.id.as_str() == "enumerate")
        && let Some(inner) = call.args.first()
    {
        return unwrap_enumerate(inner);
    }
    // A progress bar around what the loop walks (`tqdm(range(n), desc=...)`).
    if let Expr::Call(call) = iterable
        && dotted_name(&call.func).is_some_and(|callee| {
            matches!(callee.rsplit('.').next(), Some("tqdm" | "tqdm_notebook"))
        })
        && let Some(inner) = call.args.first()
    {
        return unwrap_enumerate(inner);
    }
    // A dataset's own `ds.take(n).enumerate()`.
    if let Expr::Call(call) = iterable
        && let Expr::Attribute(attribute) = call.func.as_ref()
        && attribute.attr.as_str() == "enumerate"
        && call.args.len() <= 1
    {
        return &attribute.value;
    }
    iterable
}

/// The arguments of `range(...)` / `xrange(...)` with one to three arguments.
pub(super) fn range_bound(iterable: &Expr) -> Option<&ast::ExprCall> {
    let Expr::Call(call) = iterable else {
        return None;
    };
    let is_range = matches!(call.func.as_ref(), Expr::Name(name) if matches!(name.id.as_str(), "range" | "xrange"));
    // tqdm's `trange(n, desc=...)`: a range with a progress bar.
    let is_progress_range = dotted_name(&call.func)
        .is_some_and(|callee| matches!(callee.rsplit('.').next(), Some("trange" | "tnrange")));
    ((is_range && call.keywords.is_empty() || is_progress_range)
        && (1..=3).contains(&call.args.len()))
    .then_some(call)
}

/// `n` in `dataset.take(n)`.
fn take_count(iterable: &Expr) -> Option<&Expr> {
    let Expr::Call(call) = iterable else {
        return None;
    };
    let is_take = matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "take");
    (is_take && call.args.len() == 1).then(|| &call.args[0])
}

/// Divides `range(n)`, `range(a, b)` and `range(a, b, s)` so that each
/// worker runs 1/N of the iterations: `range(1, n + 1)` becomes
/// `range(1, max(1, n // N) + 1)`; other starts keep their start and run
/// `max(1, (b - a) // N)` past it.
pub(super) fn divide_range(
    rewrite: &mut ModuleRewrite,
    loop_statement: &Stmt,
    range: &ast::ExprCall,
) {
    let (start, stop) = match range.args.as_slice() {
        [stop] => (None, stop),
        [start, stop, ..] => (Some(start), stop),
        [] => return,
    };
    let Some(start) = start.filter(|start| !is_integer_literal(start, 0)) else {
        divide_bound(rewrite, loop_statement, stop);
        return;
    };
    if rewrite.uses_worker_count(stop) {
        return;
    }
    // `range(1, n + 1)`: divide `n`.
    if let Expr::BinOp(sum) = stop
        && sum.op == ast::Operator::Add
        && literal_value(&sum.right).is_some()
        && literal_value(&sum.right) == literal_value(start)
    {
        divide_bound(rewrite, loop_statement, &sum.left);
        return;
    }
    // `range(done, done + n)`: divide `n`.
    if let Expr::BinOp(sum) = stop
        && sum.op == ast::Operator::Add
        && rewrite.expression_text(&sum.left) == rewrite.expression_text(start)
    {
        divide_bound(rewrite, loop_statement, &sum.right);
        return;
    }
    let (start_text, stop_text) = (
        rewrite.expression_text(start),
        rewrite.expression_text(stop),
    );
    let size = rewrite.horovod_call("size");
    let replacement = format!("{start_text} + max(1, ({stop_text} - {start_text}) // {size})");
    rewrite.edit(Edit::replacement(span(stop), replacement));
}

/// Divides a bound, and the running averages of the loop nest that divide
/// by the same bound (`avg_cost += c / total_batch`), so that printed means
/// stay means.
fn divide_bound(rewrite: &mut ModuleRewrite, loop_statement: &Stmt, bound: &Expr) {
    if rewrite.uses_worker_count(bound) {
        return;
    }
    if super::bound_uses::rebind_for_recorded_steps(rewrite, loop_statement, bound) {
        return;
    }
    rewrite.divide_expression(bound);
    super::bound_uses::follow_divided_bound(rewrite, loop_statement, bound);
}

fn literal_value(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Constant(ast::ExprConstant {
            value: Constant::Int(number),
            ..
        }) => Some(number.to_string()),
        _ => None,
    }
}

fn is_integer_literal(expr: &Expr, value: u32) -> bool {
    literal_value(expr) == Some(value.to_string())
}

fn report_unsplit_loop(
    rewrite: &mut ModuleRewrite,
    iterable: &Expr,
    unshardable: Option<String>,
    pipeline: bool,
) {
    let iterable_text = rewrite.expression_text(iterable).to_string();
    let pipeline = pipeline || unshardable.is_some();
    let why = unshardable.map_or_else(
        || "nothing the tool can shard or divide bounds it".to_string(),
        |reason| format!("{reason}, and no step count bounds it"),
    );
    let (size, rank) = (rewrite.horovod_call("size"), rewrite.horovod_call("rank"));
    // A tf.data pipeline is sharded; a Python sequence or generator is cut.
    let suggestion = if pipeline {
        format!(
            "shard the dataset with `.shard({size}, {rank})` before batching, or iterate `.take(<steps> // {size})`"
        )
    } else {
        format!(
            "walk this worker's share of what the loop iterates (`items[{rank}::{size}]`, cut to the same count on every worker), or bound the loop by a step count (`for step in range(<steps>)`), which the tool divides"
        )
    };
    rewrite.diagnose(
        Diagnostic::new(
            DATASET_NOT_SHARDED,
            span(iterable),
            format!("every worker iterates all of `{iterable_text}`: {why}, so more workers bring no speed-up; the learning rate was left as written"),
        )
        .with_suggestion(suggestion),
    );
}

/// A `while` loop nothing the tool can divide bounds. One that steps an
/// environment (`env.step(action)`) ends with its episode, at a different
/// step on each worker: a gradient allreduce per step would pair steps of
/// different episodes, and the worker that finishes first leaves the others
/// waiting on an allreduce that never comes, so the module is refused.
/// Otherwise every worker runs it to its own end: DST101.
fn report_unbounded_while(
    rewrite: &mut ModuleRewrite,
    loop_statement: &Stmt,
    while_loop: &ast::StmtWhile,
) {
    if steps_an_environment(while_loop) {
        rewrite.refuse(steps_differ_per_worker(rewrite, loop_statement));
        return;
    }
    let test = rewrite.expression_text(&while_loop.test).to_string();
    let at = span(while_loop.test.as_ref());
    rewrite.diagnose(
        Diagnostic::new(
            DATASET_NOT_SHARDED,
            at,
            format!("nothing the tool can divide bounds `while {test}:`, so every worker runs it as one process would and more workers bring no speed-up; the learning rate was left as written"),
        )
        .with_suggestion("bound the loop by a step count (`for step in range(<steps>)`, or `while step < <steps>`), which the tool divides among the workers"),
    );
}

fn report_full_batch(rewrite: &mut ModuleRewrite, loop_statement: &Stmt) {
    let Stmt::For(for_loop) = loop_statement else {
        return;
    };
    rewrite.full_batch_loops += 1;
    let iterable = rewrite.expression_text(&for_loop.iter).to_string();
    rewrite.diagnose(
        Diagnostic::new(
            DATASET_NOT_SHARDED,
            span(for_loop.iter.as_ref()),
            format!("each step of `for ... in {iterable}` trains on the same data (all of it, or none): dividing its steps would give each worker fewer passes over that data, not a part of it, so the loop was not divided and the learning rate was left as written"),
        )
        .with_suggestion(format!(
            "train on mini-batches (`.shard({0}, {1})` each worker's part of the data, then batch it) to gain from more workers",
            rewrite.horovod_call("size"),
            rewrite.horovod_call("rank")
        )),
    );
}

/// The step limits a loop stops at, by a counter it increments
/// (`step += 1`): `while step < n:`, and `if step >= n: ... break` in its
/// body (not in nested loops or functions).
fn step_limits(loop_statement: &Stmt) -> Vec<&Expr> {
    let counters = advanced_counters(loop_statement);
    let mut limits = Vec::new();
    let body = match loop_statement {
        Stmt::While(while_loop) => {
            limits.extend(limit_of(&counters, &while_loop.test, false));
            &while_loop.body
        }
        Stmt::For(for_loop) => &for_loop.body,
        _ => return limits,
    };
    let mut tests = Vec::new();
    collect_ifs(body, &mut tests);
    for node in tests {
        if breaks(&node.body)
            && let Some(limit) = limit_of(&counters, &node.test, true)
        {
            limits.push(limit);
        }
    }
    limits
}

/// The counters a loop advances: `i += 1`, or a step count read back
/// (`_, step = sess.run([train_op, global_step])`) whose name says so.
/// `if loss > 1e3: break` or `total += loss` are not step limits.
fn advanced_counters(loop_statement: &Stmt) -> HashSet<String> {
    let names_a_step = |name: &str| {
        let name = name.to_lowercase();
        name.contains("step") || name.contains("iter")
    };
    let mut advanced: HashSet<String> = HashSet::new();
    let loop_only = std::slice::from_ref(loop_statement);
    for_each_statement(loop_only, false, &mut |stmt| match stmt {
        Stmt::AugAssign(assign) => {
            let by_a_count = matches!(
                assign.value.as_ref(),
                Expr::Constant(ast::ExprConstant {
                    value: Constant::Int(_),
                    ..
                })
            );
            let names = target_names(&assign.target).into_iter();
            let counted = names.filter(|name| by_a_count || names_a_step(name));
            advanced.extend(counted.map(String::from));
        }
        Stmt::Assign(assign) => {
            for target in &assign.targets {
                let names = target_names(target).into_iter();
                advanced.extend(names.filter(|name| names_a_step(name)).map(String::from));
            }
        }
        _ => {}
    });
    advanced
}

/// The limit in `counter OP limit`, either way round, when the test is true
/// once the counter reaches the limit (`reached`: >=, >, ==) or while it is
/// below (<, <=, !=).
fn limit_of<'a>(counters: &HashSet<String>, test: &'a Expr, reached: bool) -> Option<&'a Expr> {
    let Expr::Compare(compare) = test else {
        return None;
    };
    let ([operator], [right]) = (compare.ops.as_slice(), compare.comparators.as_slice()) else {
        return None;
    };
    let is_counter =
        |expr: &Expr| matches!(expr, Expr::Name(name) if counters.contains(name.id.as_str()));
    let (limit, counter_on_left) = if is_counter(&compare.left) {
        (right, true)
    } else if is_counter(right) {
        (compare.left.as_ref(), false)
    } else {
        return None;
    };
    let true_at_limit = match (operator, counter_on_left) {
        (CmpOp::GtE | CmpOp::Gt | CmpOp::Eq, true)
        | (CmpOp::LtE | CmpOp::Lt | CmpOp::Eq, false) => true,
        (CmpOp::Lt | CmpOp::LtE | CmpOp::NotEq, true)
        | (CmpOp::Gt | CmpOp::GtE | CmpOp::NotEq, false) => false,
        _ => return None,
    };
    (true_at_limit == reached).then_some(limit)
}

fn breaks(body: &[Stmt]) -> bool {
    body.iter().any(|stmt| match stmt {
        Stmt::Break(_) => true,
        Stmt::If(node) => breaks(&node.body),
        _ => false,
    })
}

/// The `if`s of a loop body, through `with` and `try` but not nested loops.
fn collect_ifs<'a>(body: &'a [Stmt], found: &mut Vec<&'a ast::StmtIf>) {
    for stmt in body {
        match stmt {
            Stmt::If(node) => {
                found.push(node);
                collect_ifs(&node.body, found);
                collect_ifs(&node.orelse, found);
            }
            Stmt::With(node) => collect_ifs(&node.body, found),
            Stmt::Try(node) => collect_ifs(&node.body, found),
            _ => {}
        }
    }
}

/// Callee words that show a loop draws a new batch (or new randomness) each
/// iteration: `next(iterator)`, `mnist.train.next_batch(...)`, `get_batch()`,
/// `np.random.randint(...)`.
const DRAWS_DATA: &[&str] = &[
    "batch",
    "next",
    "sample",
    "random",
    "shuffle",
    "choice",
    "permutation",
];

/// Methods whose call shows a graph-side input pipeline: each `sess.run`
/// draws the next batch with nothing in the loop saying so.
const GRAPH_SIDE_INPUT: &[&str] = &[
    "get_next",
    "next_batch",
    "shuffle_batch",
    "batch",
    "start_queue_runners",
    "make_one_shot_iterator",
    "make_initializable_iterator",
];

/// Whether every iteration of a `range` loop trains on the same data: the
/// body draws no batch (no `next`, `*batch*`, random sampling), indexes
/// nothing by the loop variable, passes it to no call, has no inner loop,
/// and neither the module nor a package function it may call builds a
/// graph-side input pipeline (a helper elsewhere may build the one the
/// graph reads). A call that writes
/// (`save_image(f"{step}.png", image)`) draws nothing.
fn is_full_batch(rewrite: &ModuleRewrite, for_loop: &ast::StmtFor) -> bool {
    let reached = rewrite.analysis.functions_reached_from(rewrite.module);
    let graph_side_input = rewrite
        .module
        .scopes
        .iter()
        .chain(reached.iter().copied())
        .any(|scope| {
            scope.facts.calls.iter().any(|site| {
                matches!(site.call.func.as_ref(), Expr::Attribute(attribute)
                    if GRAPH_SIDE_INPUT.contains(&attribute.attr.as_str()))
                    && !fed_from_python(scope, site)
            })
        });
    if graph_side_input {
        return false;
    }
    let scope_index = rewrite.module.scope_at(span(for_loop).start);
    let scope = &rewrite.module.scopes[scope_index];
    let writes = |call: &ast::ExprCall| {
        let logs_summary = rewrite
            .catalogued_effects(scope, call)
            .iter()
            .any(|effect| matches!(effect, crate::analysis::catalogue::Effect::WritesSummary));
        logs_summary
            || super::shared_writes::writes_shared_files(rewrite, scope, call)
            || super::shared_writes::writes_own_path(rewrite, scope, call)
            || super::shared_writes::calls_a_writing_helper(rewrite, scope, call)
    };
    let mut counters: HashSet<&str> = target_names(&for_loop.target).into_iter().collect();
    // Names computed from a counter in the body (`offset = (step * batch)
    // % n`) move with it: slicing by them draws a new batch each step.
    for_each_statement(&for_loop.body, false, &mut |stmt| {
        if let Stmt::Assign(assign) = stmt
            && mentions_any(&assign.value, &counters)
        {
            for target in &assign.targets {
                counters.extend(target_names(target));
            }
        }
    });
    // An environment stepped in an episode gives each step new experience.
    let mut draws = super::episodes::statements_step_an_environment(&for_loop.body);
    for_each_statement(&for_loop.body, false, &mut |stmt| {
        draws |= inner_loop_may_draw(stmt, &counters);
        // A statement that writes (its path built from the step, perhaps) reads nothing in.
        if matches!(stmt, Stmt::Expr(expression) if matches!(expression.value.as_ref(), Expr::Call(call) if writes(call)))
        {
            return;
        }
        walk_statement_expressions(stmt, &mut |expr| {
            let shown_by_a_function = matches!(expr, Expr::Call(call)
                if super::shown_counters::only_shows_counters(rewrite, call, &|argument| mentions_any(argument, &counters)));
            draws |= (draws_data(expr, &counters) && !shown_by_a_function)
                || matches!(expr, Expr::Call(call) if crate::analysis::effects::package_function_draws(
                    rewrite.analysis,
                    rewrite.module,
                    scope_index,
                    call,
                ));
        });
    });
    !draws
}

/// Whether the loop walks what a package function returns drawing from the
/// process's random state each time (`for xb, yb in shuffle_batch(x, y,
/// size)`, a generator over a permutation): each process walks its own
/// order. A draw under an `if` may be off, and every process would walk
/// one order.
fn drawn_per_process(rewrite: &ModuleRewrite, scope_index: usize, iterable: &Expr) -> bool {
    matches!(iterable, Expr::Call(call) if crate::analysis::effects::package_function_always_draws(
        rewrite.analysis,
        rewrite.module,
        scope_index,
        call,
    ))
}

/// Whether the batch a call draws is fed to the graph from Python
/// (`x_batch, y_batch = mnist.train.next_batch(n)`, then `{X: x_batch}` in
/// a feed): it is no input the graph reads by itself.
fn fed_from_python(scope: &Scope, site: &CallSite) -> bool {
    let Stmt::Assign(assign) = site.statement else {
        return false;
    };
    let names: HashSet<&str> = assign.targets.iter().flat_map(target_names).collect();
    let mut fed = false;
    for statement in scope.facts.statements.iter().copied() {
        walk_statement_expressions(statement, &mut |expr| {
            if let Expr::Dict(dict) = expr {
                fed |= dict.values.iter().any(|value| mentions_any(value, &names));
            }
        });
    }
    fed
}

/// Whether an inner loop may draw the data a step trains on: a `while`, or
/// a `for` whose iterable moves with the step or draws, or whose body runs
/// anything in a session or takes a step. A loop that prints each result of
/// the step (`for j, result in enumerate(results): print(...)`) draws nothing.
fn inner_loop_may_draw(stmt: &Stmt, counters: &HashSet<&str>) -> bool {
    let (iter, body) = match stmt {
        Stmt::For(inner) => (inner.iter.as_ref(), &inner.body),
        Stmt::AsyncFor(inner) => (inner.iter.as_ref(), &inner.body),
        Stmt::While(_) => return true,
        _ => return false,
    };
    let mut draws = false;
    walk_expression(iter, &mut |expr| draws |= draws_data(expr, counters));
    for_each_statement(body, false, &mut |inner| {
        walk_statement_expressions(inner, &mut |expr| {
            draws |= matches!(expr, Expr::Call(call) if matches!(call.func.as_ref(),
                Expr::Attribute(attribute) if matches!(attribute.attr.as_str(),
                    "run" | "eval" | "minimize" | "apply_gradients" | "fit" | "train_on_batch")))
                || matches!(expr, Expr::Call(call) if dotted_name(&call.func).as_deref() == Some("next"));
        });
    });
    draws
}

/// Whether `expr` reads one of `names`.
fn mentions_any(expr: &Expr, names: &HashSet<&str>) -> bool {
    let mut found = false;
    walk_expression(expr, &mut |inner| {
        found |= matches!(inner, Expr::Name(name) if names.contains(name.id.as_str()));
    });
    found
}

fn draws_data(expr: &Expr, counters: &HashSet<&str>) -> bool {
    let mentions_counter = |expr: &Expr| mentions_any(expr, counters);
    match expr {
        Expr::Subscript(subscript) => mentions_counter(&subscript.slice),
        Expr::Call(call) => {
            let callee = dotted_name(&call.func).unwrap_or_default().to_lowercase();
            // Printing, formatting, logging or plotting a message draws nothing.
            let is_print = super::shown_counters::shows(call);
            DRAWS_DATA.iter().any(|word| callee.contains(word))
                || (!is_print && call.args.iter().any(mentions_counter))
        }
        _ => false,
    }
}
