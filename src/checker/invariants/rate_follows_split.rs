//! ## Invariant 5: the learning rate is scaled only where the work is split
//!
//! Multiplying the rate by `hvd.size()` is right when each step averages N
//! workers' batches and the job runs 1/N of the steps. Scaled while every
//! worker still walks all the data, the job trains at N times the rate.
//!
//! **Proven** when a rate is scaled and the program divides a bound or
//! shards its data (here or in another module of the package), or when
//! nothing is scaled. **Violated** when a rate is scaled and no loop's work
//! is split anywhere in the package. **Unknown** when a person scaled the
//! rate in code written with Horovod and the program trains on synthetic
//! tensors: weak scaling may be what they want (Horovod's benchmarks).
//!
//! A schedule's step count divided with the work is the same fact: each
//! worker takes 1/N of the steps. **Unknown** when that count is divided
//! for the schedule but passed whole to another call (a model's
//! `total_steps=` for a ramp of its own): whatever counts steps there runs
//! over N times the steps each worker takes.

use rustpython_parser::ast::Expr;

use super::facts::SplitFacts;
use crate::analysis::walk::dotted_name;
use crate::checker::{Decision, Invariant, Program, Verdict};
use crate::diagnostics::{Code, Severity};
use crate::python::parse::span;

pub const RATE_FOLLOWS_SPLIT: Code = Code::new(
    "DST305",
    "rate-follows-split",
    Severity::Error,
    "A learning rate is multiplied by `hvd.size()` only when the loop its optimizer drives is split among workers.",
);

pub struct RateFollowsSplit;

impl Invariant for RateFollowsSplit {
    fn code(&self) -> Code {
        RATE_FOLLOWS_SPLIT
    }

    fn check(&self, program: &Program) -> Vec<Decision> {
        if !program.uses_horovod() {
            return Vec::new();
        }
        let facts = SplitFacts::of(program);
        let mut decisions = step_counts_left_whole(program, &facts);
        let Some(scaled) = facts.scalings.first() else {
            return decisions;
        };
        let line = program.line(scaled.start);
        if facts.splits() || splits_elsewhere(program) {
            decisions.push(Decision::new(
                RATE_FOLLOWS_SPLIT,
                Verdict::Proven,
                scaled.clone(),
                format!("the rate scaled at line {line} drives work that is split"),
            ));
            return decisions;
        }
        let message = match facts.empty_divisions.first() {
            Some(empty) => format!(
                "the learning rate is multiplied by `hvd.size()` at line {line}, but the only division by the worker count (line {}) divides a count of 1, which stays 1: every worker walks all the data at N times the rate",
                program.line(empty.start)
            ),
            None => format!(
                "the learning rate is multiplied by `hvd.size()` at line {line}, but no loop's work is divided or its data sharded: every worker walks all the data at N times the rate"
            ),
        };
        // A rate the user scaled with nothing split may be weak scaling on
        // purpose (Horovod's synthetic benchmarks): theirs to decide.
        let verdict = if program.written_with_horovod
            && !program.is_generated(scaled)
            && !walks_real_data(program)
        {
            Verdict::Unknown
        } else {
            Verdict::Violated
        };
        decisions.push(Decision::new(
            RATE_FOLLOWS_SPLIT,
            verdict,
            scaled.clone(),
            message,
        )
        .with_suggestion("divide the bound that stops the training loop (or shard its dataset), or leave the rate as written"));
        decisions
    }
}

