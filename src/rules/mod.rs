//! Rewrite rules. A training pattern is a plug-in (`patterns/`); the passes
//! every pattern shares are one file each (`passes/`); the assumption
//! warnings are `assumptions.rs`. Rules read the analysis through a
//! read-only context and return edits and diagnostics; they never print or
//! touch files.

pub mod assumptions;
pub mod context;
pub mod edit_builders;
pub mod importer;
pub mod init_position;
pub mod keras_runtime;
pub mod passes;
pub mod patterns;
pub mod registry;
pub mod rewrite;
pub mod stylist;

use crate::analysis::training::{Analysis, ModuleAnalysis, TrainingPattern, TrainingSite};
use crate::analysis::{library, training};
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python;
use rayon::prelude::*;
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

pub const UNSUPPORTED_TRAINING: Code = Code::new(
    "DST121",
    "unsupported-training-api",
    Severity::Error,
    "The module trains with an API the tool recognises but does not rewrite (`tf.contrib.eager` implicit gradients, `tf.train.Supervisor`, `tf.contrib.learn`'s `learn_runner` and `Experiment`): it is left as written, single-GPU.",
);

pub const DEVICE_TOWERS: Code = Code::new(
    "DST118",
    "device-towers",
    Severity::Error,
    "The module builds one tower per GPU itself (`tf.device('/gpu:%d' % i)` in a loop); it is not rewritten, since Horovod runs one process per GPU.",
);

pub const OPTIMIZER_NOT_WRAPPABLE: Code = Code::new(
    "DST125",
    "optimizer-not-wrappable",
    Severity::Error,
    "A training loop whose optimizer cannot be wrapped in `hvd.DistributedOptimizer` (a model compiled nowhere the tool can see, a canned Estimator without gradients): its module is left as written, since dividing its steps alone would train one model per worker on part of the data.",
);

pub const SINGLE_GPU_TRAINING: Code = Code::new(
    "DST200",
    "single-gpu-training",
    Severity::Info,
    "A training loop that runs on one GPU: the rewrite that makes it train with Horovod (the import, `hvd.init()` and pinning, the optimizer and tape wrapped, the broadcast, the split, rank-0 guards) belongs to this diagnostic.",
);

/// Codes raised here, for every pattern.
pub const CODES: &[Code] = &[
    SINGLE_GPU_TRAINING,
    MIXED_TRAINING_LOOPS,
    ALREADY_USES_HOROVOD,
    BROADCAST_PLACEMENT,
    DEVICE_TOWERS,
    UNSUPPORTED_TRAINING,
    OPTIMIZER_NOT_WRAPPABLE,
];

/// How a module trains, as far as the rewrite is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Classification {
    Pattern(TrainingPattern),
    /// Several training APIs in one module: not rewritten.
    Mixed,
    /// A training API the tool recognises but does not rewrite.
    Unsupported,
}

impl Classification {
    pub fn name(self) -> &'static str {
        match self {
            Classification::Pattern(pattern) => pattern.name(),
            Classification::Mixed => "mixed",
            Classification::Unsupported => "unsupported",
        }
    }
}

/// What the rules produced for one training module: edits that make it
/// train distributed, and diagnostics, each with the edits it explains.
#[derive(Debug)]
pub struct ModuleRewriteResult {
    pub classification: Classification,
    /// Every edit belongs to one of them (`Diagnostic::fix`).
    pub diagnostics: Vec<Diagnostic>,
}

/// Choices the user makes about the rewrite (from `.distribute.yml`).
#[derive(Debug, Clone, Copy, Default)]
pub struct RuleOptions {
    /// Insert `.shard(hvd.size(), hvd.rank())` into unsharded tf.data pipelines.
    pub shard_datasets: bool,
    /// Epochs of `fit`'s learning-rate warm-up; `0` adds none.
    pub warmup_epochs: u32,
}

