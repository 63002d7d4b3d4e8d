//! The broadcast of a TF1 session's initial variables: it follows the run
//! of the initializer (`sess.run(init)`, `init.run()`, a `tf.group` of
//! initializers, one a model class keeps as `self.init_op`), and any
//! checkpoint restore right after it, in each session that trains.

use std::collections::HashSet;

use rustpython_parser::ast::{self, Expr, Stmt};

use super::session::{VARIABLES_INITIALIZER_NOT_RUN, run_calls, runs_a_train_op, train_op_names};
use super::tf1::{canonical_callee, is_session_call};
use crate::analysis::training::{Scope, TrainingPattern};
use crate::analysis::walk::{dotted_name, path_to};
use crate::diagnostics::Diagnostic;
use crate::python::parse::span;
use crate::rules::BROADCAST_PLACEMENT;
use crate::rules::rewrite::ModuleRewrite;

/// Whether a `run` argument initialises the global variables.
fn is_initializer(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    expr: &Expr,
    initializer_names: &HashSet<String>,
) -> bool {
    match expr {
        Expr::Call(call) => canonical_callee(rewrite, scope, call).is_some_and(|callee| {
            match callee.as_str() {
                "tensorflow.global_variables_initializer"
                | "tensorflow.initializers.global_variables"
                | "tensorflow.initialize_all_variables" => true,
                // `tf.group(tf.global_variables_initializer(), ...)`
                "tensorflow.group" => call
                    .args
                    .iter()
                    .any(|member| is_initializer(rewrite, scope, member, initializer_names)),
                _ => false,
            }
        }),
        Expr::Name(name) => initializer_names.contains(name.id.as_str()),
        // `model.init_op`, where a class of the module sets `self.init_op`.
        Expr::Attribute(attribute) => {
            dotted_name(expr).is_some_and(|name| initializer_names.contains(&name))
                || initializer_names.contains(&format!(".{}", attribute.attr))
        }
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

/// `sess.run(hvd.broadcast_global_variables(0))` after `stmt`. A session
/// made by assignment with `graph=` does not make its graph the default (a
/// `with` session does), so the broadcast is built inside that graph.
fn insert_broadcast(rewrite: &mut ModuleRewrite, scope: &Scope, stmt: &Stmt, session: &str) {
    let stmt = after_restores(rewrite, scope, stmt);
    let broadcast = format!(
        "{session}.run({}.broadcast_global_variables(0))",
        rewrite.hvd
    );
    let mut outside_its_graph = false;
    for candidate in [scope, &rewrite.module.scopes[0]] {
        for stmt in candidate.facts.statements.iter().copied() {
            if let Stmt::Assign(assign) = stmt
                && assign
                    .targets
                    .iter()
                    .any(|target| dotted_name(target).is_some_and(|name| name == session))
                && let Expr::Call(call) = assign.value.as_ref()
                && is_session_call(rewrite, candidate, &assign.value)
                && crate::analysis::walk::keyword(call, "graph").is_some()
            {
                outside_its_graph = true;
            }
        }
    }
    let line = if outside_its_graph {
        format!(
            "with {session}.graph.as_default():{}{}{broadcast}",
            rewrite.stylist.newline, rewrite.stylist.indent_unit
        )
    } else {
        broadcast
    };
    rewrite.insert_after_statement(&span(stmt), &[line]);
}

/// The statements that run an initializer op by itself
/// (`tf.global_variables_initializer().run()`, `init.run()`), with the call.
fn initializer_runs_by_themselves<'a>(
    rewrite: &ModuleRewrite,
    scope: &Scope<'a>,
    initializer_names: &HashSet<String>,
) -> Vec<(&'a Stmt, &'a ast::ExprCall)> {
    scope
        .facts
        .statements
        .iter()
        .copied()
        .filter_map(|stmt| {
            let Stmt::Expr(expression) = stmt else {
                return None;
            };
            let Expr::Call(run) = expression.value.as_ref() else {
                return None;
            };
            match run.func.as_ref() {
                Expr::Attribute(attribute)
                    if attribute.attr.as_str() == "run"
                        && is_initializer(rewrite, scope, &attribute.value, initializer_names) =>
                {
                    Some((stmt, run))
                }
                _ => None,
            }
        })
        .collect()
}

/// `hvd.broadcast_global_variables(0).run()` after an initializer run by
/// itself: both run in the default session, with the same arguments.
fn insert_broadcast_run_by_itself(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    stmt: &Stmt,
    run: &ast::ExprCall,
) {
    let arguments = rewrite.source(span(run).start..span(run).end);
    let arguments = &arguments[arguments.rfind(".run(").map_or(0, |at| at + 4)..];
    let line = format!(
        "{}.broadcast_global_variables(0).run{arguments}",
        rewrite.hvd
    );
    let after = after_restores(rewrite, scope, stmt);
    rewrite.insert_after_statement(&span(after), &[line]);
}

/// The initializer's statement, or the last statement after it in the same
/// block that restores a checkpoint (`if ckpt: saver.restore(sess, path)`):
/// the broadcast must follow every way the variables get their values, or
/// workers that restore differently train different models.
fn after_restores<'a>(
    rewrite: &ModuleRewrite,
    scope: &Scope<'a>,
    initializer: &'a Stmt,
) -> &'a Stmt {
    let initializer = outside_branches(scope, initializer);
    let at = span(initializer);
    // The path ends with the initializer itself; its parent holds its block.
    let parent = crate::analysis::walk::path_to(scope.body, &at)
        .and_then(|path| path.len().checked_sub(2).map(|index| path[index]));
    let block: &[Stmt] = match parent {
        Some(parent) => crate::analysis::walk::nested_bodies(parent)
            .into_iter()
            .find(|body| body.iter().any(|inner| span(inner) == at))
            .unwrap_or(&[]),
        None => scope.body,
    };
    let restores = |statement: &Stmt| {
        let mut found = false;
        crate::analysis::walk::for_each_statement(
            std::slice::from_ref(statement),
            false,
            &mut |inner| {
                crate::analysis::walk::walk_statement_expressions(inner, &mut |expression| {
                    if let Expr::Call(call) = expression {
                        found |= rewrite
                            .catalogued_effects(scope, call)
                            .iter()
                            .any(|effect| {
                                matches!(
                                    effect,
                                    crate::analysis::catalogue::Effect::RestoresCheckpoint
                                )
                            })
                            || matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "restore");
                    }
                });
            },
        );
        found
    };
    // A restore after the training (`if do_train == 0: saver.restore(...)`
    // below an `if do_train == 1:` loop) comes too late for the broadcast:
    // the search stops at the first statement that holds a loop.
    let holds_loop = |statement: &Stmt| {
        let mut found = false;
        crate::analysis::walk::for_each_statement(
            std::slice::from_ref(statement),
            false,
            &mut |inner| found |= crate::analysis::walk::is_loop(inner),
        );
        found
    };
    block
        .iter()
        .skip_while(|statement| span(*statement) != at)
        .take_while(|statement| !holds_loop(statement))
        .filter(|statement| restores(statement))
        .last()
        .unwrap_or(initializer)
}