/// Calls that take a step count divided for a schedule, whole.
fn step_counts_left_whole(program: &Program, facts: &SplitFacts) -> Vec<Decision> {
    // Calls that only show or convert a count.
    const SHOWS: &[&str] = &[
        "print", "format", "str", "int", "float", "len", "info", "debug", "warning", "write",
        "append", "range", "log", "scalar",
    ];
    let mut decisions = Vec::new();
    for (name, division) in &facts.schedule_step_counts {
        for call in program.calls() {
            if call.method().is_some_and(|method| SHOWS.contains(&method)) {
                continue;
            }
            let arguments = call
                .site
                .call
                .args
                .iter()
                .chain(call.site.call.keywords.iter().map(|keyword| &keyword.value));
            let Some(whole) = arguments
                .filter(|argument| matches!(argument, Expr::Name(_) | Expr::Attribute(_)))
                .find(|argument| dotted_name(argument).as_deref() == Some(name.as_str()))
            else {
                continue;
            };
            if holds_another_binding(program, call, name, division, whole) {
                continue;
            }
            let (divided_at, whole_at) = (
                program.line(division.start),
                program.line(span(whole).start),
            );
            let callee = &program.text[span(call.site.call.func.as_ref())];
            decisions.push(Decision::new(
                RATE_FOLLOWS_SPLIT,
                Verdict::Unknown,
                span(whole),
                format!("the step count `{name}` is divided by the worker count for the schedule at line {divided_at}, but `{callee}` at line {whole_at} gets it whole: if it counts optimizer steps there, it spans N times the steps each worker takes"),
            ).with_suggestion(format!("divide it there too (`max(1, {name} // hvd.size())`) if it counts optimizer steps")));
        }
    }
    decisions
}

/// Whether a name given whole holds another value than the one divided: in
/// the scope of the division, each use sees its own assignment (a notebook
/// that binds `s` again in each cell, for a callback and later for a
/// schedule).
fn holds_another_binding(
    program: &Program,
    call: &crate::checker::program::ScopedCall,
    name: &str,
    division: &std::ops::Range<usize>,
    whole: &Expr,
) -> bool {
    let same_scope = program.calls().iter().any(|other| {
        let range = span(other.site.call);
        other.scope_index == call.scope_index
            && range.start <= division.start
            && division.end <= range.end
    });
    let seen = |at: usize| {
        call.scope
            .facts
            .last_assignment_before(name, at)
            .map(|assignment| span(assignment.statement))
    };
    match (seen(division.start), seen(span(whole).start)) {
        (Some(divided), Some(given)) => same_scope && divided != given,
        _ => false,
    }
}

/// Whether the program trains on data it reads (files, a Keras or TFDS
/// dataset, arrays given to `fit`), rather than on tensors it makes up
/// (`tf.random.uniform` images, as a benchmark does).
fn walks_real_data(program: &Program) -> bool {
    let calls = program.calls();
    let reads = calls.iter().any(|call| {
        let callee = call.callee.as_deref().unwrap_or_default();
        callee.starts_with("tensorflow.keras.datasets.")
            || callee.starts_with("tensorflow_datasets.")
            || callee == "numpy.load"
            || callee.starts_with("pandas.read_")
            || ["TFRecord", "TextLine", "list_files", "from_directory"]
                .iter()
                .any(|part| callee.contains(part))
            || matches!(call.method(), Some("next_batch" | "flow_from_directory"))
    });
    let made_up = calls.iter().any(|call| {
        matches!(
            call.callee.as_deref(),
            Some(
                "tensorflow.random.uniform"
                    | "tensorflow.random.normal"
                    | "tensorflow.random.truncated_normal"
                    | "numpy.random.rand"
                    | "numpy.random.randn"
                    | "numpy.random.random"
                    | "numpy.random.randint"
            )
        )
    });
    let trains_on_something = calls.iter().any(|call| {
        call.callee
            .as_deref()
            .is_some_and(|callee| callee.starts_with("tensorflow.data."))
            || matches!(call.method(), Some("fit" | "fit_generator"))
    });
    reads || (trains_on_something && !made_up)
}

/// Whether another module of the package that uses Horovod splits work.
fn splits_elsewhere(program: &Program) -> bool {
    program
        .others()
        .iter()
        .any(|other| other.uses_horovod() && SplitFacts::of(other).splits())
}
