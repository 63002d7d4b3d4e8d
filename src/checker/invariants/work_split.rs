//! ## Invariant 4: the work is split exactly once
//!
//! Each worker must run 1/N of the optimizer steps, never 1/N²: a shard cuts
//! the work only when the end of the data stops the loop; when a `take(n)`
//! stops it first, that bound is what must be divided, and a shard there
//! only gives each worker different data.
//!
//! **Violated** when one stream is sharded twice. **Proven** when a dataset chain that is sharded and bounded has a
//! `repeat()` between the two (the bound alone cuts the work), or is not
//! bounded. **Unknown** when a sharded stream is cut by a `take` with no
//! `repeat()` between them: divided, both may cut the work; left whole, the
//! bound may stop each pass before the shard's end, so no worker does less.

use rustpython_parser::ast::Expr;

use super::facts::applies_helper;
use crate::analysis::training::Scope;
use crate::checker::{Decision, Invariant, Program, Verdict};
use crate::diagnostics::{Code, Severity};

pub const WORK_SPLIT: Code = Code::new(
    "DST304",
    "work-split-once",
    Severity::Error,
    "The work of the loop that drives the optimizer steps is split among workers exactly once: a shard where the end of the data stops the loop, or a divided bound where the bound stops it first.",
);

pub struct WorkSplit;

impl Invariant for WorkSplit {
    fn code(&self) -> Code {
        WORK_SPLIT
    }

    fn check(&self, program: &Program) -> Vec<Decision> {
        if !program.uses_horovod() {
            return Vec::new();
        }
        let mut decisions = super::warmup_gates::warmup_gates(program);
        let helpers = super::facts::equal_shard_helpers(program);
        for call in program.calls() {
            // The helper's own `take` cuts its shard to one count.
            let in_helper = call.scope.parent == Some(0) && helpers.contains(&call.scope.name());
            if call.method() != Some("take") || in_helper {
                continue;
            }
            // `take(1)` to look at a batch (a plot, a print) bounds no training.
            if crate::analysis::walk::is_peek_take(call.site.call) {
                continue;
            }
            let methods = chain_methods(call.scope, call.site.call, &helpers);
            let Some(shard) = methods.iter().position(|method| method == "shard") else {
                continue;
            };
            let repeated = methods[shard..].iter().any(|method| method == "repeat");
            let line = program.line(call.range().start);
            let divided = call
                .site
                .call
                .args
                .first()
                .is_some_and(|bound| program.calls_horovod_function(call.scope, bound, "size"));
            let shards = methods.iter().filter(|method| *method == "shard").count();
            if shards > 1 {
                decisions.push(Decision::new(
                    WORK_SPLIT,
                    Verdict::Violated,
                    call.range(),
                    format!("the stream taken at line {line} is sharded {shards} times: each worker gets 1/N^{shards} of the data"),
                ).with_suggestion("shard the stream once, right after its source"));
                continue;
            }
            if repeated {
                continue;
            }
            let message = if divided {
                format!(
                    "the stream is sharded and its `take` at line {line} is divided too, with no `repeat()` between them: both may cut the work, leaving each worker 1/N² of it"
                )
            } else {
                format!(
                    "the sharded stream is cut by the `take` at line {line}, which is left whole: when the bound stops each pass before the shard's end, no worker does less work while the learning rate is scaled"
                )
            };
            decisions.push(
                Decision::new(WORK_SPLIT, Verdict::Unknown, call.range(), message).with_suggestion(
                    "divide the bound that stops the loop and use the shard only for different data (after a `repeat()`), or shard and leave the bound whole when the end of the data stops the loop",
                ),
            );
        }
        decisions.extend(rows_of_a_shard_shared_again(program, &helpers));
        decisions
    }
}

/// A worker's share of rows (`rank_rows(train_features)`: a module
/// function slicing its one parameter by rank and worker count) taken of
/// arrays made from a stream already sharded (`train_features, _ =
/// get_features(train_dataset)` where `train_dataset` is sharded): the rows
/// are this worker's already, and it keeps 1/N² of the data.
fn rows_of_a_shard_shared_again(program: &Program, shard_helpers: &[&str]) -> Vec<Decision> {
    let row_helpers = super::facts::row_share_helpers(program);
    let mut decisions = Vec::new();
    for call in program.calls() {
        let Expr::Name(called) = call.site.call.func.as_ref() else {
            continue;
        };
        let [rows] = call.site.call.args.as_slice() else {
            continue;
        };
        if !row_helpers.contains(&called.id.as_str()) {
            continue;
        }
        if let Some(shard) = sharded_source(
            program,
            call.scope,
            shard_helpers,
            rows,
            call.range().start,
            0,
        ) {
            let line = program.line(call.range().start);
            decisions.push(
                Decision::new(
                    WORK_SPLIT,
                    Verdict::Unknown,
                    call.range(),
                    format!("the rows shared out by rank at line {line} are made from a stream sharded at line {}: they are this worker's already, and sharing them again leaves it 1/N² of the data", program.line(shard.start)),
                )
                .with_suggestion("split the data once: either shard the stream or share out the rows made from it, not both"),
            );
        }
    }
    decisions
}

/// Where `expr` reads a sharded stream, directly or through the last
/// assignment before `at` of a name it reads, a few assignments deep.
fn sharded_source(
    program: &Program,
    scope: &Scope,
    shard_helpers: &[&str],
    expr: &Expr,
    at: usize,
    depth: usize,
) -> Option<std::ops::Range<usize>> {
    let mut found = None;
    crate::analysis::walk::walk_expression(expr, &mut |inner| {
        if found.is_none()
            && let Expr::Call(call) = inner
            && (applies_helper(call, shard_helpers)
                || super::facts::is_shard_by_workers(program, scope, call))
        {
            found = Some(crate::python::parse::span(inner));
        }
    });
    if found.is_some() || depth >= 6 {
        return found;
    }
    let mut names = Vec::new();
    crate::analysis::walk::walk_expression(expr, &mut |inner| {
        if let Expr::Name(name) = inner {
            names.push(name.id.to_string());
        }
    });
    names.iter().find_map(|name| {
        let assignment = scope.facts.last_assignment_before(name, at)?;
        let assigned_at = crate::python::parse::span(assignment.statement).start;
        sharded_source(
            program,
            scope,
            shard_helpers,
            assignment.value,
            assigned_at,
            depth + 1,
        )
    })
}

/// The methods of a call chain, following the name it starts from back
/// through the chains last assigned to it in the scope (`ds = src.shard(...)`,
/// `ds = ds.map(f)`, then `ds.take(n)`), outermost last. An equal-shard
/// helper applied (`.apply(equal_shard)`) counts as a `shard`.
fn chain_methods(
    scope: &Scope,
    call: &rustpython_parser::ast::ExprCall,
    helpers: &[&str],
) -> Vec<String> {
    let expr = Expr::Call(call.clone());
    scope
        .chain_through_names(&expr)
        .iter()
        .map(|(method, call)| match applies_helper(call, helpers) {
            true => String::from("shard"),
            false => method.to_string(),
        })
        .collect()
}
