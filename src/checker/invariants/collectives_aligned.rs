//! ## Invariant 8: every rank issues the same collectives
//!
//! Each training step allreduces; a rank that leaves the loop early leaves
//! the others waiting for it forever. A loop that trains must stop at the
//! same step on every rank: on a bound, or on a value the ranks agree on.
//!
//! **Proven** when the loops that train stop on their bound (a `for` over a
//! range or a dataset, a `while` on a step counter or the global step) or
//! break on an allreduced value. **Violated** when a training loop breaks,
//! or a `while` loop stops, on a value each rank computes for itself in the
//! loop (a loss, a reward, an environment's `done`): the workers train on
//! different data, so those values differ, and the first rank to stop
//! leaves the others waiting.
//!
//! A shard is a stop too: a loop that runs to the end of its data stops
//! where the shard ends. **Unknown** when shards may differ by one example
//! (a plain `.shard` of a count the workers do not divide, or an equal-shard
//! helper over a source whose count TensorFlow does not know: records of
//! files, a generator, a list of files), unless the stream is repeated (a
//! bound then stops the loop).

use std::collections::HashSet;

use rustpython_parser::ast::{self, Expr, Stmt};

use super::facts;
use crate::analysis::catalogue::{Effect, ShardLevel};
use crate::analysis::library;
use crate::analysis::walk::{
    for_each_statement, loop_breaks, walk_expression, walk_statement_expressions,
};

use crate::checker::{Decision, Invariant, Program, Verdict};
use crate::diagnostics::{Code, Severity};
use crate::python::parse::span;

pub const COLLECTIVES_ALIGNED: Code = Code::new(
    "DST308",
    "collectives-aligned",
    Severity::Error,
    "Every rank issues the same sequence of collective operations: no training loop stops on a value only one rank knows.",
);

pub struct CollectivesAligned;

/// A call on rank 0 only (under a rank-0 test) of a package function that
/// issues Horovod collectives: rank 0 issues collectives the others never
/// do, and everyone waits forever.
fn collectives_on_rank_zero_only(program: &Program) -> Vec<Decision> {
    let collectives = &program.analysis.effects.collectives;
    program
        .calls()
        .iter()
        .filter(|call| program.runs_on_rank_zero_only(call.scope, call.site))
        .filter_map(|call| {
            let callee = call.callee.as_deref()?;
            let function = crate::analysis::effects::function_called(program.analysis, callee);
            collectives.contains(&function).then(|| {
                let line = program.line(call.range().start);
                Decision::new(
                    COLLECTIVES_ALIGNED,
                    Verdict::Violated,
                    call.range(),
                    format!("the call at line {line} runs on rank 0 only and reaches a Horovod collective in `{function}`: rank 0 waits there for ranks that never come"),
                )
                .with_suggestion("call it on every rank, or move the collective out of what rank 0 runs alone")
            })
        })
        .collect()
}

/// Horovod collectives in an `except` handler (`try: saver.restore(...)`,
/// `except: sess.run(init); sess.run(hvd.broadcast_global_variables(0))`):
/// only the ranks whose `try` failed issue them, and a rank whose `try`
/// succeeded leaves the others waiting.
fn collectives_in_handlers(program: &Program) -> Vec<Decision> {
    const COLLECTIVES: &[&str] = &[
        "allreduce",
        "allgather",
        "broadcast",
        "broadcast_object",
        "broadcast_variables",
        "broadcast_global_variables",
        "barrier",
        "join",
    ];
    program
        .calls()
        .iter()
        .filter(|call| call.horovod_function().is_some_and(|name| COLLECTIVES.contains(&name)))
        .filter(|call| in_except_handler(call.scope.body, call.range()))
        .map(|call| {
            let line = program.line(call.range().start);
            Decision::new(
                COLLECTIVES_ALIGNED,
                Verdict::Unknown,
                call.range(),
                format!("the Horovod collective at line {line} runs in an `except` handler: only ranks whose `try` failed issue it, and the others never join them"),
            )
            .with_suggestion("issue it after the `try` statement, which every rank runs")
        })
        .collect()
}

