//! Rewrite rules: one file per training API pattern, plus the shared pieces.
//! Rules return edits and diagnostics; they never print or touch files.

pub mod assumptions;
pub mod common;
pub mod estimator;
pub mod gradient_tape;
pub mod keras;
pub mod monitored_session;
pub mod session;
pub mod tf1;

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
/// Choices the user makes about the rewrite (from `.distribute.yml`).
#[derive(Debug, Clone, Copy, Default)]
pub struct RuleOptions {
    /// Insert `.shard(hvd.size(), hvd.rank())` into unsharded tf.data pipelines.
    pub shard_datasets: bool,
}

pub fn rewrite_module<'a>(
    analysis: &'a Analysis<'a>,
    module: &'a ModuleAnalysis<'a>,
    options: RuleOptions,
) -> Option<ModuleRewriteResult> {
    let patterns = module.patterns();
    match patterns.as_slice() {
        [] => None,
        [pattern] => {
            let mut rewrite = ModuleRewrite::new(analysis, module, *pattern);
            rewrite.options = options;
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
                TrainingPattern::Session => session::rewrite(&mut rewrite),
                TrainingPattern::MonitoredSession => monitored_session::rewrite(&mut rewrite),
                TrainingPattern::Estimator => estimator::rewrite(&mut rewrite),
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
            let source = &module.module.source;
            let mut firsts: Vec<&crate::analysis::training::TrainingSite> = Vec::new();
            for site in &module.sites {
                if !firsts.iter().any(|first| first.pattern == site.pattern) {
                    firsts.push(site);
                }
            }
            let described: Vec<String> = firsts
                .iter()
                .map(|site| {
                    format!(
                        "{} (line {})",
                        describe(site.pattern),
                        source.location(site.range.start).line
                    )
                })
                .collect();
            let first = firsts[0];
            let diagnostic = Diagnostic::new(
                Code::MixedTrainingLoops,
                first.range.clone(),
                format!(
                    "this module trains with several APIs: {}; it was not rewritten",
                    described.join(" and ")
                ),
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

fn describe(pattern: TrainingPattern) -> &'static str {
    match pattern {
        TrainingPattern::Keras => "Keras `fit`",
        TrainingPattern::GradientTape => "a GradientTape loop",
        TrainingPattern::Session => "a tf.Session loop",
        TrainingPattern::MonitoredSession => "a MonitoredTrainingSession",
        TrainingPattern::Estimator => "an Estimator",
    }
}
