//! Part of invariant 7 (rank 0 writes, DST307): a loop whose every rank
//! reads storage (`files = os.listdir(train_dir / category)`) that rank 0
//! alone then changes in the same loop (`shutil.move(train_dir / category /
//! name, ...)` under a rank-0 test), with no collective between the read
//! and the write. Nothing holds rank 0 back: it may move the files before
//! another rank has listed them, and that rank then sees fewer, keeps a
//! different count, and takes a different number of passes (and of any
//! barrier in them).

use crate::analysis::effects::{self, RankZeroWrites};
use crate::checker::program::ScopedCall;
use crate::checker::{Decision, Program, Verdict};
use crate::python::parse::span;

use super::rank_zero_writes::RANK_ZERO_WRITES;

/// The decision on a read on every rank in a loop, when rank 0 alone writes
/// a related path after it in that loop with no collective between.
pub(super) fn read_overtaken_in_loop(program: &Program, call: &ScopedCall) -> Option<Decision> {
    let looped = call.site.enclosing_loops.last()?;
    let module = program.module;
    if module.index.is_under_rank_zero(&span(call.site.statement)) {
        return None;
    }
    let read_tokens =
        effects::read_path_tokens(program.analysis, module, call.scope_index, call.site.call)?;
    let within = span(*looped);
    let read_end = span(call.site.statement).end;
    let mut later: Vec<_> = call
        .scope
        .facts
        .calls
        .iter()
        .filter(|site| {
            let at = span(site.statement);
            read_end <= at.start && at.end <= within.end
        })
        .collect();
    later.sort_by_key(|site| span(site.call).start);
    for site in later {
        if effects::is_horovod_collective(site.call) {
            return None;
        }
        let Some(tokens) = effects::rank_zero_write_tokens(
            program.analysis,
            module,
            call.scope_index,
            site,
            RankZeroWrites::AsWritten,
        ) else {
            continue;
        };
        if !effects::paths_related(&read_tokens, &tokens) {
            continue;
        }
        let line = program.line(call.range().start);
        let write_line = program.line(span(site.call).start);
        let write = crate::analysis::walk::dotted_name(&site.call.func).unwrap_or_default();
        return Some(
            Decision::new(
                RANK_ZERO_WRITES,
                Verdict::Unknown,
                call.range(),
                format!("every rank reads at line {line}, and rank 0 alone then changes what it reads with `{write}` (line {write_line}) in the same loop, with no barrier between: rank 0 may get there before the others have read, and they see a different set of files"),
            )
            .with_suggestion("run the whole loop on rank 0 (`if hvd.rank() == 0:` around it), then a barrier (`hvd.allreduce(0, name=\"prepared\")`) before the files are read"),
        );
    }
    None
}