/// Whether a range lies in the body of an `except` handler of `body`.
fn in_except_handler(body: &[Stmt], range: std::ops::Range<usize>) -> bool {
    body.iter().any(|statement| {
        let statement_range = span(statement);
        if !(statement_range.start <= range.start && range.end <= statement_range.end) {
            return false;
        }
        match statement {
            Stmt::Try(node) => {
                node.handlers.iter().any(|handler| {
                    let rustpython_parser::ast::ExceptHandler::ExceptHandler(handler) = handler;
                    handler.body.iter().any(|inner| {
                        let inner = span(inner);
                        inner.start <= range.start && range.end <= inner.end
                    })
                }) || [&node.body, &node.orelse, &node.finalbody]
                    .iter()
                    .any(|block| in_except_handler(block, range.clone()))
            }
            Stmt::FunctionDef(_) | Stmt::AsyncFunctionDef(_) | Stmt::ClassDef(_) => false,
            other => crate::analysis::walk::nested_bodies(other)
                .into_iter()
                .any(|block| in_except_handler(block, range.clone())),
        }
    })
}

impl Invariant for CollectivesAligned {
    fn code(&self) -> Code {
        COLLECTIVES_ALIGNED
    }

    fn check(&self, program: &Program) -> Vec<Decision> {
        if !program.uses_horovod() {
            return Vec::new();
        }
        let mut on_rank_zero = collectives_on_rank_zero_only(program);
        on_rank_zero.extend(collectives_in_handlers(program));
        if !super::facts::takes_optimizer_steps(program) {
            return on_rank_zero;
        }
        on_rank_zero.extend(self.loop_exits(program));
        on_rank_zero.extend(uneven_shards(program));
        on_rank_zero.extend(super::random_lengths::rows_kept_at_random(program));
        on_rank_zero
    }
}

impl CollectivesAligned {
    /// Training loops that stop on a value each rank decides for itself.
    fn loop_exits(&self, program: &Program) -> Vec<Decision> {
        let train_ops = super::facts::train_op_names(program);
        let step_functions = step_functions(program, &train_ops);
        let mut decisions =
            super::handed_steps::steps_run_elsewhere(program, &train_ops, &step_functions);
        for scope in &program.module.scopes {
            for site in &scope.facts.calls {
                if !takes_a_step(site.call, &train_ops, &step_functions) {
                    continue;
                }
                let as_the_loop_ends = site.enclosing_loops.last().is_some_and(|innermost| {
                    crate::analysis::walk::runs_as_the_loop_ends(innermost, site.statement)
                });
                if !as_the_loop_ends {
                    decisions.extend(super::conditional_steps::step_gated_on_random_gathering(
                        program, scope, site,
                    ));
                }
                for loop_statement in &site.enclosing_loops {
                    // A step as the loop ends (`if done: update(...); break`)
                    // is one per pass of it, however long the pass lasts.
                    if crate::analysis::walk::runs_as_the_loop_ends(loop_statement, site.statement)
                    {
                        continue;
                    }
                    if let Some(decision) = loop_stop(program, scope, loop_statement) {
                        decisions.push(decision);
                    }
                }
            }
        }
        decisions.sort_by_key(|decision| decision.range.start);
        decisions.dedup();
        decisions
    }
}

/// The functions of the module whose call takes an optimizer step: those
/// holding a training site (a tape), and, transitively, those whose body
/// calls one or runs a train op (`def update(self, ...)` running
/// `sess.run([self.train_op, ...])`, called once per environment step).
pub(super) fn step_functions<'p>(program: &'p Program, train_ops: &[String]) -> HashSet<&'p str> {
    let scopes = &program.module.scopes;
    let mut functions: HashSet<&str> = program
        .module
        .sites
        .iter()
        .filter(|site| site.scope != 0)
        .map(|site| scopes[site.scope].name())
        .collect();
    loop {
        let before = functions.len();
        for scope in scopes.iter().skip(1) {
            if !functions.contains(scope.name())
                && scope
                    .facts
                    .calls
                    .iter()
                    .any(|site| takes_a_step(site.call, train_ops, &functions))
            {
                functions.insert(scope.name());
            }
        }
        if functions.len() == before {
            return functions;
        }
    }
}

