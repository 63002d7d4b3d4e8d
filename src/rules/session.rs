//! TF1 `tf.Session` loops (SPEC 4.4).
//!
//! What it does: wraps the optimizer (splitting `Optimizer(...).minimize(...)`
//! into optimizer, wrap, minimize), pins the session's GPU through its
//! `ConfigProto` (`config=` in both `with` and assignment forms), and after
//! `sess.run(tf.global_variables_initializer())` runs
//! `sess.run(hvd.broadcast_global_variables(0))`; divides the step count of the
//! loop that runs the train op; savers and prints run on rank 0.
//!
//! Why: the broadcast must follow initialisation, or each worker keeps its own
//! random initial values.
//!
//! Assumptions (reported when broken): one session per module, created and run
//! in the same function; the initializer is run explicitly.

use std::collections::HashSet;

use rustpython_parser::ast::{self, Expr, Stmt};

use super::common::{
    ModuleRewrite, calls_in_scope, divide_loop_steps, find_call, is_loop, path_to,
};
use super::tf1::{canonical_callee, pin_session_config, tf1_prefix, wrap_optimizers};
use crate::analysis::training::{Scope, TrainingPattern};
use crate::analysis::walk::{dotted_name, for_each_statement};
use crate::diagnostics::{Code, Diagnostic};
use crate::python::parse::span;

pub fn rewrite(rewrite: &mut ModuleRewrite) {
    wrap_optimizers(rewrite);
    let module = rewrite.module;
    let sessions: Vec<_> = module
        .sites
        .iter()
        .filter(|site| site.pattern == TrainingPattern::Session)
        .collect();
    for (number, site) in sessions.iter().enumerate() {
        let scope = &module.scopes[site.scope];
        let Some((stmt, call)) = find_call(scope, &site.range) else {
            continue;
        };
        let prefix = tf1_prefix(rewrite, &call.func, "Session");
        pin_session_config(rewrite, scope, stmt, call, "config", &prefix);
        if number == 1 {
            rewrite.diagnose(Diagnostic::new(
                Code::SeveralSessions,
                site.range.clone(),
                "a second session: each session is pinned, but the variables are broadcast only after the first initialiser run",
            ));
        }
    }
    broadcast_after_initializer(rewrite);
    divide_training_loops(rewrite);
}

fn is_session_call(rewrite: &ModuleRewrite, scope: &Scope, expr: &Expr) -> bool {
    matches!(expr, Expr::Call(call) if matches!(canonical_callee(rewrite, scope, call).as_deref(), Some("tensorflow.Session" | "tensorflow.InteractiveSession")))
}

/// Names bound to sessions in a scope: `sess = tf.Session()` and `with tf.Session() as sess:`.
fn session_names(rewrite: &ModuleRewrite, scope: &Scope) -> HashSet<String> {
    let mut names = HashSet::new();
    for_each_statement(scope.body, false, &mut |stmt| match stmt {
        Stmt::Assign(assign) if is_session_call(rewrite, scope, &assign.value) => {
            names.extend(assign.targets.iter().filter_map(dotted_name));
        }
        Stmt::With(with) => {
            for item in &with.items {
                if is_session_call(rewrite, scope, &item.context_expr)
                    && let Some(target) = item.optional_vars.as_deref().and_then(dotted_name)
                {
                    names.insert(target);
                }
            }
        }
        _ => {}
    });
    names
}

/// Whether a `run` argument initialises the global variables.
fn is_initializer(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    expr: &Expr,
    initializer_names: &HashSet<String>,
) -> bool {
    match expr {
        Expr::Call(call) => canonical_callee(rewrite, scope, call).is_some_and(|callee| {
            matches!(
                callee.as_str(),
                "tensorflow.global_variables_initializer"
                    | "tensorflow.initializers.global_variables"
                    | "tensorflow.initialize_all_variables"
            )
        }),
        Expr::Name(name) => initializer_names.contains(name.id.as_str()),
        Expr::List(list) => list
            .elts
            .iter()
            .any(|element| is_initializer(rewrite, scope, element, initializer_names)),
        Expr::Tuple(tuple) => tuple
            .elts
            .iter()
            .any(|element| is_initializer(rewrite, scope, element, initializer_names)),
        _ => false,
    }
}

/// `x.run(...)` calls of a scope with their statements.
fn run_calls<'a>(scope: &Scope<'a>) -> Vec<(&'a Stmt, &'a ast::ExprCall, String)> {
    calls_in_scope(scope)
        .into_iter()
        .filter_map(|(stmt, call)| match call.func.as_ref() {
            Expr::Attribute(attribute) if attribute.attr.as_str() == "run" => {
                dotted_name(&attribute.value).map(|receiver| (stmt, call, receiver))
            }
            _ => None,
        })
        .collect()
}

fn broadcast_after_initializer(rewrite: &mut ModuleRewrite) {
    if rewrite.text.contains("broadcast_global_variables") {
        return;
    }
    let module = rewrite.module;
    for scope in &module.scopes {
        let mut initializer_names = HashSet::new();
        for_each_statement(scope.body, false, &mut |stmt| {
            if let Stmt::Assign(assign) = stmt
                && is_initializer(rewrite, scope, &assign.value, &HashSet::new())
            {
                initializer_names.extend(assign.targets.iter().filter_map(dotted_name));
            }
        });
        for (stmt, call, receiver) in run_calls(scope) {
            let Some(argument) = call.args.first() else {
                continue;
            };
            if !is_initializer(rewrite, scope, argument, &initializer_names)
                || !matches!(stmt, Stmt::Expr(_) | Stmt::Assign(_))
            {
                continue;
            }
            let line = format!(
                "{receiver}.run({}.broadcast_global_variables(0))",
                rewrite.hvd
            );
            rewrite.insert_after_statement(&span(stmt), &[line]);
            return;
        }
    }
    if let Some(site) = module
        .sites
        .iter()
        .find(|site| site.pattern == TrainingPattern::Session)
    {
        rewrite.diagnose(
            Diagnostic::new(
                Code::VariablesInitializerNotRun,
                site.range.clone(),
                "no `sess.run(tf.global_variables_initializer())` was found, so the broadcast of the initial variables was not added",
            )
            .with_suggestion(format!("after the variables are initialised or restored, run `sess.run({}.broadcast_global_variables(0))`", rewrite.hvd)),
        );
    }
}

/// Divides the step count of each loop that runs the session, and warns about
/// sessions run where they were not created.
fn divide_training_loops(rewrite: &mut ModuleRewrite) {
    let module = rewrite.module;
    let mut divided = HashSet::new();
    for scope in &module.scopes {
        let sessions = session_names(rewrite, scope);
        for (stmt, call, receiver) in run_calls(scope) {
            if !sessions.contains(&receiver) {
                if scope.parameters.contains(&receiver) {
                    rewrite.diagnose(
                        Diagnostic::new(Code::SessionUsedAcrossFunctions, span(call), format!("`{receiver}` is a session created in another function; the loop here is not divided among workers"))
                            .with_suggestion("create and run the session in the same function, or divide the step count yourself with `// hvd.size()`"),
                    );
                }
                continue;
            }
            let Some(path) = path_to(scope.body, &span(stmt)) else {
                continue;
            };
            let Some(innermost) = path.iter().rev().find(|stmt| is_loop(stmt)).copied() else {
                continue;
            };
            if divided.insert(span(innermost)) {
                divide_loop_steps(rewrite, innermost);
            }
        }
    }
}
