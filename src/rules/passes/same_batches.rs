//! Step loops left whole because every worker would draw the same batches,
//! whatever the steps: batches cut at a cursor the program advances itself
//! (a `global` index, an attribute of `self`, a name the loop advances), or
//! read from a TF1 input queue that yields one order in every process.
//! Dividing such a loop would only give each worker the first 1/N of the
//! batches one process trains on; it is left whole, with the learning rate
//! as written, and DST101 says why.

use rustpython_parser::ast::{self, Stmt};

use super::loop_steps::DATASET_NOT_SHARDED;
use crate::analysis::cursors;
use crate::analysis::walk::dotted_name;
use crate::diagnostics::Diagnostic;
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

/// Why the loop's batches are the same in every worker, when the tool can
/// tell, said with DST101. Returns whether it said so.
pub fn report_same_batches(rewrite: &mut ModuleRewrite, loop_statement: &Stmt) -> bool {
    if let Some(cursor) = cursor_of(rewrite, loop_statement) {
        report_cursor(rewrite, loop_statement, &cursor);
        return true;
    }
    if let Some(queue) = unshuffled_queue(rewrite) {
        report_unshuffled_queue(rewrite, loop_statement, queue);
        return true;
    }
    false
}

/// Whether the loop's batches are the same in every worker (as above).
pub fn draws_same_batches(rewrite: &ModuleRewrite, loop_statement: &Stmt) -> bool {
    cursor_of(rewrite, loop_statement).is_some() || unshuffled_queue(rewrite).is_some()
}

/// The cursor the loop's batches are cut at: kept in module or object
/// state by a function the loop calls, or advanced by the loop itself.
fn cursor_of(rewrite: &ModuleRewrite, loop_statement: &Stmt) -> Option<cursors::Cursor> {
    cursors::state_cursor_of_loop(rewrite.module, loop_statement)
        .or_else(|| cursors::loop_cursor(loop_statement))
}

/// A TF1 input queue the catalogue says yields one order in every process
/// (`string_input_producer(files, shuffle=False)`, or seeded), with no
/// `shuffle_batch` after it: dividing the steps would give every worker the
/// same first batches.
fn unshuffled_queue<'m>(rewrite: &ModuleRewrite<'m>) -> Option<&'m ast::ExprCall> {
    use crate::analysis::catalogue::{Certainty, Effect};
    let module = rewrite.module;
    let shuffles_batches = module.scopes.iter().any(|scope| {
        scope.facts.calls.iter().any(|site| {
            dotted_name(&site.call.func).is_some_and(|name| {
                name.ends_with("shuffle_batch") || name.ends_with("shuffle_batch_join")
            })
        })
    });
    if shuffles_batches {
        return None;
    }
    module.scopes.iter().find_map(|scope| {
        scope.facts.calls.iter().map(|site| site.call).find(|call| {
            rewrite.catalogued_effects(scope, call).iter().any(|effect| {
                matches!(effect, Effect::DataSource { pipeline: false, shuffles: Some(shuffling), .. }
                    if shuffling.per_process(call) == Certainty::Fails)
            })
        })
    })
}

fn report_unshuffled_queue(
    rewrite: &mut ModuleRewrite,
    loop_statement: &Stmt,
    queue: &ast::ExprCall,
) {
    let at = match loop_statement {
        Stmt::For(for_loop) => span(for_loop.iter.as_ref()),
        other => span(other),
    };
    let line = rewrite.module.module.source.line_label(span(queue).start);
    let source = rewrite.expression_text(&queue.func).to_string();
    rewrite.diagnose(
        Diagnostic::new(
            DATASET_NOT_SHARDED,
            at,
            format!("the batches come from `{source}` ({line}), an input queue that yields the same order in every worker (it does not shuffle, or is seeded): the loop was not divided, so each worker trains on the same batches as one process would, and the learning rate was left as written"),
        )
        .with_suggestion(format!(
            "give each worker its own files (`files[{rank}::{size}]`) when there are at least as many files as workers, or read the data with tf.data and `.shard({size}, {rank})`",
            size = rewrite.horovod_call("size"),
            rank = rewrite.horovod_call("rank")
        )),
    );
}

/// The steps of a loop whose batches a cursor cuts are left whole: every
/// worker would advance the cursor through the same positions.
fn report_cursor(rewrite: &mut ModuleRewrite, loop_statement: &Stmt, cursor: &cursors::Cursor) {
    let at = match loop_statement {
        Stmt::For(for_loop) => span(for_loop.iter.as_ref()),
        other => span(other),
    };
    let line = rewrite.module.module.source.line_label(cursor.cut.start);
    rewrite.diagnose(
        Diagnostic::new(
            DATASET_NOT_SHARDED,
            at,
            format!("the batches are cut at `{}` ({line}), a cursor that every worker would advance through the same positions: the loop was not divided, so each worker trains on the same batches as one process would, and the learning rate was left as written", cursor.name),
        )
        .with_suggestion(format!(
            "start each worker's cursor at its own offset and advance it by {size} batches, or shard the data with `.shard({size}, {rank})`, to gain from more workers",
            size = rewrite.horovod_call("size"),
            rank = rewrite.horovod_call("rank")
        )),
    );
}