/// Whether a call takes an optimizer step: a session's `run` of a train op,
/// a step method, or a call of a step function.
pub(super) fn takes_a_step(
    call: &ast::ExprCall,
    train_ops: &[String],
    step_functions: &HashSet<&str>,
) -> bool {
    match call.func.as_ref() {
        // A session's `run` steps only when it runs a train op.
        Expr::Attribute(attribute) if attribute.attr.as_str() == "run" => {
            call.args.first().is_some_and(|fetches| {
                let mut runs_train_op = false;
                walk_expression(fetches, &mut |inner| {
                    runs_train_op |= crate::analysis::walk::dotted_name(inner)
                        .is_some_and(|name| super::facts::is_train_op(&name, train_ops));
                });
                runs_train_op
            })
        }
        Expr::Attribute(attribute) => {
            matches!(
                attribute.attr.as_str(),
                "apply_gradients" | "train_on_batch" | "minimize"
            ) || step_functions.contains(attribute.attr.as_str())
        }
        Expr::Name(name) => step_functions.contains(name.id.as_str()),
        _ => false,
    }
}

/// Shards whose sizes may differ between workers, in streams no `repeat()`
/// makes endless.
fn uneven_shards(program: &Program) -> Vec<Decision> {
    let helpers = facts::equal_shard_helpers(program);
    let mut decisions = Vec::new();
    for call in program.calls() {
        let in_helper = call.scope.parent == Some(0) && helpers.contains(&call.scope.name());
        let plain = facts::is_shard_by_workers(program, call.scope, call.site.call);
        let helped = facts::applies_helper(call.site.call, &helpers);
        if in_helper || !(plain || helped) || methods_after(call).iter().any(|m| m == "repeat") {
            continue;
        }
        let line = program.line(call.range().start);
        let (message, suggestion) = if plain {
            (
                format!(
                    "the shard at line {line} gives workers example counts that differ by one when their number does not divide the data's: a loop that runs to the end of the data then takes a step more on some workers, whose last allreduce waits forever"
                ),
                "cut every shard to one count (`.take(tf.data.experimental.cardinality(dataset) // hvd.size())` after the shard), or repeat the data and stop the loop on a divided step count",
            )
        } else {
            match uncounted_source(program, call) {
                Some(reason) => (
                    format!(
                        "the shard at line {line} is of {reason}, so the shards cannot be cut to one count: a loop that runs to the end of the data may take a step more on some workers, whose last allreduce waits forever"
                    ),
                    "repeat the data and stop the loop on a divided step count (`steps_per_epoch`, or a `take` of the repeated stream)",
                ),
                None => continue,
            }
        };
        decisions.push(
            Decision::new(COLLECTIVES_ALIGNED, Verdict::Unknown, call.range(), message)
                .with_suggestion(suggestion),
        );
    }
    decisions
}