/// The outermost `try` or `if` holding an initializer in a branch, or the
/// initializer itself: in `try: saver.restore(...)` / `except: sess.run(init)`
/// each rank takes one branch, so the broadcast, a collective every rank
/// must issue, goes after the whole statement, whichever way it went.
fn outside_branches<'a>(scope: &Scope<'a>, initializer: &'a Stmt) -> &'a Stmt {
    let Some(path) = crate::analysis::walk::path_to(scope.body, &span(initializer)) else {
        return initializer;
    };
    path.iter()
        .rev()
        .skip(1)
        .take_while(|statement| matches!(statement, Stmt::Try(_) | Stmt::TryStar(_) | Stmt::If(_)))
        .last()
        .copied()
        .unwrap_or(initializer)
}

/// Names assigned an initializer that a scope can run: its own
/// (`init = tf.global_variables_initializer()`), the module's globals it
/// does not rebind, and, as `.name`, the attributes a class of the module
/// sets to one (`self.init_op = ...`, run as `sess.run(model.init_op)`).
fn initializer_names(rewrite: &ModuleRewrite, scope: &Scope) -> HashSet<String> {
    let module = rewrite.module;
    let assigned = |candidate: &Scope| -> Vec<String> {
        let mut names = Vec::new();
        for stmt in candidate.facts.statements.iter().copied() {
            if let Stmt::Assign(assign) = stmt
                && is_initializer(rewrite, candidate, &assign.value, &HashSet::new())
            {
                names.extend(assign.targets.iter().filter_map(dotted_name));
            }
        }
        names
    };
    let mut names: HashSet<String> = assigned(scope).into_iter().collect();
    let top_level = &module.scopes[0];
    if !std::ptr::eq(scope, top_level) {
        let rebound = |name: &str| {
            scope.parameters.iter().any(|parameter| parameter == name)
                || scope
                    .facts
                    .assignments
                    .iter()
                    .any(|assignment| assignment.name == name)
        };
        names.extend(
            assigned(top_level)
                .into_iter()
                .filter(|name| !name.contains('.') && !rebound(name)),
        );
    }
    for method in module.scopes.iter().filter(|method| method.class.is_some()) {
        for name in assigned(method) {
            if let Some(attribute) = name.strip_prefix("self.")
                && !attribute.contains('.')
                && !other_attribute_values(rewrite, attribute)
            {
                names.insert(format!(".{attribute}"));
            }
        }
    }
    names
}

