//! Rewrite rules: one file per training API pattern, plus the shared pieces.
//! Rules return edits and diagnostics; they never print or touch files.

pub mod assumptions;
pub mod common;
pub mod gradient_tape;
pub mod keras;

use crate::analysis::training::{Analysis, ModuleAnalysis, TrainingPattern};
use crate::diagnostics::{Code, Diagnostic};
use crate::python::edit::Edit;
use common::ModuleRewrite;

/// How a module trains, as far as the rewrite is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Classification {
    Pattern(TrainingPattern),
    /// Several training APIs in one module: not rewritten (SPEC 3.4).
    Mixed,
}

impl Classification {
    pub fn name(self) -> &'static str {
        match self {
            Classification::Pattern(pattern) => pattern.name(),
            Classification::Mixed => "mixed",
        }
    }
}

/// What the rules produced for one training module.
#[derive(Debug)]
pub struct ModuleRewriteResult {
    pub classification: Classification,
    pub edits: Vec<Edit>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Runs the rules for one module; `None` when it is not training code.
pub fn rewrite_module<'a>(
    analysis: &'a Analysis<'a>,
    module: &'a ModuleAnalysis<'a>,
) -> Option<ModuleRewriteResult> {
    let patterns = module.patterns();
    match patterns.as_slice() {
        [] => None,
        [pattern] => {
            let mut rewrite = ModuleRewrite::new(analysis, module, *pattern);
            if rewrite.had_horovod
                && let Some((_, binding)) = module
                    .module
                    .bindings
                    .iter()
                    .filter(|(_, binding)| crate::analysis::library::is_horovod(&binding.qualified))
                    .min_by_key(|(_, binding)| binding.statement.start)
            {
                rewrite.diagnose(Diagnostic::new(
                    Code::AlreadyUsesHorovod,
                    binding.statement.clone(),
                    "this module already uses Horovod: only what is missing was added",
                ));
            }
            rewrite.add_imports();
            rewrite.add_init_block();
            match pattern {
                TrainingPattern::Keras => keras::rewrite(&mut rewrite),
                TrainingPattern::GradientTape => gradient_tape::rewrite(&mut rewrite),
            }
            rewrite.scale_learning_rates();
            rewrite.remove_device_pinning();
            rewrite.guard_rank_zero_statements();
            assumptions::check(&mut rewrite);
            let (edits, diagnostics) = rewrite.finish();
            Some(ModuleRewriteResult {
                classification: Classification::Pattern(*pattern),
                edits,
                diagnostics,
            })
        }
        _ => {
            let keras = module
                .sites
                .iter()
                .find(|site| site.pattern == TrainingPattern::Keras);
            let tape = module
                .sites
                .iter()
                .find(|site| site.pattern == TrainingPattern::GradientTape);
            let (Some(keras), Some(tape)) = (keras, tape) else {
                return None;
            };
            let source = &module.module.source;
            let keras_line = source.location(keras.range.start).line;
            let tape_line = source.location(tape.range.start).line;
            let first = if keras.range.start < tape.range.start {
                keras
            } else {
                tape
            };
            let diagnostic = Diagnostic::new(
                Code::MixedTrainingLoops,
                first.range.clone(),
                format!("this module trains both with Keras `fit` (line {keras_line}) and with a GradientTape loop (line {tape_line}); it was not rewritten"),
            )
            .with_suggestion("move each training loop to its own module, or use one API");
            Some(ModuleRewriteResult {
                classification: Classification::Mixed,
                edits: Vec::new(),
                diagnostics: vec![diagnostic],
            })
        }
    }
}