/// What makes the count of the stream an equal-shard helper is applied to
/// unknown to TensorFlow, if anything: its source is not a catalogued one
/// whose count is known, or yields files whose records vary.
fn uncounted_source(
    program: &Program,
    apply: &crate::checker::program::ScopedCall,
) -> Option<String> {
    let Expr::Attribute(attribute) = apply.site.call.func.as_ref() else {
        return None;
    };
    let receiver = span(attribute.value.as_ref());
    let mut source = program.calls().iter().find(|call| call.range() == receiver);
    // Through steps that keep a count TensorFlow knows (`src.map(f).take(n)`).
    if !source.is_some_and(|source| is_data_source(program, source)) {
        source = counted_upstream(program, apply.scope, attribute.value.as_ref()).or(source);
    }
    // One of the splits a source loads at once (`ds_split[1]` of
    // `ds_split, info = tfds.load(..., split=[...])`): judge that source.
    if source.is_none()
        && let Expr::Subscript(subscript) = attribute.value.as_ref()
        && let Expr::Name(splits) = subscript.value.as_ref()
    {
        source = loading_call(program, apply, splits.id.as_str(), receiver.start);
    }
    // Windows of a series are counted when the series is: judge the series.
    if let Some(windows) = source
        && program.has_effect(windows, &Effect::WindowsSeries)
    {
        source = windowed_series(program, windows);
    }
    // The callee, not the whole call: arguments may span lines.
    let shown = match attribute.value.as_ref() {
        Expr::Call(call) => format!("{}(...)", &program.text[span(call.func.as_ref())]),
        other => program.text[span(other)].to_string(),
    };
    let effects = match source {
        Some(source) if program.known(source).entry().is_none() => {
            returned_source_effects(program, source).unwrap_or_default()
        }
        source => source
            .and_then(|source| program.known(source).entry())
            .map(|entry| entry.effects.clone())
            .unwrap_or_default(),
    };
    let data_source = effects.iter().find_map(|effect| match effect {
        Effect::DataSource { level, counted, .. } => Some((*level, *counted)),
        _ => None,
    });
    match data_source {
        Some((ShardLevel::Files, _)) => Some(String::from(
            "a list of files, whose record counts may differ",
        )),
        Some((_, false)) => Some(format!("`{shown}`, whose count TensorFlow does not know")),
        Some(_) => None,
        None => Some(format!("`{shown}`, whose count the checker cannot see")),
    }
}

/// The call whose result `name` was last bound to before `before`, in the
/// scope of `apply` or at the top level.
fn loading_call<'p>(
    program: &'p Program,
    apply: &crate::checker::program::ScopedCall,
    name: &str,
    before: usize,
) -> Option<&'p crate::checker::program::ScopedCall<'p, 'p>> {
    let top_level = &program.module.scopes[0];
    let value = [apply.scope, top_level].into_iter().find_map(|scope| {
        scope
            .facts
            .assignment_before(name, before)
            .map(|assignment| assignment.value)
    })?;
    let Expr::Call(call) = value else {
        return None;
    };
    program
        .calls()
        .iter()
        .find(|candidate| candidate.range() == span(call))
}

/// The effects of the data source of the pipeline a package function
/// returns (`prepare_dataset(paths)` returning `from_tensor_slices(paths)
/// .map(f).batch(n)`), when every step after the source keeps its count.
fn returned_source_effects(
    program: &Program,
    call: &crate::checker::program::ScopedCall,
) -> Option<Vec<Effect>> {
    let (module, index, returned) =
        program
            .analysis
            .returned_by_call(program.module, call.scope, call.site.call)?;
    let scope = &module.scopes[index];
    let chain = scope.chain_through_names(returned);
    chain
        .iter()
        .enumerate()
        .find_map(|(position, (_, source))| {
            let known = crate::analysis::effects::of_call(program.analysis, module, index, source);
            let effects = &known.entry()?.effects;
            let is_source = effects
                .iter()
                .any(|effect| matches!(effect, Effect::DataSource { .. }));
            let keeps_count = chain[position + 1..]
                .iter()
                .all(|(method, _)| library::COUNT_KEEPING_METHODS.contains(method));
            (is_source && keeps_count).then(|| effects.clone())
        })
}

fn is_data_source(program: &Program, call: &crate::checker::program::ScopedCall) -> bool {
    program.known(call).entry().is_some_and(|entry| {
        entry
            .effects
            .iter()
            .any(|effect| matches!(effect, Effect::DataSource { .. }))
    })
}

/// The data source a stream comes from when every step after it keeps a
/// count TensorFlow knows (`map`, `take`, `cache`, `prefetch`), followed
/// back through the names the scope assigned it to.
fn counted_upstream<'p>(
    program: &'p Program,
    scope: &crate::analysis::training::Scope,
    stream: &Expr,
) -> Option<&'p crate::checker::program::ScopedCall<'p, 'p>> {
    let chain = scope.chain_through_names(stream);
    let (position, source) = chain.iter().enumerate().find_map(|(position, (_, call))| {
        program
            .calls()
            .iter()
            .find(|candidate| {
                candidate.range() == span(*call) && is_data_source(program, candidate)
            })
            .map(|source| (position, source))
    })?;
    let keeps_count = chain[position + 1..]
        .iter()
        .all(|(method, _)| library::COUNT_KEEPING_METHODS.contains(method));
    keeps_count.then_some(source)
}

