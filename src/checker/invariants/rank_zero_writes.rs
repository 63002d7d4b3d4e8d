//! ## Invariant 7: rank 0 writes; downloads and folders do not race
//!
//! Every worker runs the same script. A checkpoint, export, image or log
//! written by each of them is N processes writing one file; a download made
//! by each races on a cold cache; `os.mkdir` of one folder fails on every
//! rank but the first.
//!
//! **Proven** when every write the checker knows is on rank 0 only (under a
//! rank-0 test, or a path that depends on the rank), and every download made
//! on every rank follows a rank-0 download of the same kind. **Violated**
//! when a known library write or download runs on every rank at the module's
//! level or in the training loop's function. **Unknown** when such a call is
//! in a helper the checker cannot place, or a call's name says it writes and
//! its receiver is unknown.

use rustpython_parser::ast::{CmpOp, Constant, Expr, Stmt};

use crate::analysis::catalogue::{Certainty, Condition, Effect};
use crate::analysis::effects::{self, Known};
use crate::analysis::training::effect_summaries;

use crate::checker::program::ScopedCall;
use crate::checker::{Decision, Invariant, Program, Verdict};
use crate::diagnostics::{Code, Severity};
use crate::python::parse::span;

pub const RANK_ZERO_WRITES: Code = Code::new(
    "DST307",
    "rank-zero-writes",
    Severity::Error,
    "Every write to shared storage happens on rank 0, downloads and folder creation do not race, and reads of what rank 0 wrote come after a barrier.",
);

pub struct RankZeroWrites;

impl Invariant for RankZeroWrites {
    fn code(&self) -> Code {
        RANK_ZERO_WRITES
    }

    fn check(&self, program: &Program) -> Vec<Decision> {
        if !program.uses_horovod() || program.module.index.horovod_init.is_none() {
            return Vec::new();
        }
        let calls = program.calls();
        let mut decisions = shell_writes(program);
        decisions.extend(super::fetched_modules::calls_into_fetched_modules(program));
        for call in calls {
            if program.runs_on_rank_zero_only(call.scope, call.site)
                || effect_summaries::race_is_handled(
                    call.scope.body,
                    &crate::python::parse::span(call.site.statement),
                )
                || program
                    .module
                    .index
                    .is_in_launcher(&crate::python::parse::span(call.site.statement))
                || effect_summaries::arguments_depend_on_rank(
                    program.module,
                    call.scope_index,
                    call.site.call,
                )
            {
                continue;
            }
            if let Some(decision) = reads_standard_input(program, call)
                .or_else(|| read_before_write_is_done(program, call))
                .or_else(|| super::reads_overtaken::read_overtaken_in_loop(program, call))
                .or_else(|| by_catalogue(program, calls, call))
                .or_else(|| through_package_function(program, call))
            {
                decisions.push(decision);
            }
        }
        decisions
    }
}

/// A notebook's shell lines that write files (the catalogue's `shell:`
/// programs, or any line redirecting its output). Proven when the line runs
/// under a rank-0 test at the top level and the next statement is a Horovod
/// collective every rank runs: nothing after it starts before rank 0's
/// command has finished. Otherwise each runs on every worker (an open
/// obligation: the user may run them once before launching). Installers
/// are not listed: a package already installed is found, and a launch
/// presumes its workers' environment is set up.
fn shell_writes(program: &Program) -> Vec<Decision> {
    let catalogue = &program.analysis.catalogue;
    program
        .module
        .module
        .source
        .shell_commands
        .iter()
        .filter(|shell| catalogue.shell_line_writes(&shell.command))
        .filter(|shell| !on_rank_zero_then_barrier(program, &shell.range))
        .map(|shell| {
            let line = program.line(shell.range.start);
            let mut command: String = shell.command.chars().take(60).collect();
            if command.len() < shell.command.len() {
                command.push('…');
            }
            Decision::new(
                RANK_ZERO_WRITES,
                Verdict::Unknown,
                shell.range.clone(),
                format!("line {line} runs `{command}` in a shell on every worker: each writes the same files at once, and the tool does not rewrite shell lines"),
            )
            .with_suggestion("run it once before launching the job, or only on rank 0 (`if hvd.rank() == 0:` around it, after `hvd.init()`) followed by a barrier before the files are read")
        })
        .collect()
}

