//! One distribution scheme per job: a `tf.distribute` strategy that spreads
//! a model over the GPUs it sees (`MirroredStrategy`, multi-worker and
//! central-storage strategies) would run inside every Horovod process, two
//! schemes at once. It is replaced by the default strategy
//! (`tf.distribute.get_strategy()`), which keeps `with strategy.scope():`,
//! `num_replicas_in_sync` (now 1 per process) and `strategy.run` working
//! while Horovod runs one process per GPU.
//!
//! Input: every call of every scope. Output: the replacement with DST123,
//! or, in a module that already uses Horovod, DST123 alone.

use crate::analysis::library;
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::edit::Edit;
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

pub const STRATEGY_REPLACED: Code = Code::new(
    "DST123",
    "distribution-strategy-replaced",
    Severity::Warning,
    "A `tf.distribute` strategy that spreads the model over several devices would run inside every Horovod process: it is replaced by the default strategy.",
);

pub const CODES: &[Code] = &[STRATEGY_REPLACED];

/// Strategies that distribute over devices or workers themselves.
const DISTRIBUTING_STRATEGIES: &[&str] = &[
    "tensorflow.distribute.MirroredStrategy",
    "tensorflow.distribute.MultiWorkerMirroredStrategy",
    "tensorflow.distribute.experimental.MultiWorkerMirroredStrategy",
    "tensorflow.distribute.experimental.CentralStorageStrategy",
    "tensorflow.distribute.experimental.ParameterServerStrategy",
    "tensorflow.distribute.experimental.ParameterServerStrategyV2",
];

pub fn run(rewrite: &mut ModuleRewrite) {
    let module = rewrite.module;
    for scope in &module.scopes {
        for site in &scope.facts.calls {
            let Some(callee) = rewrite.callee(scope, &site.call.func) else {
                continue;
            };
            let callee = library::canonical_name(&callee);
            if !DISTRIBUTING_STRATEGIES.contains(&callee.as_str()) {
                continue;
            }
            let class = callee.rsplit('.').next().unwrap_or_default();
            if rewrite.had_horovod {
                rewrite.diagnose(Diagnostic::new(
                    STRATEGY_REPLACED,
                    span(site.call),
                    format!("`{class}` distributes the model inside each Horovod process as well: two distribution schemes at once"),
                ).with_suggestion(format!("use `{}.distribute.get_strategy()` (the default strategy): Horovod already runs one process per GPU", rewrite.tf)));
                continue;
            }
            let replacement = format!("{}.distribute.get_strategy()", rewrite.tf);
            rewrite.diagnose(
                Diagnostic::new(
                    STRATEGY_REPLACED,
                    span(site.call),
                    format!("`{class}` would distribute the model inside each Horovod process as well, two schemes at once: replaced by the default strategy; `num_replicas_in_sync` is now 1 per process"),
                )
                .with_fix(vec![Edit::replacement(span(site.call), replacement)]),
            );
        }
    }
}