/// The source call of the series a `.window(...)` call cuts: its receiver,
/// or the value last assigned before it to the name it reads.
fn windowed_series<'p>(
    program: &'p Program,
    windows: &crate::checker::program::ScopedCall,
) -> Option<&'p crate::checker::program::ScopedCall<'p, 'p>> {
    let Expr::Attribute(attribute) = windows.site.call.func.as_ref() else {
        return None;
    };
    let series = match attribute.value.as_ref() {
        Expr::Name(name) => windows
            .scope
            .facts
            .assignment_before(name.id.as_str(), windows.range().start)
            .map(|assignment| span(assignment.value))?,
        other => span(other),
    };
    program.calls().iter().find(|call| call.range() == series)
}

/// The methods called on a stream after `call`: the rest of its chain, and
/// the chains of later statements that continue from the name it is
/// assigned to (`ds = src.shard(...)`, then `ds = ds.repeat()` or
/// `for x in ds.repeat():`).
fn methods_after(call: &crate::checker::program::ScopedCall) -> Vec<String> {
    let target = span(call.site.call);
    let mut methods = Vec::new();
    walk_statement_expressions(call.site.statement, &mut |expr| {
        let chain = facts::method_chain(expr);
        if let Some(at) = chain.iter().position(|(_, link)| span(*link) == target) {
            let after: Vec<String> = chain[at + 1..].iter().map(|(m, _)| m.to_string()).collect();
            if after.len() > methods.len() {
                methods = after;
            }
        }
    });
    let Stmt::Assign(assign) = call.site.statement else {
        return methods;
    };
    let [Expr::Name(name)] = assign.targets.as_slice() else {
        return methods;
    };
    let assigned_at = span(call.site.statement).end;
    for statement in &call.scope.facts.statements {
        if span(*statement).start < assigned_at {
            continue;
        }
        walk_statement_expressions(statement, &mut |expr| {
            if matches!(facts::chain_root(expr), Expr::Name(root) if root.id == name.id) {
                methods.extend(facts::method_chain(expr).iter().map(|(m, _)| m.to_string()));
            }
        });
    }
    methods
}

/// A rank-local stop of a training loop: a `break` (of this loop), or a
/// `while` test that is neither a counter nor an agreed value.
fn loop_stop(
    program: &Program,
    scope: &crate::analysis::training::Scope,
    loop_statement: &Stmt,
) -> Option<Decision> {
    let line = program.line(span(loop_statement).start);
    let body: &[Stmt] = match loop_statement {
        Stmt::For(node) => &node.body,
        Stmt::While(node) => &node.body,
        Stmt::AsyncFor(node) => &node.body,
        _ => return None,
    };
    for (brk, condition) in loop_breaks(body) {
        if !condition.is_some_and(|test| decided_locally(program, scope, loop_statement, test)) {
            continue;
        }
        return Some(Decision::new(
            COLLECTIVES_ALIGNED,
            Verdict::Violated,
            span(brk),
            format!("the training loop at line {line} can leave at line {} on a condition each rank decides for itself: if the ranks disagree, the others wait forever in the next allreduce", program.line(span(brk).start)),
        ).with_suggestion("stop on a value the ranks agree on: average the metric with `hvd.allreduce` before testing it"));
    }
    if let Stmt::For(node) = loop_statement
        && matches!(node.iter.as_ref(), Expr::Call(call)
            if matches!(call.func.as_ref(), Expr::Name(name) if name.id.as_str() == "range"))
        && let Some(draw) = drawn_at_random(program, scope, &node.iter)
    {
        return Some(Decision::new(
            COLLECTIVES_ALIGNED,
            Verdict::Unknown,
            span(node.iter.as_ref()),
            format!("the training loop at line {line} takes its count from a random draw (line {}), which each rank makes for itself: ranks that draw differently take different numbers of steps, and the others wait forever in the next allreduce", program.line(draw.start)),
        ).with_suggestion("draw the value once on rank 0 and broadcast it, or draw it from a generator seeded the same on every rank"));
    }
    if let Stmt::For(node) = loop_statement
        && let Some(decision) =
            super::random_lengths::loop_over_randomly_filtered(program, scope, &node.iter, line)
    {
        return Some(decision);
    }
    if let Stmt::For(node) = loop_statement
        && let Some((append, stopped)) = collected_until_a_local_stop(program, scope, &node.iter)
    {
        return Some(Decision::new(
            COLLECTIVES_ALIGNED,
            Verdict::Unknown,
            span(node.iter.as_ref()),
            format!("the training loop at line {line} runs once per item collected at line {} by the loop at line {}, which stops on a condition each rank decides for itself (an episode's end): the ranks collect different numbers of items and take different numbers of steps, and the others wait forever in the next allreduce", program.line(append), program.line(stopped)),
        ).with_suggestion("take a fixed number of steps per pass on every rank (a count the ranks agree on), or train on a fixed-size batch drawn from what was collected"));
    }
    if let Stmt::While(node) = loop_statement
        && decided_locally(program, scope, loop_statement, &node.test)
    {
        return Some(Decision::new(
            COLLECTIVES_ALIGNED,
            Verdict::Violated,
            span(node.test.as_ref()),
            format!("the training loop at line {line} runs while `{}` holds, which each rank may decide for itself: if the ranks disagree, the others wait forever in the next allreduce", &program.text[span(node.test.as_ref())]),
        ).with_suggestion("bound the loop by a step count, or test a value averaged with `hvd.allreduce`"));
    }
    None
}