/// Whether the module also sets attribute `attribute` to something that is
/// not an initializer: then `x.attribute` says nothing on its own.
fn other_attribute_values(rewrite: &ModuleRewrite, attribute: &str) -> bool {
    rewrite.module.scopes.iter().any(|scope| {
        scope.facts.statements.iter().any(|stmt| {
            let Stmt::Assign(assign) = stmt else {
                return false;
            };
            assign.targets.iter().any(
                |target| matches!(target, Expr::Attribute(set) if set.attr.as_str() == attribute),
            ) && !is_initializer(rewrite, scope, &assign.value, &HashSet::new())
        })
    })
}

/// An initializer run: by a named session (`sess.run(init)`), or by
/// itself in the default session (`init.run()`, `session` `None`).
struct InitializerRun<'a> {
    stmt: &'a Stmt,
    call: &'a ast::ExprCall,
    session: Option<String>,
}

/// The initializer runs of a scope, of both forms.
fn initializer_runs<'a>(rewrite: &ModuleRewrite, scope: &Scope<'a>) -> Vec<InitializerRun<'a>> {
    let initializer_names = initializer_names(rewrite, scope);
    let mut runs: Vec<InitializerRun> = run_calls(scope)
        .into_iter()
        .filter(|(stmt, call, _)| {
            call.args.first().is_some_and(|argument| {
                is_initializer(rewrite, scope, argument, &initializer_names)
            }) && matches!(stmt, Stmt::Expr(_) | Stmt::Assign(_))
        })
        .map(|(stmt, call, receiver)| InitializerRun {
            stmt,
            call,
            session: Some(receiver),
        })
        .collect();
    runs.extend(
        initializer_runs_by_themselves(rewrite, scope, &initializer_names)
            .into_iter()
            .map(|(stmt, call)| InitializerRun {
                stmt,
                call,
                session: None,
            }),
    );
    runs
}