/// Whether a shell line is the body of a top-level `if` testing for rank 0
/// whose next statement runs a Horovod collective.
fn on_rank_zero_then_barrier(program: &Program, line: &std::ops::Range<usize>) -> bool {
    const COLLECTIVES: &[&str] = &["allreduce", "barrier", "broadcast", "broadcast_object"];
    let body = &program.module.module.body;
    // The block's placeholder statement is shorter than the line it holds.
    let Some(at) = body.iter().position(|statement| {
        let range = span(statement);
        range.start <= line.start && line.start < range.end
    }) else {
        return false;
    };
    let Stmt::If(guard) = &body[at] else {
        return false;
    };
    let bindings = &program.module.module.bindings;
    if !guard.orelse.is_empty() || !crate::analysis::index::is_rank_zero_test(bindings, &guard.test)
    {
        return false;
    }
    let Some(next) = body.get(at + 1) else {
        return false;
    };
    // The collective runs on every rank right away: the next statement is
    // its call, or a `with` holding only it (a TF1 graph's barrier runs in
    // a session of its own).
    let barrier = match next {
        Stmt::Expr(_) => span(next),
        Stmt::With(block) if block.body.len() == 1 => span(&block.body[0]),
        _ => return false,
    };
    program.calls().iter().any(|call| {
        span(call.site.statement) == barrier
            && call
                .horovod_function()
                .is_some_and(|function| COLLECTIVES.contains(&function))
    })
}

/// A call the catalogue knows, or whose name says what it does.
fn by_catalogue(program: &Program, calls: &[ScopedCall], call: &ScopedCall) -> Option<Decision> {
    let known = program.known(call);
    match known {
        Known::Catalogued(entry) => {
            let effect = entry
                .effects
                .iter()
                .find(|effect| effect_summaries::happens_on_storage(effect, call.site.call))?;
            match effect {
                Effect::Downloads {
                    extracts_when,
                    cached,
                    ..
                } => download(program, calls, call, extracts_when.as_ref(), *cached),
                // A summary writer per rank is made a no-op one by the
                // rewrite; summary ops are computed by every rank.
                Effect::WritesSummary => None,
                effect
                    if effects::path_is_per_process(
                        program.analysis,
                        program.module,
                        call.scope_index,
                        call.site.call,
                        effect,
                    ) =>
                {
                    None
                }
                effect => Some(write(program, call, effect)),
            }
        }
        Known::ByName(rule) => {
            if let Effect::CreatesDirectory {
                race_free_when: Some(race_free),
                ..
            } = &rule.effect
                && race_free.on(call.site.call) == Certainty::Holds
            {
                return None;
            }
            let line = program.line(call.range().start);
            let name = call.method().unwrap_or("the call");
            Some(
                Decision::new(
                    RANK_ZERO_WRITES,
                    Verdict::Unknown,
                    call.range(),
                    format!("`{name}` at line {line} is not in the catalogue of library behaviour, and its name says it {}: it runs on every rank as far as the checker can see", rule.effect.verb()),
                )
                .with_suggestion("run it under `if hvd.rank() == 0:`, or describe the call under `library:` in .distribute.yml"),
            )
        }
        Known::Nothing => None,
    }
}

/// A read on every rank of what rank 0 alone wrote earlier in the scope,
/// with no collective between: a rank may read before rank 0 has written.
fn read_before_write_is_done(program: &Program, call: &ScopedCall) -> Option<Decision> {
    let (written, write) = effects::read_before_rank_zero_write(
        program.analysis,
        program.module,
        call.scope_index,
        call.site,
        effects::RankZeroWrites::AsWritten,
    )?;
    let line = program.line(call.range().start);
    let write_line = program.line(written);
    Some(
        Decision::new(
            RANK_ZERO_WRITES,
            Verdict::Unknown,
            call.range(),
            format!("the read at line {line} runs on every rank after `{write}` (line {write_line}) wrote on rank 0 only, with no barrier between: a rank may read before rank 0 has written"),
        )
        .with_suggestion("wait for rank 0 before reading (`hvd.allreduce(0, name=\"read_barrier\")`, or `hvd.join()`)"),
    )
}

/// A call of a package function of another module that writes or
/// downloads on every rank (its summary says where).
fn through_package_function(program: &Program, call: &ScopedCall) -> Option<Decision> {
    let callee = call.callee.as_deref()?;
    // A function of this module: its own calls are checked where they are.
    if callee.starts_with(&format!("{}.", program.module.module.name)) {
        return None;
    }
    let function = effects::function_called(program.analysis, callee);
    let effects = program.analysis.effects.every_rank.get(&function)?;
    let reached = effects.first()?;
    let line = program.line(call.range().start);
    // Rank 0 called it first, and what it does skips what is there.
    let at = call.range().start;
    let first_on_rank_zero = program.calls().iter().any(|earlier| {
        earlier.range().start < at
            && earlier.callee.as_deref() == Some(callee)
            && program.runs_on_rank_zero_only(earlier.scope, earlier.site)
    });
    let in_turn = first_on_rank_zero || called_in_turn(program, call);
    if in_turn && effects.iter().all(|effect| effect.skips_what_is_there) {
        return None;
    }
    Some(
        Decision::new(
            RANK_ZERO_WRITES,
            Verdict::Unknown,
            call.range(),
            format!("the call at line {line} runs on every rank and reaches {}, which {}: the ranks may race on shared storage", reached.describe(), reached.effect.verb()),
        )
        .with_suggestion("make the call on rank 0 first (`if hvd.rank() == 0:`), then a barrier, or give each rank its own path"),
    )
}