/// Runs the rules for one module; `None` when it is not training code.
pub fn rewrite_module<'a>(
    analysis: &'a Analysis<'a>,
    module: &'a ModuleAnalysis<'a>,
    options: RuleOptions,
) -> Option<ModuleRewriteResult> {
    // Training the tool does not rewrite is never rewritten in part.
    if let Some((range, api)) = unsupported_training(analysis, module) {
        return Some(refuse_unsupported(module, range, api));
    }
    let patterns = module.patterns();
    match patterns.as_slice() {
        [] => None,
        [pattern] => Some(match device_tower(analysis, module) {
            Some(tower) => refuse_towers(module, *pattern, tower),
            None => rewrite_one_pattern(analysis, module, *pattern, options),
        }),
        _ => Some(refuse_mixed_module(module)),
    }
}

/// `with tf.device('/gpu:%d' % i):` inside a loop: one tower per GPU, built
/// by hand. Its range, if the module has one.
fn device_tower(analysis: &Analysis, module: &ModuleAnalysis) -> Option<std::ops::Range<usize>> {
    let text = &module.module.source.text;
    // Scopes in parallel (a large module is one task), the first in order wins.
    module.scopes.par_iter().find_map_first(|scope| {
        scope.facts.calls.iter().find_map(|site| {
            let callee =
                training::callee_name(analysis.package, module.module, scope, &site.call.func)?;
            let device = site.call.args.first()?;
            let per_gpu = text[python::parse::span(device)]
                .to_lowercase()
                .contains("gpu")
                && !matches!(device, rustpython_parser::ast::Expr::Constant(_));
            (library::canonical_name(&callee) == "tensorflow.device"
                && per_gpu
                && !site.enclosing_loops.is_empty())
            .then(|| python::parse::span(site.call))
        })
    })
}

/// Training the tool recognises but does not rewrite, found by the callee's
/// canonical name: what it is, and what to do instead.
struct UnsupportedApi {
    matches: fn(&str) -> bool,
    what: &'static str,
    suggestion: &'static str,
}

const UNSUPPORTED_APIS: &[UnsupportedApi] = &[
    UnsupportedApi {
        matches: |callee| callee.starts_with("tensorflow.contrib.eager.implicit"),
        what: "`tf.contrib.eager` implicit gradients",
        suggestion: "wrap its optimizer in `hvd.DistributedOptimizer`, broadcast the variables from rank 0 after the first step, and divide the loop's steps by `hvd.size()` by hand",
    },
    UnsupportedApi {
        matches: |callee| callee == "tensorflow.train.Supervisor",
        what: "a `tf.train.Supervisor`",
        suggestion: "train in a `tf.compat.v1.train.MonitoredTrainingSession(checkpoint_dir=<the logdir>, hooks=[...])` instead, which the tool rewrites (broadcast hook, pinned config, checkpoints on rank 0, divided steps), then run the tool again",
    },
    UnsupportedApi {
        matches: |callee| {
            callee.starts_with("tensorflow.contrib.learn")
                && (callee.ends_with("learn_runner.run") || callee.ends_with("Experiment"))
        },
        what: "`tf.contrib.learn`'s `learn_runner` and `Experiment`",
        suggestion: "train the Estimator with `tf.estimator.train_and_evaluate(estimator, tf.estimator.TrainSpec(...), tf.estimator.EvalSpec(...))` instead, which the tool rewrites, then run the tool again",
    },
];

/// Training the tool recognises but does not rewrite. Where, and which.
fn unsupported_training(
    analysis: &Analysis,
    module: &ModuleAnalysis,
) -> Option<(std::ops::Range<usize>, &'static UnsupportedApi)> {
    // Scopes in parallel (a large module is one task), the first in order wins.
    module.scopes.par_iter().find_map_first(|scope| {
        scope.facts.calls.iter().find_map(|site| {
            let call = site.call;
            let callee = training::callee_name(analysis.package, module.module, scope, &call.func)?;
            let callee = library::canonical_name(&callee);
            UNSUPPORTED_APIS
                .iter()
                .find(|api| (api.matches)(&callee))
                .map(|api| (python::parse::span(call), api))
        })
    })
}