/// Where the list a `for` loop walks (`episode`, `enumerate(episode)`,
/// `reversed(episode)`) is appended to inside an earlier loop of the scope
/// that stops on a rank-local condition (`if done: break`): the append's
/// offset and that loop's.
fn collected_until_a_local_stop(
    program: &Program,
    scope: &crate::analysis::training::Scope,
    iterable: &Expr,
) -> Option<(usize, usize)> {
    let mut walked = iterable;
    while let Expr::Call(call) = walked
        && matches!(call.func.as_ref(), Expr::Name(name) if matches!(name.id.as_str(), "enumerate" | "reversed" | "list"))
        && let [inner] = call.args.as_slice()
    {
        walked = inner;
    }
    let Expr::Name(list) = walked else {
        return None;
    };
    let mut found = None;
    for_each_statement(scope.body, false, &mut |statement| {
        if found.is_some() || span(statement).start >= span(iterable).start {
            return;
        }
        let (body, test) = match statement {
            Stmt::For(node) => (&node.body, None),
            Stmt::While(node) => (&node.body, Some(node.test.as_ref())),
            _ => return,
        };
        let stops_locally = test
            .is_some_and(|test| decided_locally(program, scope, statement, test))
            || loop_breaks(body).into_iter().any(|(_, condition)| {
                condition.is_some_and(|test| decided_locally(program, scope, statement, test))
            });
        if !stops_locally {
            return;
        }
        let mut append = None;
        for_each_statement(std::slice::from_ref(statement), false, &mut |inner| {
            walk_statement_expressions(inner, &mut |expr| {
                if let Expr::Call(call) = expr
                    && let Expr::Attribute(attribute) = call.func.as_ref()
                    && matches!(attribute.attr.as_str(), "append" | "extend")
                    && matches!(attribute.value.as_ref(), Expr::Name(name) if name.id == list.id)
                {
                    append.get_or_insert(span(expr).start);
                }
            });
        });
        found = append.map(|append| (append, span(statement).start));
    });
    found
}

/// Where a loop's iterable gets a value drawn at random, through the last
/// assignments before it of the names it reads (`batch_size =
/// np.random.randint(1, 100)`, then `n_batches = m // batch_size`, then
/// `range(n_batches)`).
fn drawn_at_random(
    program: &Program,
    scope: &crate::analysis::training::Scope,
    iterable: &Expr,
) -> Option<std::ops::Range<usize>> {
    let draws = random_draws(program, scope);
    drawn_into(scope, &draws, iterable, span(iterable).start, 0)
}

