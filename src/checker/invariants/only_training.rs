//! ## Invariant 10: nothing that is not training is rewritten
//!
//! A tape that takes gradients with respect to an input (adversarial
//! examples, saliency maps) and never applies them to variables is analysis:
//! wrapping it in `hvd.DistributedGradientTape` makes every rank wait on an
//! allreduce for nothing, and dividing its loop cuts the analysis short.
//!
//! **Proven** when a module whose tape is wrapped also takes an optimizer
//! step (`apply_gradients`, `minimize`, an `assign_sub` update, `fit`,
//! `train_on_batch`). **Violated** when a wrapped tape's module takes none,
//! or when a wrapped tape takes its gradients only with respect to tensors it
//! `watch`es (inputs: a saliency map beside the training).

use rustpython_parser::ast::{Expr, Stmt};

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
        if let Some((watching, line)) = calls
            .iter()
            .filter(|call| call.horovod_function() == Some("DistributedGradientTape"))
            .find_map(|wrap| gradients_of_watched(program, wrap))
        {
            return vec![Decision::new(
                ONLY_TRAINING,
                Verdict::Violated,
                watching,
                format!("the tape wrapped at line {line} takes gradients only with respect to tensors it watches (inputs), which no optimizer applies: analysis, whose allreduce every rank must join"),
            )
            .with_suggestion("leave that tape unwrapped; wrap only tapes whose gradients an optimizer applies")];
        }
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

/// A wrapped tape (`tape = hvd.DistributedGradientTape(tape)`) whose
/// `gradient(target, sources)` calls all take sources the tape `watch`es in
/// the same scope: the range of the wrap and its line.
fn gradients_of_watched(
    program: &Program,
    wrap: &crate::checker::program::ScopedCall,
) -> Option<(std::ops::Range<usize>, usize)> {
    let tape = match wrap.site.statement {
        Stmt::Assign(assign) => match assign.targets.as_slice() {
            [Expr::Name(name)] => name.id.as_str(),
            _ => return None,
        },
        _ => return None,
    };
    let on_tape = |method: &str| {
        let wanted = method.to_string();
        program.calls().iter().filter(move |call| {
            std::ptr::eq(call.scope, wrap.scope)
                && matches!(call.site.call.func.as_ref(), Expr::Attribute(attribute)
                    if attribute.attr.as_str() == wanted
                        && matches!(attribute.value.as_ref(), Expr::Name(receiver) if receiver.id.as_str() == tape))
        })
    };
    let watched: Vec<String> = on_tape("watch")
        .filter_map(|call| match call.site.call.args.first() {
            Some(Expr::Name(name)) => Some(name.id.to_string()),
            _ => None,
        })
        .collect();
    let gradients: Vec<_> = on_tape("gradient").collect();
    let all_watched = !watched.is_empty()
        && !gradients.is_empty()
        && gradients.iter().all(|call| {
            matches!(call.site.call.args.get(1), Some(Expr::Name(source)) if watched.iter().any(|name| name == source.id.as_str()))
        });
    all_watched.then(|| (wrap.range(), program.line(wrap.range().start)))
}
