//! TF1 `tf.train.MonitoredTrainingSession`.
//!
//! What it does: wraps the optimizer; appends
//! `hvd.BroadcastGlobalVariablesHook(0)` to the hooks as a new list (never
//! `hooks.append(...)`, which returns None, so `hooks=` would get None); checkpoints only
//! on rank 0 (`checkpoint_dir=dir if hvd.rank() == 0 else None`); pins the GPU
//! through `config=`; divides `StopAtStepHook(last_step=...)`.
//!
//! Why: the hook broadcasts rank 0's variables once the session has
//! initialised them; several workers writing one checkpoint directory corrupt it.

use super::Pattern;
use crate::analysis::training::find_call;
use crate::diagnostics::Code;
use crate::rules::rewrite::ModuleRewrite;

use super::tf1::{
    add_broadcast_hook, divide_stop_at_step_hooks, pin_session_config, rank_zero_directory,
    tf1_prefix, wrap_optimizers,
};
use crate::analysis::training::TrainingPattern;

/// A MonitoredTrainingSession.
pub struct MonitoredSession;

impl Pattern for MonitoredSession {
    fn pattern(&self) -> TrainingPattern {
        TrainingPattern::MonitoredSession
    }

    fn description(&self) -> &'static str {
        "a MonitoredTrainingSession"
    }

    fn runs_in_a_session(&self) -> bool {
        true
    }

    fn codes(&self) -> &'static [Code] {
        &[]
    }

    fn rewrite(&self, rewrite: &mut ModuleRewrite) {
        rewrite_module(rewrite);
    }
}

fn rewrite_module(rewrite: &mut ModuleRewrite) {
    wrap_optimizers(rewrite);
    let module = rewrite.module;
    for site in module
        .sites
        .iter()
        .filter(|site| site.pattern == TrainingPattern::MonitoredSession)
    {
        let scope = &module.scopes[site.scope];
        let Some((stmt, call)) = find_call(scope, &site.range) else {
            continue;
        };
        add_broadcast_hook(rewrite, call);
        rank_zero_directory(rewrite, call, "checkpoint_dir");
        let prefix = tf1_prefix(rewrite, &call.func, "train.MonitoredTrainingSession");
        pin_session_config(rewrite, scope, stmt, call, "config", &prefix);
    }
    divide_stop_at_step_hooks(rewrite);
}
