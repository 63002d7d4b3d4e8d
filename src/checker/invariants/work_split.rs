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
        let mut decisions = Vec::new();
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
        decisions
    }
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
