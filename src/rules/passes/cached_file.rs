//! The cached-file idiom with its read and its write in two branches: `if
//! os.path.isfile(path): <read it> else: <fetch, write it>`. Guarding the
//! write is not enough: a rank that tests while rank 0 is writing reads half
//! a file. Rank 0 runs the whole statement first, the others wait at a
//! barrier, then every rank runs it and finds the file.
//!
//! Input: the `if` statements of the top level (after `hvd.init()`) and of
//! the functions that train. Output: the rank-0 copy and the barrier, with
//! DST122.

use rustpython_parser::ast::Stmt;

use crate::analysis::catalogue::Effect;
use crate::analysis::training::Scope;
use crate::analysis::training::effect_summaries::{happens_on_storage, tests_for_files};
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

pub fn run(rewrite: &mut ModuleRewrite) {
    if rewrite.had_horovod {
        return;
    }
    let Some(initialised_at) = rewrite.horovod_initialised_at else {
        return;
    };
    let module = rewrite.module;
    for (index, scope) in module.scopes.iter().enumerate() {
        if !module.is_top_level_or_trains(index) {
            continue;
        }
        for statement in scope.facts.statements.iter().copied() {
            let Stmt::If(choice) = statement else {
                continue;
            };
            let range = span(statement);
            let before_init = scope.function.is_none() && range.start < initialised_at;
            if before_init || !tests_for_files(&choice.test) || choice.orelse.is_empty() {
                continue;
            }
            let (then_reads, then_writes) = storage_use(rewrite, scope, &choice.body);
            let (else_reads, else_writes) = storage_use(rewrite, scope, &choice.orelse);
            let read_or_written = (then_reads && else_writes) || (then_writes && else_reads);
            let trains_inside = module
                .sites
                .iter()
                .any(|site| site.scope == index && range.contains(&site.range.start));
            if !read_or_written
                || trains_inside
                || rewrite.is_guarded(statement)
                || !rewrite.owns_its_lines(&range)
            {
                continue;
            }
            let Some(barrier) = rewrite
                .plugin
                .download_barrier(&rewrite.context, "download_barrier")
            else {
                return;
            };
            super::downloads::download_on_rank_zero_first(
                rewrite,
                statement,
                &barrier,
                "reads a file in one branch and writes it in the other: rank 0 now runs it first and the others wait, then find the file whole",
            );
        }
    }
}

/// Whether the statements read, and whether they write, storage (a
/// catalogued call that does so, as called).
fn storage_use(rewrite: &ModuleRewrite, scope: &Scope, body: &[Stmt]) -> (bool, bool) {
    let (Some(first), Some(last)) = (body.first(), body.last()) else {
        return (false, false);
    };
    let block = span(first).start..span(last).end;
    let (mut reads, mut writes) = (false, false);
    for site in &scope.facts.calls {
        if !block.contains(&span(site.call).start) {
            continue;
        }
        for effect in rewrite.catalogued_effects(scope, site.call) {
            match effect {
                Effect::Writes { .. } => writes |= happens_on_storage(effect, site.call),
                // A read changes no storage: it happens whenever it is called.
                Effect::Reads { .. } => reads = true,
                _ => {}
            }
        }
    }
    (reads && !writes, writes)
}
