//! ## Invariant 5: the learning rate is scaled only where the work is split
//!
//! Multiplying the rate by `hvd.size()` is right when each step averages N
//! workers' batches and the job runs 1/N of the steps. Scaled while every
//! worker still walks all the data, the job trains at N times the rate.
//!
//! **Proven** when a rate is scaled and the program divides a bound or
//! shards its data (here or in another module of the package), or when
//! nothing is scaled. **Violated** when a rate is scaled and no loop's work
//! is split anywhere in the package.

use super::facts::SplitFacts;
use crate::checker::{Decision, Invariant, Program, Verdict};
use crate::diagnostics::{Code, Severity};

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
        let Some(scaled) = facts.scalings.first() else {
            return Vec::new();
        };
        let line = program.line(scaled.start);
        if facts.splits() || splits_elsewhere(program) {
            return vec![Decision::new(
                RATE_FOLLOWS_SPLIT,
                Verdict::Proven,
                scaled.clone(),
                format!("the rate scaled at line {line} drives work that is split"),
            )];
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
        vec![Decision::new(
            RATE_FOLLOWS_SPLIT,
            Verdict::Violated,
            scaled.clone(),
            message,
        )
        .with_suggestion("divide the bound that stops the training loop (or shard its dataset), or leave the rate as written")]
    }
}

/// Whether another module of the package that uses Horovod splits work.
fn splits_elsewhere(program: &Program) -> bool {
    program
        .others()
        .iter()
        .any(|other| other.uses_horovod() && SplitFacts::of(other).splits())
}
