//! Part of invariant 7 (rank 0 writes, DST307): a loop whose every rank
//! reads storage (`files = os.listdir(train_dir / category)`) that rank 0
//! alone then changes in the same loop (`shutil.move(train_dir / category /
//! name, ...)` under a rank-0 test), with no collective between the read
//! and the write. Nothing holds rank 0 back: it may move the files before
//! another rank has listed them, and that rank then sees fewer, keeps a
//! different count, and takes a different number of passes (and of any
//! barrier in them). Only a read whose result decides how often a rank
//! meets the others is such a race: a listing used only by rank 0's own
//! clean-up changes nothing the others do.

use std::collections::HashSet;

use rustpython_parser::ast::{Expr, Stmt};

use crate::analysis::effects::{self, RankZeroWrites};
use crate::analysis::walk::{
    for_each_statement, target_names, walk_expression, walk_statement_expressions,
};
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
    // What was read matters only where it decides how often every rank
    // meets the others (a barrier per listed file).
    let read_into = names_read_into(call, looped);
    if !steers_collectives(program, call, looped, &read_into) {
        return None;
    }
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
        let Some(tokens) = effects::rank_zero_write(
            program.analysis,
            module,
            call.scope_index,
            site,
            RankZeroWrites::AsWritten,
        ) else {
            continue;
        };
        // A path built from the same names, or a file the read listed
        // (`shutil.move(t, ...)` for `t` among the listed images).
        let moves_what_was_listed = site
            .call
            .args
            .iter()
            .chain(site.call.keywords.iter().map(|keyword| &keyword.value))
            .any(|argument| reads_any(argument, &read_into));
        if !effects::paths_related(&read_tokens, &tokens) && !moves_what_was_listed {
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

/// The names what the read returns is bound to in the loop, and names made
/// from them there (`train, val = images[:n], images[n:]`, then `for t in
/// train`).
fn names_read_into(call: &ScopedCall, looped: &Stmt) -> HashSet<String> {
    let holds_read = |expr: &Expr| holds(expr, &span(call.site.call));
    let inside = span(looped);
    let mut read_into: HashSet<String> = HashSet::new();
    loop {
        let before = read_into.len();
        for_each_statement(
            std::slice::from_ref(looped),
            false,
            &mut |statement| match statement {
                Stmt::Assign(node) if holds_read(&node.value) => {
                    for target in &node.targets {
                        read_into.extend(target_names(target).into_iter().map(str::to_string));
                    }
                }
                Stmt::For(node) if holds_read(&node.iter) || reads_any(&node.iter, &read_into) => {
                    let names: Vec<String> = target_names(&node.target)
                        .into_iter()
                        .map(str::to_string)
                        .collect();
                    read_into.extend(names);
                }
                _ => {}
            },
        );
        for assignment in &call.scope.facts.assignments {
            let at = span(assignment.statement);
            if inside.start <= at.start
                && at.end <= inside.end
                && reads_any(assignment.value, &read_into)
            {
                read_into.insert(assignment.name.clone());
            }
        }
        if read_into.len() == before {
            return read_into;
        }
    }
}

/// Whether what the read returns (`read_into`) decides a loop or test, run
/// on every rank, whose body issues a Horovod collective.
fn steers_collectives(
    program: &Program,
    call: &ScopedCall,
    looped: &Stmt,
    read_into: &HashSet<String>,
) -> bool {
    let index = &program.module.index;
    let holds_read = |expr: &Expr| holds(expr, &span(call.site.call));
    let mut steering: Vec<(&Expr, &[Stmt], &Stmt)> = Vec::new();
    for_each_statement(
        std::slice::from_ref(looped),
        false,
        &mut |statement| match statement {
            Stmt::For(node) => steering.push((&node.iter, &node.body, statement)),
            Stmt::While(node) => steering.push((&node.test, &node.body, statement)),
            Stmt::If(node) => steering.push((&node.test, &node.body, statement)),
            _ => {}
        },
    );
    steering.into_iter().any(|(decider, body, statement)| {
        (holds_read(decider) || reads_any(decider, read_into))
            && !index.is_under_rank_zero(&span(statement))
            && issues_collective(body)
    })
}

fn reads_any(expr: &Expr, names: &HashSet<String>) -> bool {
    let mut found = false;
    walk_expression(expr, &mut |inner| {
        found |= matches!(inner, Expr::Name(name) if names.contains(name.id.as_str()));
    });
    found
}

fn issues_collective(body: &[Stmt]) -> bool {
    let mut found = false;
    for_each_statement(body, false, &mut |statement| {
        walk_statement_expressions(statement, &mut |expr| {
            found |= matches!(expr, Expr::Call(call) if effects::is_horovod_collective(call));
        });
    });
    found
}

/// Whether `expr` spans the range `inner`.
fn holds(expr: &Expr, inner: &std::ops::Range<usize>) -> bool {
    let at = span(expr);
    at.start <= inner.start && inner.end <= at.end
}
