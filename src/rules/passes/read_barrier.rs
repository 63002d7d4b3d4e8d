//! A file rank 0 alone writes (now that the rewrite guards the writes) and
//! every rank then reads (`Image.open` of the PNG a helper saved each epoch,
//! `load_model` of a checkpoint) would be read by the others before rank 0
//! has written it: everyone waits for rank 0 before the read.
//!
//! Input: every scope's calls, the catalogue, the effect summaries. Output:
//! a barrier before each such read, with DST129. A read inside a loop of
//! what was written before the loop waits before the loop; one of what the
//! loop itself writes is left alone (a barrier there would have to run as
//! often on every rank), and the checker reports it.

use crate::analysis::effects::{RankZeroWrites, read_before_rank_zero_write};
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

pub const WAIT_BEFORE_READING_BACK: Code = Code::new(
    "DST129",
    "wait-before-reading-back",
    Severity::Info,
    "A file rank 0 alone writes is read by every rank further down: everyone waits for rank 0 before reading it.",
);

pub const CODES: &[Code] = &[WAIT_BEFORE_READING_BACK];

pub fn run(rewrite: &mut ModuleRewrite) {
    let Some(initialised_at) = rewrite.horovod_initialised_at else {
        return;
    };
    let module = rewrite.module;
    let mut waited_before = std::collections::HashSet::new();
    // The writes a barrier of this pass already waits for, per scope: a
    // later read of the same write needs no second one.
    let mut waited_for: Vec<((usize, usize, String), std::ops::Range<usize>)> = Vec::new();
    for (index, scope) in module.scopes.iter().enumerate() {
        for site in &scope.facts.calls {
            let statement = span(site.statement);
            let runs_before_init = scope.function.is_none() && statement.start < initialised_at;
            if runs_before_init
                || waited_before.contains(&statement.start)
                || module.index.is_in_launcher(&statement)
                || !rewrite.owns_its_lines(&statement)
            {
                continue;
            }
            let Some((written, write)) = read_before_rank_zero_write(
                rewrite.analysis,
                module,
                index,
                site,
                RankZeroWrites::AfterTheRewrite,
            ) else {
                continue;
            };
            // A read in a loop waits once, before the outermost loop, for a
            // write made before that loop; a write in the loop would need a
            // barrier as often on every rank, which the checker reports.
            let statement = match site.enclosing_loops.first().map(|looped| span(*looped)) {
                None => statement,
                Some(looped) if written < looped.start => looped,
                Some(_) => continue,
            };
            // Put under rank 0 by this rewrite: rank 0 reads its own write.
            let guarded = rewrite
                .guarded_ranges
                .iter()
                .any(|range| range.start <= statement.start && statement.end <= range.end);
            if waited_before.contains(&statement.start) || guarded {
                continue;
            }
            // A barrier this pass put before an earlier read of the same
            // write covers every later statement of the block holding it.
            let key = (index, written, write.clone());
            if waited_for
                .iter()
                .any(|(waited, block)| *waited == key && block.contains(&statement.start))
            {
                continue;
            }
            let block = statement.start..rest_of_block(scope.body, &statement);
            waited_for.push((key, block));
            let Some(mut barrier) = rewrite
                .plugin
                .download_barrier(&rewrite.context, "read_barrier")
            else {
                return;
            };
            if let Some(last) = barrier.last_mut() {
                last.push_str("  # rank 0 has written what is read next");
            }
            let written_at = module.module.source.line_label(written);
            waited_before.insert(statement.start);
            rewrite.insert_before_statement(&statement, &barrier);
            rewrite.diagnose(Diagnostic::new(
                WAIT_BEFORE_READING_BACK,
                span(site.call),
                format!("this reads what `{write}` ({written_at}) writes on rank 0 only: every rank now waits for rank 0 before reading"),
            ));
        }
    }
}

/// Where the statement list holding `statement` ends: what follows it
/// there runs after it on every path that runs it.
fn rest_of_block(
    body: &[rustpython_parser::ast::Stmt],
    statement: &std::ops::Range<usize>,
) -> usize {
    use rustpython_parser::ast::Stmt;
    if body.iter().any(|own| span(own) == *statement) {
        return body.last().map_or(statement.end, |last| span(last).end);
    }
    let Some(holder) = body.iter().find(|own| {
        let own = span(*own);
        own.start <= statement.start && statement.end <= own.end
    }) else {
        return statement.end;
    };
    let lists: Vec<&[Stmt]> = match holder {
        Stmt::If(node) => vec![&node.body, &node.orelse],
        Stmt::For(node) => vec![&node.body, &node.orelse],
        Stmt::While(node) => vec![&node.body, &node.orelse],
        Stmt::With(node) => vec![&node.body],
        Stmt::Try(node) => {
            let mut lists: Vec<&[Stmt]> = vec![&node.body, &node.orelse, &node.finalbody];
            for handler in &node.handlers {
                let rustpython_parser::ast::ExceptHandler::ExceptHandler(handler) = handler;
                lists.push(&handler.body);
            }
            lists
        }
        _ => Vec::new(),
    };
    lists
        .into_iter()
        .find(|list| {
            list.first().zip(list.last()).is_some_and(|(first, last)| {
                span(first).start <= statement.start && statement.end <= span(last).end
            })
        })
        .map_or(statement.end, |list| rest_of_block(list, statement))
}