/// The call's statement runs on rank 0 first and then on the others: the
/// statement right before it makes every rank but 0 wait in a collective
/// (`if hvd.rank() != 0: <barrier>`), the one right after it releases them
/// from rank 0 (`if hvd.rank() == 0: <barrier>`).
fn called_in_turn(program: &Program, call: &ScopedCall) -> bool {
    let statement = span(call.site.statement);
    let statements = &call.scope.facts.statements;
    let before = statements
        .iter()
        .filter(|other| span(**other).end <= statement.start)
        .max_by_key(|other| (span(**other).end, std::cmp::Reverse(span(**other).start)));
    let after = statements
        .iter()
        .filter(|other| span(**other).start >= statement.end)
        .min_by_key(|other| span(**other).start);
    let waits = |candidate: Option<&&Stmt>, rank_zero: bool| {
        let Some(Stmt::If(test)) = candidate.copied() else {
            return false;
        };
        let tests_rank = is_rank_comparison(program, call, &test.test, rank_zero);
        let mut collective = false;
        crate::analysis::walk::for_each_statement(&test.body, false, &mut |inner| {
            crate::analysis::walk::walk_statement_expressions(inner, &mut |expr| {
                collective |= ["allreduce", "barrier", "join"]
                    .iter()
                    .any(|function| program.calls_horovod_function(call.scope, expr, function));
            });
        });
        tests_rank && collective && test.orelse.is_empty()
    };
    waits(before, false) && waits(after, true)
}

/// `hvd.rank() == 0` (rank 0), or `hvd.rank() != 0` (the others).
fn is_rank_comparison(program: &Program, call: &ScopedCall, test: &Expr, rank_zero: bool) -> bool {
    let Expr::Compare(compare) = test else {
        return false;
    };
    let operator_fits = match compare.ops.as_slice() {
        [CmpOp::Eq] => rank_zero,
        [CmpOp::NotEq] => !rank_zero,
        _ => false,
    };
    let zero = matches!(compare.comparators.as_slice(), [Expr::Constant(constant)]
        if matches!(constant.value, Constant::Int(ref value) if value.to_string() == "0"));
    operator_fits && zero && program.calls_horovod_function(call.scope, &compare.left, "rank")
}

/// `input()` on every rank: ranks other than 0 read end-of-file and stop.
fn reads_standard_input(program: &Program, call: &ScopedCall) -> Option<Decision> {
    // The builtin, or the same imported for Python 2 compatibility
    // (`from builtins import input`); not a function of the user's own.
    let reads = matches!(call.site.call.func.as_ref(), rustpython_parser::ast::Expr::Name(name)
    if matches!(name.id.as_str(), "input" | "raw_input")
        && call.scope.bindings.get(name.id.as_str()).is_none_or(|binding| {
            matches!(
                binding.qualified.as_str(),
                "builtins.input" | "builtins.raw_input" | "six.moves.input" | "past.builtins.raw_input"
            )
        })
        && !program.module.scopes.iter().any(|scope| {
            scope.function.is_some() && scope.parent == Some(0) && scope.name() == name.id.as_str()
        }));
    reads.then(|| {
        let line = program.line(call.range().start);
        Decision::new(
            RANK_ZERO_WRITES,
            Verdict::Violated,
            call.range(),
            format!("`input()` at line {line} reads standard input on every rank: only rank 0 has a terminal, the others read end-of-file and stop"),
        )
        .with_suggestion("read the input on rank 0 and share it with `hvd.broadcast_object`, or take it from an argument")
    })
}

