//! Rewrite rules. A training pattern is a plug-in (`patterns/`); the passes
//! every pattern shares are one file each (`passes/`); the assumption
//! warnings are `assumptions.rs`. Rules read the analysis through a
//! read-only context and return edits and diagnostics; they never print or
//! touch files.

pub mod assumptions;
pub mod context;
pub mod edit_builders;
pub mod importer;
pub mod passes;
pub mod patterns;
pub mod registry;
pub mod rewrite;
pub mod stylist;

use crate::analysis::library;
use crate::analysis::training::{Analysis, ModuleAnalysis, TrainingPattern, TrainingSite};
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::edit::Edit;
use rewrite::ModuleRewrite;

pub const MIXED_TRAINING_LOOPS: Code = Code::new(
    "DST011",
    "mixed-training-loops",
    Severity::Error,
    "One module uses several training APIs; it is not rewritten, since each API needs its own rewrite.",
);

pub const ALREADY_USES_HOROVOD: Code = Code::new(
    "DST105",
    "already-uses-horovod",
    Severity::Info,
    "The module already uses Horovod; only what is missing is added.",
);

pub const BROADCAST_PLACEMENT: Code = Code::new(
    "DST107",
    "broadcast-placement",
    Severity::Info,
    "Where the one-time broadcast of the initial variables was placed, and why.",
);

/// Codes raised here, for every pattern.
pub const CODES: &[Code] = &[
    MIXED_TRAINING_LOOPS,
    ALREADY_USES_HOROVOD,
    BROADCAST_PLACEMENT,
];

/// How a module trains, as far as the rewrite is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Classification {
    Pattern(TrainingPattern),
    /// Several training APIs in one module: not rewritten.
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

/// What the rules produced for one training module: edits that make it
/// train distributed, and diagnostics, each with the edits it explains.
#[derive(Debug)]
pub struct ModuleRewriteResult {
    pub classification: Classification,
    pub edits: Vec<Edit>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Choices the user makes about the rewrite (from `.distribute.yml`).
#[derive(Debug, Clone, Copy, Default)]
pub struct RuleOptions {
    /// Insert `.shard(hvd.size(), hvd.rank())` into unsharded tf.data pipelines.
    pub shard_datasets: bool,
}

/// Runs the rules for one module; `None` when it is not training code.
pub fn rewrite_module<'a>(
    analysis: &'a Analysis<'a>,
    module: &'a ModuleAnalysis<'a>,
    options: RuleOptions,
) -> Option<ModuleRewriteResult> {
    let patterns = module.patterns();
    match patterns.as_slice() {
        [] => None,
        [pattern] => Some(rewrite_one_pattern(analysis, module, *pattern, options)),
        _ => Some(refuse_mixed_module(module)),
    }
}

fn rewrite_one_pattern<'a>(
    analysis: &'a Analysis<'a>,
    module: &'a ModuleAnalysis<'a>,
    pattern: TrainingPattern,
    options: RuleOptions,
) -> ModuleRewriteResult {
    let plugin = patterns::plugin_for(pattern);
    let mut rewrite = ModuleRewrite::new(analysis, module, plugin, options);
    note_existing_horovod(&mut rewrite);
    passes::init_block::run(&mut rewrite);
    plugin.rewrite(&mut rewrite);
    passes::learning_rate::run(&mut rewrite);
    passes::device_pinning::run(&mut rewrite);
    passes::rank_zero::run(&mut rewrite);
    assumptions::check(&mut rewrite);
    let (edits, diagnostics) = rewrite.finish();
    ModuleRewriteResult {
        classification: Classification::Pattern(pattern),
        edits,
        diagnostics,
    }
}

/// DST105 at the module's first Horovod import.
fn note_existing_horovod(rewrite: &mut ModuleRewrite) {
    if !rewrite.had_horovod {
        return;
    }
    let first_import = rewrite
        .module
        .module
        .bindings
        .iter()
        .filter(|(_, binding)| library::is_horovod(&binding.qualified))
        .min_by_key(|(_, binding)| binding.statement.start);
    if let Some((_, binding)) = first_import {
        rewrite.diagnose(Diagnostic::new(
            ALREADY_USES_HOROVOD,
            binding.statement.clone(),
            "this module already uses Horovod: only what is missing was added",
        ));
    }
}

/// A module that trains with several APIs is reported, not rewritten.
fn refuse_mixed_module(module: &ModuleAnalysis) -> ModuleRewriteResult {
    let source = &module.module.source;
    let mut firsts: Vec<&TrainingSite> = Vec::new();
    for site in &module.sites {
        if !firsts.iter().any(|first| first.pattern == site.pattern) {
            firsts.push(site);
        }
    }
    let described: Vec<String> = firsts
        .iter()
        .map(|site| {
            format!(
                "{} ({})",
                patterns::plugin_for(site.pattern).description(),
                source.line_label(site.range.start)
            )
        })
        .collect();
    let diagnostic = Diagnostic::new(
        MIXED_TRAINING_LOOPS,
        firsts[0].range.clone(),
        format!(
            "this module trains with several APIs: {}; it was not rewritten",
            described.join(" and ")
        ),
    )
    .with_suggestion("move each training loop to its own module, or use one API");
    ModuleRewriteResult {
        classification: Classification::Mixed,
        edits: Vec::new(),
        diagnostics: vec![diagnostic],
    }
}