/// Where the calls of `scope` that draw at random are.
pub(super) fn random_draws(
    program: &Program,
    scope: &crate::analysis::training::Scope,
) -> Vec<std::ops::Range<usize>> {
    program
        .calls()
        .iter()
        .filter(|call| std::ptr::eq(call.scope, scope))
        .filter(|call| call.callee.as_deref().is_some_and(library::draws_at_random))
        .map(|call| call.range())
        .collect()
}

/// A draw `expr` reads, directly or through the last assignment before `at`
/// of a name it reads, a few assignments deep.
fn drawn_into(
    scope: &crate::analysis::training::Scope,
    draws: &[std::ops::Range<usize>],
    expr: &Expr,
    at: usize,
    depth: usize,
) -> Option<std::ops::Range<usize>> {
    let within = span(expr);
    if let Some(draw) = draws
        .iter()
        .find(|draw| within.start <= draw.start && draw.end <= within.end)
    {
        return Some(draw.clone());
    }
    if depth > 6 {
        return None;
    }
    // The size of drawn data is not drawn: `len(xs)`, `xs.shape` count the
    // same on every rank.
    let mut sized = Vec::new();
    walk_expression(expr, &mut |inner| match inner {
        Expr::Call(call) if matches!(call.func.as_ref(), Expr::Name(name) if name.id.as_str() == "len") =>
        {
            sized.extend(call.args.iter().map(span));
        }
        Expr::Attribute(attribute) if matches!(attribute.attr.as_str(), "shape" | "size") => {
            sized.push(span(attribute.value.as_ref()));
        }
        _ => {}
    });
    let mut names = Vec::new();
    walk_expression(expr, &mut |inner| {
        if let Expr::Name(name) = inner
            && !sized
                .iter()
                .any(|outer| outer.start <= span(inner).start && span(inner).end <= outer.end)
        {
            names.push(name.id.to_string());
        }
    });
    names.iter().find_map(|name| {
        let assignment = scope.facts.last_assignment_before(name, at)?;
        let assigned_at = span(assignment.statement).start;
        drawn_into(scope, draws, assignment.value, assigned_at, depth + 1)
    })
}

/// Whether a test reads a value each rank computes for itself in the loop:
/// a bare name assigned there from a call (a session's result, an
/// environment's step, a loss), not a counter, a setting (`args.max_steps`),
/// or a value the ranks agree on.
fn decided_locally(
    program: &Program,
    scope: &crate::analysis::training::Scope,
    loop_statement: &Stmt,
    test: &Expr,
) -> bool {
    if agreed(program, scope, test) {
        return false;
    }
    let mut receivers = Vec::new();
    walk_expression(test, &mut |inner| {
        if let Expr::Attribute(attribute) = inner {
            receivers.push(span(attribute.value.as_ref()));
        }
    });
    let mut names = Vec::new();
    let mut coordinated = false;
    walk_expression(test, &mut |inner| match inner {
        Expr::Name(name) if !receivers.contains(&span(inner)) => names.push(name.id.to_string()),
        Expr::Call(call) => {
            if let Expr::Attribute(attribute) = call.func.as_ref()
                && attribute.attr.as_str() == "should_stop"
            {
                coordinated = true;
            }
        }
        _ => {}
    });
    if coordinated {
        return false;
    }
    let per_rank = computed_per_rank(program, scope, loop_statement);
    names.iter().any(|name| per_rank.contains(name))
}