fn refuse_unsupported(
    module: &ModuleAnalysis,
    range: std::ops::Range<usize>,
    api: &UnsupportedApi,
) -> ModuleRewriteResult {
    let diagnostic = Diagnostic::new(
        UNSUPPORTED_TRAINING,
        range,
        format!(
            "this module trains with {}, which the tool recognises but does not rewrite: the module was left as written and stays single-GPU",
            api.what
        ),
    )
    .with_suggestion(api.suggestion);
    let patterns = module.patterns();
    ModuleRewriteResult {
        classification: match patterns.as_slice() {
            [pattern] => Classification::Pattern(*pattern),
            _ => Classification::Unsupported,
        },
        diagnostics: vec![diagnostic],
    }
}

fn refuse_towers(
    module: &ModuleAnalysis,
    pattern: TrainingPattern,
    tower: std::ops::Range<usize>,
) -> ModuleRewriteResult {
    let line = module.module.source.location(tower.start).line;
    let diagnostic = Diagnostic::new(
        DEVICE_TOWERS,
        tower,
        format!("this module places one tower per GPU itself (line {line}); Horovod runs one process per GPU instead, so the module was not rewritten"),
    )
    .with_suggestion("build the model once, without `tf.device` per GPU and without averaging the towers' gradients, then run the tool again: each Horovod process gets one GPU");
    ModuleRewriteResult {
        classification: Classification::Pattern(pattern),
        diagnostics: vec![diagnostic],
    }
}

fn rewrite_one_pattern<'a>(
    analysis: &'a Analysis<'a>,
    module: &'a ModuleAnalysis<'a>,
    pattern: TrainingPattern,
    options: RuleOptions,
) -> ModuleRewriteResult {
    // Whether a loop's work is split is known only once the loops are
    // rewritten, after some rates may have been scaled: a module with a loop
    // left whole is proposed again with no rate scaled (invariant 5), so that
    // every DST101 saying the rate was left as written is true.
    // The loops left whole are known then: a Keras fit's keeps only the rate
    // of the optimizers compiled for it, another loop's every rate.
    match propose(analysis, module, pattern, options, None) {
        (_, WorkSplit::NotEverywhere(left_whole)) => {
            propose(analysis, module, pattern, options, Some(left_whole)).0
        }
        (result, _) => result,
    }
}

/// Whether every training loop of a proposal had its work split.
enum WorkSplit {
    Everywhere,
    NotEverywhere(passes::learning_rate::LoopsLeftWhole),
}