/// Several sessions, each initialising its own graph (a demo graph, then
/// the graphs that train): the broadcast follows the initialiser run of
/// each session whose block runs a train op, not only the first one. A
/// train op runs in the block when the same session fetches it, or when
/// it runs by itself (`training_op.run(...)`) in the block's default
/// session. Returns whether it placed any (`false` leaves the first-run rule).
fn broadcast_in_each_training_session(rewrite: &mut ModuleRewrite) -> bool {
    let train_ops = train_op_names(rewrite);
    if train_ops.is_empty() {
        return false;
    }
    let module = rewrite.module;
    let mut placed = Vec::new();
    let mut initializer_count = 0;
    for scope in &module.scopes {
        let runs = run_calls(scope);
        for initializer in initializer_runs(rewrite, scope) {
            initializer_count += 1;
            let at = span(initializer.stmt).start;
            // The session's block: the `with` holding the run, else the scope.
            let block = path_to(scope.body, &span(initializer.stmt))
                .and_then(|path| {
                    path.iter()
                        .rev()
                        .find(|holder| matches!(holder, Stmt::With(_)))
                        .map(|holder| span(*holder))
                })
                .unwrap_or(0..usize::MAX);
            let trains = runs.iter().any(|(other, run, receiver)| {
                let start = span(*other).start;
                start > at
                    && block.contains(&start)
                    && (train_ops.contains(receiver)
                        || (initializer
                            .session
                            .as_ref()
                            .is_none_or(|session| session == receiver)
                            && runs_a_train_op(run, &train_ops)))
            });
            if trains {
                placed.push((scope, initializer));
            }
        }
    }
    if initializer_count < 2 || placed.is_empty() {
        return false;
    }
    rewrite.first_training_session = placed
        .iter()
        .map(|(_, initializer)| span(initializer.stmt).start)
        .min();
    for (scope, initializer) in placed {
        match &initializer.session {
            Some(session) => insert_broadcast(rewrite, scope, initializer.stmt, session),
            None => {
                insert_broadcast_run_by_itself(rewrite, scope, initializer.stmt, initializer.call)
            }
        }
    }
    true
}

pub(super) fn broadcast_after_initializer(rewrite: &mut ModuleRewrite) {
    if rewrite.calls_method("broadcast_global_variables") {
        return;
    }
    let module = rewrite.module;
    if broadcast_in_each_training_session(rewrite) {
        return;
    }
    for scope in &module.scopes {
        let initializer_names = initializer_names(rewrite, scope);
        for (stmt, call, receiver) in run_calls(scope) {
            let Some(argument) = call.args.first() else {
                continue;
            };
            if !is_initializer(rewrite, scope, argument, &initializer_names)
                || !matches!(stmt, Stmt::Expr(_) | Stmt::Assign(_))
            {
                continue;
            }
            insert_broadcast(rewrite, scope, stmt, &receiver);
            return;
        }
        if let Some((stmt, run)) =
            initializer_runs_by_themselves(rewrite, scope, &initializer_names)
                .into_iter()
                .next()
        {
            // `tf.global_variables_initializer().run()` runs in the default
            // session; the broadcast op runs the same way, right after it.
            insert_broadcast_run_by_itself(rewrite, scope, stmt, run);
            return;
        }
    }
    // `init_op, saver = build(...)`: an initializer made elsewhere and run by
    // name. The name says what it is; follow it and say so.
    for scope in &module.scopes {
        let sessions = scope.facts.session_names();
        for (stmt, call, receiver) in run_calls(scope) {
            if let (true, [Expr::Name(argument)]) =
                (sessions.contains(receiver.as_str()), call.args.as_slice())
                && argument.id.to_lowercase().contains("init")
                && matches!(stmt, Stmt::Expr(_) | Stmt::Assign(_))
            {
                insert_broadcast(rewrite, scope, stmt, &receiver);
                rewrite.diagnose(Diagnostic::new(
                    BROADCAST_PLACEMENT,
                    span(call),
                    format!("`{}` is assumed to initialise the variables (it is made elsewhere; its name says so): the broadcast from rank 0 follows it", argument.id),
                ));
                return;
            }
        }
    }
    if let Some(site) = module
        .sites
        .iter()
        .find(|site| site.pattern == TrainingPattern::Session)
    {
        rewrite.diagnose(
            Diagnostic::new(
                VARIABLES_INITIALIZER_NOT_RUN,
                site.range.clone(),
                "no `sess.run(tf.global_variables_initializer())` was found, so the broadcast of the initial variables was not added",
            )
            .with_suggestion(format!("after the variables are initialised or restored, run `sess.run({}.broadcast_global_variables(0))`", rewrite.hvd)),
        );
    }
}