/// The names a loop assigns from a value each rank computes for itself: a
/// call's result (a session's, an environment's step, a loss), or
/// arithmetic of such a name (`episode_reward += reward`, then
/// `running_reward = 0.05 * episode_reward + 0.95 * running_reward`).
fn computed_per_rank(
    program: &Program,
    scope: &crate::analysis::training::Scope,
    loop_statement: &Stmt,
) -> HashSet<String> {
    let inside = span(loop_statement);
    let in_loop: Vec<_> = scope
        .facts
        .assignments
        .iter()
        .filter(|assignment| {
            let at = span(assignment.statement);
            inside.start <= at.start && at.end <= inside.end
        })
        .collect();
    let mut per_rank: HashSet<String> = in_loop
        .iter()
        .filter(|assignment| {
            computed_by_a_call(assignment.value) && !fetches_global_step(program, scope, assignment)
        })
        .map(|assignment| assignment.name.clone())
        .collect();
    // `episode_reward += reward` too, which the scope's assignments leave out.
    let mut updates: Vec<(String, &Expr)> = in_loop
        .iter()
        .map(|assignment| (assignment.name.clone(), assignment.value))
        .collect();
    for_each_statement(
        std::slice::from_ref(loop_statement),
        false,
        &mut |statement| {
            if let Stmt::AugAssign(node) = statement
                && let Expr::Name(target) = node.target.as_ref()
            {
                updates.push((target.id.to_string(), node.value.as_ref()));
            }
        },
    );
    loop {
        let before = per_rank.len();
        for (name, value) in &updates {
            let mut reads_per_rank = false;
            walk_expression(value, &mut |inner| {
                reads_per_rank |=
                    matches!(inner, Expr::Name(name) if per_rank.contains(name.id.as_str()));
            });
            if reads_per_rank {
                per_rank.insert(name.clone());
            }
        }
        if per_rank.len() == before {
            return per_rank;
        }
    }
}

/// `_, step = sess.run([train_op, global_step])`: the name receives the
/// global step, which every rank advances once per step (a counter).
fn fetches_global_step(
    program: &Program,
    scope: &crate::analysis::training::Scope,
    assignment: &crate::analysis::index::Assignment,
) -> bool {
    let Expr::Call(call) = assignment.value else {
        return false;
    };
    let Some(fetches) = call.args.first() else {
        return false;
    };
    let fetched = match (assignment.statement, fetches) {
        (Stmt::Assign(assign), Expr::List(list)) => {
            let position = assign.targets.iter().find_map(|target| {
                match target {
                Expr::Tuple(tuple) => tuple.elts.iter().position(|element| {
                    matches!(element, Expr::Name(name) if name.id.as_str() == assignment.name)
                }),
                _ => None,
            }
            });
            position.and_then(|position| list.elts.get(position))
        }
        (_, single) => Some(single),
    };
    let Some(Expr::Name(fetched)) = fetched else {
        return false;
    };
    [scope, &program.module.scopes[0]].iter().any(|scope| {
        scope.facts.assignments.iter().any(|source| {
            source.name == fetched.id.as_str()
                && source
                    .callee
                    .as_deref()
                    .is_some_and(|callee| callee.ends_with("global_step"))
        })
    })
}

/// A value computed by a call other than a conversion of a setting.
fn computed_by_a_call(value: &Expr) -> bool {
    let mut found = false;
    walk_expression(value, &mut |inner| {
        if let Expr::Call(call) = inner {
            let conversion = matches!(call.func.as_ref(), Expr::Name(name)
                if matches!(name.id.as_str(), "int" | "float" | "len" | "min" | "max" | "round" | "range" | "bool" | "str"));
            found |= !conversion;
        }
    });
    found
}

/// A test reading a value the ranks agree on (an allreduced or broadcast one).
fn agreed(program: &Program, scope: &crate::analysis::training::Scope, test: &Expr) -> bool {
    if program.calls_horovod_function(scope, test, "allreduce")
        || program.calls_horovod_function(scope, test, "broadcast")
    {
        return true;
    }
    let mut names = Vec::new();
    walk_expression(test, &mut |inner| {
        if let Expr::Name(name) = inner {
            names.push(name.id.to_string());
        }
    });
    let mut agreed_names = false;
    for_each_statement(scope.body, false, &mut |statement| {
        if let Stmt::Assign(assign) = statement
            && assign.targets.iter().any(
                |target| matches!(target, Expr::Name(name) if names.iter().any(|known| known == name.id.as_str())),
            )
            && (program.calls_horovod_function(scope, &assign.value, "allreduce")
                || program.calls_horovod_function(scope, &assign.value, "broadcast"))
        {
            agreed_names = true;
        }
    });
    agreed_names
}