fn propose<'a>(
    analysis: &'a Analysis<'a>,
    module: &'a ModuleAnalysis<'a>,
    pattern: TrainingPattern,
    options: RuleOptions,
    left_whole: Option<passes::learning_rate::LoopsLeftWhole>,
) -> (ModuleRewriteResult, WorkSplit) {
    let plugin = patterns::plugin_for(pattern);
    let mut rewrite = ModuleRewrite::new(analysis, module, plugin, options);
    let second_proposal = left_whole.is_some();
    if let Some(left_whole) = left_whole {
        rewrite.learning_rates.remember(left_whole);
    }
    // Code that already uses Horovod chose how to wrap its optimizers.
    let refusals = match rewrite.had_horovod {
        true => Vec::new(),
        false => plugin.refusals(&rewrite),
    };
    if !refusals.is_empty() {
        return (left_as_written(pattern, refusals), WorkSplit::Everywhere);
    }
    note_existing_horovod(&mut rewrite);
    // Each pass's edits belong to its code; the core of the rewrite to
    // SINGLE_GPU_TRAINING.
    passes::init_block::run(&mut rewrite);
    plugin.rewrite(&mut rewrite);
    if !rewrite.refusals.is_empty() {
        return (
            left_as_written(pattern, rewrite.refusals),
            WorkSplit::Everywhere,
        );
    }
    passes::learning_rate::run(&mut rewrite);
    rewrite.run_pass(
        passes::rate_changers::RATE_CHANGER_SCALED,
        passes::rate_changers::run,
    );
    rewrite.run_pass(
        passes::schedule_steps::SCHEDULE_STEPS_DIVIDED,
        passes::schedule_steps::run,
    );
    rewrite.run_pass(passes::seeds::SEED_MADE_PER_RANK, passes::seeds::run);
    rewrite.run_pass(passes::set_order::SET_ORDER_SORTED, passes::set_order::run);
    rewrite.run_pass(
        passes::agreed_stops::STOP_AVERAGED,
        passes::agreed_stops::run,
    );
    rewrite.run_pass(
        passes::strategies::STRATEGY_REPLACED,
        passes::strategies::run,
    );
    rewrite.run_pass(
        passes::device_pinning::DEVICE_PINNING_REMOVED,
        passes::device_pinning::run,
    );
    passes::rank_zero::run(&mut rewrite);
    rewrite.run_pass(
        passes::downloads::DOWNLOAD_ON_RANK_ZERO_FIRST,
        passes::downloads::run,
    );
    rewrite.run_pass(
        passes::downloads::DOWNLOAD_ON_RANK_ZERO_FIRST,
        passes::cached_file::run,
    );
    rewrite.run_pass(
        passes::shell_lines::SHELL_LINE_ON_RANK_ZERO,
        passes::shell_lines::run,
    );
    rewrite.run_pass(
        passes::read_barrier::WAIT_BEFORE_READING_BACK,
        passes::read_barrier::run,
    );
    assumptions::check(&mut rewrite);
    let owner = single_gpu_training(module, plugin, &rewrite);
    let split = match rewrite.learning_rates.work_not_split() && !second_proposal {
        true => WorkSplit::NotEverywhere(rewrite.learning_rates.loops_left_whole()),
        false => WorkSplit::Everywhere,
    };
    let result = ModuleRewriteResult {
        classification: Classification::Pattern(pattern),
        diagnostics: rewrite.finish(owner),
    };
    (result, split)
}

/// The diagnostic the core of a module's rewrite belongs to, at its first
/// training loop.
fn single_gpu_training(
    module: &ModuleAnalysis,
    plugin: &dyn patterns::Pattern,
    rewrite: &ModuleRewrite,
) -> Diagnostic {
    // The session opened last before the first initialiser that trains.
    let training_session = rewrite.first_training_session.and_then(|initialised| {
        module
            .sites
            .iter()
            .rfind(|site| site.range.start < initialised)
    });
    let site = training_session
        .or_else(|| module.sites.iter().find(|site| !site.is_model_function))
        .or(module.sites.first());
    let range = site.map_or(0..0, |site| site.range.clone());
    let line = module.module.source.line_label(range.start);
    // A Keras site is a `fit` or a `train_on_batch` step: named as written.
    let batch_step = format!(".{}(", crate::analysis::library::KERAS_BATCH_STEP);
    let description = match site {
        Some(site)
            if site.pattern == TrainingPattern::Keras
                && module
                    .module
                    .source
                    .text
                    .get(range.clone())
                    .is_some_and(|text| text.contains(&batch_step)) =>
        {
            "Keras `train_on_batch`"
        }
        // A `compile` (or a callbacks list) that another module's fit runs.
        Some(site) if site.pattern == TrainingPattern::Keras && site.is_model_function => {
            "the Keras model another module fits"
        }
        _ => plugin.description(),
    };
    let message = if rewrite.had_horovod {
        format!(
            "{description} ({line}) already trains with Horovod: the rewrite adds what is missing"
        )
    } else {
        format!("{description} ({line}) trains on one GPU: the rewrite makes it train with Horovod")
    };
    Diagnostic::new(SINGLE_GPU_TRAINING, range, message)
}

/// A module refused: no edits, only the errors that say why.
fn left_as_written(pattern: TrainingPattern, refusals: Vec<Diagnostic>) -> ModuleRewriteResult {
    ModuleRewriteResult {
        classification: Classification::Pattern(pattern),
        diagnostics: refusals,
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
        diagnostics: vec![diagnostic],
    }
}