/// A catalogued call on every rank that writes, removes or creates a
/// directory.
fn write(program: &Program, call: &ScopedCall, effect: &Effect) -> Decision {
    let line = program.line(call.range().start);
    let what = call.method().unwrap_or("the call");
    // Certain only when the call's arguments say so, and its path is not
    // one the checker cannot read (it may be the rank's own).
    let certain = match effect {
        Effect::Writes {
            when: Some(condition),
            path,
            ..
        } => {
            condition.on(call.site.call) == Certainty::Holds
                && path
                    .as_ref()
                    .and_then(|path| path.of(call.site.call))
                    .is_some_and(|given| matches!(given, Expr::Constant(_)))
        }
        Effect::CreatesDirectory {
            race_free_when: Some(condition),
            ..
        } => condition.on(call.site.call) == Certainty::Fails,
        _ => true,
    };
    let verdict = if certain && in_the_open(program, call) {
        Verdict::Violated
    } else {
        Verdict::Unknown
    };
    let message = match (verdict, effect) {
        (Verdict::Violated, Effect::CreatesDirectory { .. }) => format!(
            "`{what}` at line {line} creates a directory on every rank: every rank but the first finds it there and fails"
        ),
        (Verdict::Violated, _) => format!(
            "`{what}` at line {line} writes to shared storage on every rank: N processes write the same file"
        ),
        _ => format!(
            "`{what}` at line {line} may write to shared storage, and runs on every rank as far as the checker can see"
        ),
    };
    Decision::new(RANK_ZERO_WRITES, verdict, call.range(), message)
        .with_suggestion("run it under `if hvd.rank() == 0:`, or give each rank its own path")
}

/// A download on every rank with no rank-0 download before it.
fn download(
    program: &Program,
    calls: &[ScopedCall],
    call: &ScopedCall,
    extracts_when: Option<&Condition>,
    cached: bool,
) -> Option<Decision> {
    let callee = call.callee.as_deref()?;
    let line = program.line(call.range().start);
    let at = call.range().start;
    let first_on_rank_zero = calls.iter().any(|earlier| {
        earlier.range().start < at
            && earlier.callee.as_deref() == Some(callee)
            && program.runs_on_rank_zero_only(earlier.scope, earlier.site)
    });
    if first_on_rank_zero {
        let extracts =
            extracts_when.is_some_and(|condition| condition.on(call.site.call) != Certainty::Fails);
        if extracts {
            return Some(Decision::new(
                RANK_ZERO_WRITES,
                Verdict::Unknown,
                call.range(),
                format!("`get_file(..., extract=True)` at line {line} runs again on every rank after rank 0's download, and extracts the archive into the shared folder each time"),
            ).with_suggestion("extract on rank 0 only, and pass the extracted path to the other ranks"));
        }
        if !skips_what_is_there(program, call, cached) {
            return Some(Decision::new(
                RANK_ZERO_WRITES,
                Verdict::Unknown,
                call.range(),
                format!("the download at line {line} runs again on every rank after rank 0's, and writes the same file at once on every rank: it does not skip what is there"),
            ).with_suggestion("download on rank 0 only, or test that the file exists before downloading"));
        }
        return None;
    }
    if skips_what_is_there(program, call, cached)
        && helper_called_on_rank_zero_first(program, calls, call)
    {
        return None;
    }
    // A download in code written with Horovod is the user's choice (Horovod's
    // own Keras examples load MNIST on every rank).
    let verdict = if in_the_open(program, call) && !program.written_with_horovod {
        Verdict::Violated
    } else {
        Verdict::Unknown
    };
    Some(
        Decision::new(
            RANK_ZERO_WRITES,
            verdict,
            call.range(),
            format!("the download at line {line} runs on every rank at once, with no rank-0 download and barrier before it: the ranks race on a cold cache"),
        )
        .with_suggestion("download on rank 0 first (`if hvd.rank() == 0:`), then wait with a barrier, then load on every rank"),
    )
}

/// A cached download, or one under a test that its file is not there yet.
fn skips_what_is_there(program: &Program, call: &ScopedCall, cached: bool) -> bool {
    cached
        || program
            .enclosing_statements(call.scope, call.site)
            .iter()
            .any(|statement| matches!(statement, Stmt::If(node) if effect_summaries::tests_for_files(&node.test)))
}

/// The download is in a function of this module (`maybe_download`) that
/// every caller calls on rank 0 alone, or after a call on rank 0 alone:
/// the others find rank 0's file there.
fn helper_called_on_rank_zero_first(
    program: &Program,
    calls: &[ScopedCall],
    call: &ScopedCall,
) -> bool {
    if call.scope.function.is_none() {
        return false;
    }
    let function = call.scope.qualified_name.as_str();
    let callers: Vec<&ScopedCall> = calls
        .iter()
        .filter(|caller| caller.callee.as_deref() == Some(function))
        .collect();
    let on_rank_zero =
        |caller: &&ScopedCall| program.runs_on_rank_zero_only(caller.scope, caller.site);
    !callers.is_empty()
        && callers.iter().all(|caller| {
            on_rank_zero(caller)
                || callers.iter().any(|earlier| {
                    earlier.range().start < caller.range().start && on_rank_zero(earlier)
                })
        })
}

/// Module level, or the function of a training loop: it runs on every rank.
fn in_the_open(program: &Program, call: &ScopedCall) -> bool {
    program.module.is_top_level_or_trains(call.scope_index) || call.scope.name() == "main"
}
