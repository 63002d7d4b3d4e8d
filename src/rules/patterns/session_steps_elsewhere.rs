//! A model class's step methods (`learn()` running the class's train op)
//! that no code of the module calls: a driver script of the package calls
//! them, in a loop of its own. This module's rewrite cannot divide that
//! loop: it says so and leaves the rates as written, and refuses outright
//! when the loop steps once per environment step of an episode, which
//! ends at a different step on each worker, or when the calling module
//! trains too (one training loop across two modules).

use rustpython_parser::ast::Stmt;

use crate::analysis::walk::{is_loop, path_to};
use crate::diagnostics::Diagnostic;
use crate::python::parse::span;
use crate::rules::passes::episodes::loop_taking_steps;
use crate::rules::passes::loop_steps::{DATASET_NOT_SHARDED, STEPS_DIFFER_PER_WORKER};
use crate::rules::rewrite::ModuleRewrite;

/// For the first step method (`(class, method)`) that another module of the
/// package calls: a refusal when it runs once per environment step of an
/// episode there, else the rates left as written and DST101.
pub(super) fn steps_taken_by_importers(
    rewrite: &mut ModuleRewrite,
    step_methods: &[(String, String)],
) {
    for (class, method) in step_methods {
        let calls = crate::analysis::train_ops::calls_from_importers(
            rewrite.analysis,
            rewrite.module,
            method,
        );
        let Some((other, scope_index, site)) = calls.into_iter().next() else {
            continue;
        };
        let Some(at) = rewrite
            .module
            .scopes
            .iter()
            .find(|scope| {
                scope.name() == method
                    && scope
                        .class
                        .is_some_and(|owner| owner.name.as_str() == class)
            })
            .and_then(|scope| scope.range())
        else {
            continue;
        };
        let source = &other.module.source;
        let path = &source.relative_path;
        let line = source.line_label(span(site.call).start);
        let loops: Vec<&Stmt> = path_to(other.scopes[scope_index].body, &span(site.statement))
            .unwrap_or_default()
            .into_iter()
            .filter(|statement| is_loop(statement))
            .collect();
        if !other.sites.is_empty() {
            // The caller trains too (it runs the session): both halves of
            // one training loop, which the tool does not rewrite apart.
            rewrite.refuse(
                Diagnostic::new(
                    super::session::TRAIN_OP_IN_ANOTHER_MODULE,
                    at,
                    format!("`{class}.{method}` runs this module's train op for {path}, which calls it ({line}) from a training loop of its own: the two modules are one training loop, which the tool does not rewrite across modules; this module was left as written"),
                )
                .with_suggestion("move the training loop and the model into one module, then run the tool again"),
            );
            return;
        }
        if let Some(Err(episode)) = loop_taking_steps(&loops, site.statement) {
            let header_line = source.line_label(span(episode).start);
            rewrite.refuse(
                Diagnostic::new(
                    STEPS_DIFFER_PER_WORKER,
                    at,
                    format!("`{class}.{method}` runs this module's train op, and {path} calls it ({line}) once per environment step of the episode loop at {header_line}, which ends with the episode: each worker's episodes last differently, so a gradient allreduce per step would pair steps of different episodes and the worker that finishes first would leave the others waiting; this module was left as written"),
                )
                .with_suggestion("train a fixed number of steps per episode (from a replay buffer, outside the environment loop), which every worker takes alike"),
            );
            return;
        }
        rewrite.learning_rates.leave_rates();
        rewrite.diagnose(
            Diagnostic::new(
                DATASET_NOT_SHARDED,
                at,
                format!("`{class}.{method}` runs this module's train op, and {path} calls it ({line}) from a loop this rewrite leaves as written: its steps are not divided among workers, and the learning rate was left as written"),
            )
            .with_suggestion(format!("divide the count of the loop in {path} by `hvd.size()` yourself, then scale the learning rate by it")),
        );
        return;
    }
}
