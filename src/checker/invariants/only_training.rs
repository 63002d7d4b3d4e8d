//! ## Invariant 10: nothing that is not training is rewritten
//!
//! A tape that takes gradients with respect to an input (adversarial
//! examples, saliency maps) and never applies them to variables is analysis:
//! wrapping it in `hvd.DistributedGradientTape` makes every rank wait on an
//! allreduce for nothing, and dividing its loop cuts the analysis short.
//!
//! **Proven** when a module whose tape is wrapped also takes an optimizer
//! step (`apply_gradients`, `minimize`, an `assign_sub` update, `fit`,
//! `train_on_batch`). **Violated** when a wrapped tape's module takes none.

use super::facts::takes_optimizer_steps;
use crate::checker::{Decision, Invariant, Program, Verdict};
use crate::diagnostics::{Code, Severity};

pub const ONLY_TRAINING: Code = Code::new(
    "DST310",
    "only-training-rewritten",
    Severity::Error,
    "Only code that trains is rewritten: a tape whose gradients no optimizer step applies is analysis.",
);

pub struct OnlyTraining;

impl Invariant for OnlyTraining {
    fn code(&self) -> Code {
        ONLY_TRAINING
    }

    fn check(&self, program: &Program) -> Vec<Decision> {
        let calls = program.calls();
        let Some(wrap) = calls
            .iter()
            .find(|call| call.horovod_function() == Some("DistributedGradientTape"))
        else {
            return Vec::new();
        };
        let line = program.line(wrap.range().start);
        if takes_optimizer_steps(program) {
            return vec![Decision::new(
                ONLY_TRAINING,
                Verdict::Proven,
                wrap.range(),
                format!("the tape wrapped at line {line} feeds an optimizer step"),
            )];
        }
        vec![Decision::new(
            ONLY_TRAINING,
            Verdict::Violated,
            wrap.range(),
            format!("the tape wrapped at line {line} feeds no optimizer step anywhere in the module: its gradients are analysis (with respect to inputs), not training"),
        )
        .with_suggestion("leave analysis code single-process; distribute only the loop that applies gradients to variables")]
    }
}
