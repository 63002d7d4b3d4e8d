//! TF1 `tf.Session` loops.
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

use crate::rules::BROADCAST_PLACEMENT;
use std::collections::HashSet;

use rustpython_parser::ast::{self, Expr, Stmt};

use super::Pattern;
use crate::analysis::training::calls_in_scope;
use crate::analysis::training::find_call;
use crate::rules::passes::loop_steps::divide_loop_steps;
use crate::rules::rewrite::ModuleRewrite;

use super::tf1::{
    canonical_callee, is_session_call, pin_session_config, tf1_prefix, wrap_optimizers,
};
use crate::analysis::training::{Scope, TrainingPattern};
use crate::analysis::walk::{dotted_name, keyword, walk_expression};
use crate::analysis::walk::{is_loop, path_to};
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::parse::span;

pub const VARIABLES_INITIALIZER_NOT_RUN: Code = Code::new(
    "DST112",
    "variables-initializer-not-run",
    Severity::Error,
    "No `global_variables_initializer` is run, so the broadcast of the initial variables could not be placed.",
);

pub const SEVERAL_SESSIONS: Code = Code::new(
    "DST113",
    "several-sessions",
    Severity::Warning,
    "The module creates several sessions; each is pinned, but only the first initialiser run is followed by a broadcast.",
);

pub const SESSION_USED_ACROSS_FUNCTIONS: Code = Code::new(
    "DST114",
    "session-used-across-functions",
    Severity::Warning,
    "A session created in one function is run in another; the rewrite follows only the creating function.",
);

/// A tf.Session loop.
pub struct Session;

impl Pattern for Session {
    fn pattern(&self) -> TrainingPattern {
        TrainingPattern::Session
    }

    fn description(&self) -> &'static str {
        "a tf.Session loop"
    }

    fn runs_in_a_session(&self) -> bool {
        true
    }

    fn codes(&self) -> &'static [Code] {
        &[
            VARIABLES_INITIALIZER_NOT_RUN,
            SEVERAL_SESSIONS,
            SESSION_USED_ACROSS_FUNCTIONS,
            TRAIN_OP_IN_ANOTHER_MODULE,
        ]
    }

    fn rewrite(&self, rewrite: &mut ModuleRewrite) {
        rewrite_module(rewrite);
    }
}

pub const TRAIN_OP_IN_ANOTHER_MODULE: Code = Code::new(
    "DST135",
    "train-op-in-another-module",
    Severity::Warning,
    "The session runs a train op that a function or a class of another package module builds (`model.training(loss, rate)`, `Seq2Seq(...).train_op`): its optimizer would have to be wrapped there, in step with this loop's rewrite, which the tool does not do across modules; the module is left as written.",
);

fn rewrite_module(rewrite: &mut ModuleRewrite) {
    let module = rewrite.module;
    let own_step =
        crate::analysis::training::calls_any_of(&module.scopes, &["minimize", "apply_gradients"]);
    if !own_step
        && let Some(elsewhere) = crate::analysis::training::train_op_built_elsewhere(
            rewrite.analysis.package,
            module.module,
            &module.scopes,
        )
    {
        rewrite.refuse(
            Diagnostic::new(
                TRAIN_OP_IN_ANOTHER_MODULE,
                elsewhere.call,
                format!("the session loop runs the train op that `{}` ({}) builds: its optimizer would have to be wrapped in `hvd.DistributedOptimizer` there, in step with this loop, and the tool does not rewrite one training loop across modules; the module was left as written and stays single-GPU", elsewhere.function, elsewhere.path),
            )
            .with_suggestion("build the optimizer in this module and pass it to the function, or wrap it there with `hvd.DistributedOptimizer` and scale its rate, then add the session's broadcast and split by hand"),
        );
        return;
    }
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
                SEVERAL_SESSIONS,
                site.range.clone(),
                "a second session: each session is pinned, and the variables are broadcast after the initialiser run of each session that runs a train op (after the first one when the tool sees none train)",
            ));
        }
    }
    broadcast_after_initializer(rewrite);
    divide_training_loops(rewrite);
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

/// A statement that runs an initializer op by itself
/// (`tf.global_variables_initializer().run()`, `init.run()`), with the call.
fn initializer_run_by_itself<'a>(
    rewrite: &ModuleRewrite,
    scope: &Scope<'a>,
    initializer_names: &HashSet<String>,
) -> Option<(&'a Stmt, &'a ast::ExprCall)> {
    scope.facts.statements.iter().copied().find_map(|stmt| {
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
    block
        .iter()
        .skip_while(|statement| span(*statement) != at)
        .take_while(|statement| !crate::analysis::walk::is_loop(statement))
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

/// Several sessions, each initialising its own graph (a demo graph, then
/// the graphs that train): the broadcast follows the initialiser run of
/// each session whose block runs a train op, not only the first one.
/// Returns whether it placed any (`false` leaves the first-run rule).
fn broadcast_in_each_training_session(rewrite: &mut ModuleRewrite) -> bool {
    let train_ops = train_op_names(rewrite);
    if train_ops.is_empty() {
        return false;
    }
    let module = rewrite.module;
    let mut placed = Vec::new();
    let mut initializer_runs = 0;
    for scope in &module.scopes {
        let initializer_names = initializer_names(rewrite, scope);
        let runs = run_calls(scope);
        for (stmt, call, receiver) in &runs {
            let Some(argument) = call.args.first() else {
                continue;
            };
            if !is_initializer(rewrite, scope, argument, &initializer_names)
                || !matches!(stmt, Stmt::Expr(_) | Stmt::Assign(_))
            {
                continue;
            }
            initializer_runs += 1;
            // The session's block: the `with` holding the run, else the scope.
            let block = path_to(scope.body, &span(*stmt))
                .and_then(|path| {
                    path.iter()
                        .rev()
                        .find(|holder| matches!(holder, Stmt::With(_)))
                        .map(|holder| span(*holder))
                })
                .unwrap_or(0..usize::MAX);
            let trains = runs.iter().any(|(other, run, other_receiver)| {
                other_receiver == receiver
                    && span(*other).start > span(*stmt).start
                    && block.contains(&span(*other).start)
                    && runs_a_train_op(run, &train_ops)
            });
            if trains {
                placed.push((scope, *stmt, receiver.clone()));
            }
        }
    }
    if initializer_runs < 2 || placed.is_empty() {
        return false;
    }
    for (scope, stmt, receiver) in placed {
        insert_broadcast(rewrite, scope, stmt, &receiver);
    }
    true
}

fn broadcast_after_initializer(rewrite: &mut ModuleRewrite) {
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
        if let Some((stmt, run)) = initializer_run_by_itself(rewrite, scope, &initializer_names) {
            // `tf.global_variables_initializer().run()` runs in the default
            // session; the broadcast op runs the same way, right after it.
            let arguments = rewrite.source(span(run).start..span(run).end);
            let arguments = &arguments[arguments.rfind(".run(").map_or(0, |at| at + 4)..];
            let line = format!(
                "{}.broadcast_global_variables(0).run{arguments}",
                rewrite.hvd
            );
            let after = after_restores(rewrite, scope, stmt);
            rewrite.insert_after_statement(&span(after), &[line]);
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

/// Divides the step count of each loop that runs the session, and warns about
/// sessions run where they were not created.
/// Divides the loops that run the train op: a loop around a `sess.run` of
/// anything else (a prediction, a plot) keeps its count.
fn divide_training_loops(rewrite: &mut ModuleRewrite) {
    let module = rewrite.module;
    let train_ops = train_op_names(rewrite);
    let mut divided = HashSet::new();
    let mut step_methods: Vec<(String, String)> = Vec::new();
    let module_sessions = module.scopes[0].facts.session_names();
    for scope in &module.scopes {
        let mut sessions = scope.facts.session_names();
        // A function running the module's session (`session = tf.Session()`
        // at the top, `session.run(train_op)` in `optimize()`).
        sessions.extend(
            module_sessions
                .iter()
                .filter(|name| {
                    !scope
                        .facts
                        .assignments
                        .iter()
                        .any(|assignment| &assignment.name == *name)
                })
                .cloned(),
        );
        for (stmt, call, receiver) in run_calls(scope) {
            let trains = train_ops.is_empty() || runs_a_train_op(call, &train_ops);
            if !sessions.contains(receiver.as_str()) {
                // A model class's method running its train op on the session
                // the instance holds (`self.sess.run([self.cost, self.optimizer])`):
                // each call is one step, so the loop calling it is divided.
                // A method that loops over the steps itself (`fit` running
                // `self.session.run(train_op)` per batch) has that loop divided.
                if let Some(class) = scope.class
                    && receiver.starts_with("self.")
                    && !train_ops.is_empty()
                    && trains
                {
                    let own_loop = path_to(scope.body, &span(stmt))
                        .and_then(|path| path.iter().rev().find(|stmt| is_loop(stmt)).copied());
                    match own_loop {
                        Some(innermost) => {
                            if divided.insert(span(innermost)) {
                                divide_loop_steps(rewrite, innermost);
                            }
                        }
                        None => {
                            step_methods.push((class.name.to_string(), scope.name().to_string()))
                        }
                    }
                    continue;
                }
                if scope.parameters.contains(&receiver) && trains {
                    // Its steps are not divided: the rate must stay as written.
                    rewrite.learning_rates.leave_rates();
                    rewrite.diagnose(
                        Diagnostic::new(SESSION_USED_ACROSS_FUNCTIONS, span(call), format!("`{receiver}` is a session created in another function; the loop here is not divided among workers and the learning rate was left as written"))
                            .with_suggestion("create and run the session in the same function, or divide the step count yourself with `// hvd.size()`"),
                    );
                }
                continue;
            }
            if !trains {
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
    divide_loops_calling_step_methods(rewrite, &step_methods, &mut divided);
}

/// Divides the loops that call a step method of a model class on one of its
/// instances (`m1 = Model(sess, "m1")`, then `m1.train(x, y)` per batch). An
/// instance walked from a list of them (an ensemble, `for m in models`)
/// divides the loop around that walk: every worker trains every model, on
/// its share of the batches. A call the tool cannot tie to an instance
/// leaves the rate as written, its steps not divided.
fn divide_loops_calling_step_methods(
    rewrite: &mut ModuleRewrite,
    step_methods: &[(String, String)],
    divided: &mut HashSet<std::ops::Range<usize>>,
) {
    if step_methods.is_empty() {
        return;
    }
    let module = rewrite.module;
    let classes: HashSet<&str> = step_methods
        .iter()
        .map(|(class, _)| class.as_str())
        .collect();
    let methods: HashSet<&str> = step_methods
        .iter()
        .map(|(_, method)| method.as_str())
        .collect();
    let made_by_class = |expr: &Expr| {
        let mut found = false;
        walk_expression(expr, &mut |inner| {
            if let Expr::Call(call) = inner
                && let Some(callee) = dotted_name(&call.func)
            {
                found |= classes.contains(callee.rsplit('.').next().unwrap_or_default());
            }
        });
        found
    };
    // Names bound to an instance, or to a list of them, anywhere in the module.
    let mut instances: HashSet<String> = HashSet::new();
    for scope in &module.scopes {
        for assignment in &scope.facts.assignments {
            if made_by_class(assignment.value) {
                instances.insert(assignment.name.clone());
            }
        }
        for (_, call) in calls_in_scope(scope) {
            if let Expr::Attribute(attribute) = call.func.as_ref()
                && attribute.attr.as_str() == "append"
                && call.args.first().is_some_and(&made_by_class)
                && let Some(list) = dotted_name(&attribute.value)
            {
                instances.insert(list);
            }
        }
    }
    let mut untied: Option<(std::ops::Range<usize>, String)> = None;
    for scope in module.scopes.iter().filter(|scope| scope.class.is_none()) {
        for (stmt, call) in calls_in_scope(scope) {
            let Expr::Attribute(attribute) = call.func.as_ref() else {
                continue;
            };
            if !methods.contains(attribute.attr.as_str()) {
                continue;
            }
            let untied_call = (span(call), attribute.attr.to_string());
            let Some(receiver) = dotted_name(&attribute.value) else {
                untied.get_or_insert(untied_call);
                continue;
            };
            let Some(path) = path_to(scope.body, &span(stmt)) else {
                continue;
            };
            let loops: Vec<&Stmt> = path
                .iter()
                .rev()
                .filter(|stmt| is_loop(stmt))
                .copied()
                .collect();
            let target = if instances.contains(&receiver) {
                loops.first().copied()
            } else if let Some((walk, outer)) = loops.split_first()
                && walks_instances(walk, &receiver, &instances)
            {
                outer.first().copied()
            } else {
                untied.get_or_insert(untied_call);
                continue;
            };
            match target {
                Some(target) => {
                    if divided.insert(span(target)) {
                        divide_loop_steps(rewrite, target);
                    }
                }
                None => {
                    untied.get_or_insert(untied_call);
                }
            }
        }
    }
    if let Some((call, method)) = untied {
        rewrite.learning_rates.leave_rates();
        rewrite.diagnose(
            Diagnostic::new(
                crate::rules::passes::loop_steps::DATASET_NOT_SHARDED,
                call,
                format!("this `{method}` runs a training step of a model class on an object the tool cannot tie to an instance of it: the loop around it is not divided, every worker runs all of its steps, and the learning rate was left as written"),
            )
            .with_suggestion("call the method on a name bound to the instance (`model = Model(...)`), or divide the step count yourself with `// hvd.size()`"),
        );
    }
}

/// Whether a loop binds `receiver` to the elements of a list of instances
/// (`for m in models`, `for index, m in enumerate(models)`).
fn walks_instances(walk: &Stmt, receiver: &str, instances: &HashSet<String>) -> bool {
    let Stmt::For(walk) = walk else {
        return false;
    };
    let iterated = match walk.iter.as_ref() {
        Expr::Call(call) if dotted_name(&call.func).as_deref() == Some("enumerate") => {
            call.args.first()
        }
        other => Some(other),
    };
    let binds_receiver = match walk.target.as_ref() {
        Expr::Name(name) => name.id.as_str() == receiver,
        Expr::Tuple(tuple) => tuple
            .elts
            .iter()
            .any(|element| matches!(element, Expr::Name(name) if name.id.as_str() == receiver)),
        _ => false,
    };
    binds_receiver
        && iterated
            .and_then(dotted_name)
            .is_some_and(|list| instances.contains(&list))
}

/// Names (dotted, `self.train_op` too) assigned an optimizer step:
/// `train_op = optimizer.minimize(loss)`, `... .apply_gradients(...)`.
/// Empty when the train op is made where the tool cannot see.
fn train_op_names(rewrite: &ModuleRewrite) -> HashSet<String> {
    let mut names = HashSet::new();
    for scope in &rewrite.module.scopes {
        for assignment in &scope.facts.assignments {
            let Expr::Call(call) = assignment.value else {
                continue;
            };
            if matches!(call.func.as_ref(), Expr::Attribute(attribute)
                if matches!(attribute.attr.as_str(), "minimize" | "apply_gradients"))
            {
                names.insert(assignment.name.clone());
                // Fetched by its graph name (`minimize(cost, name="train")`).
                if let Some(Expr::Constant(ast::ExprConstant {
                    value: ast::Constant::Str(graph_name),
                    ..
                })) = keyword(call, "name").map(|keyword| &keyword.value)
                {
                    names.insert(format!("{GRAPH_NAME}{graph_name}"));
                }
                // `self.train_op = ...` in a model class is `model.train_op` outside it.
                if let Some((_, attribute)) = assignment.name.rsplit_once('.') {
                    names.insert(format!(".{attribute}"));
                }
            }
        }
    }
    names
}

/// Marks a train op's graph name among the names of train ops.
const GRAPH_NAME: &str = "graph:";

/// Whether a `sess.run(...)` fetches one of the train ops.
fn runs_a_train_op(run: &ast::ExprCall, train_ops: &HashSet<String>) -> bool {
    let fetches = run
        .args
        .first()
        .or_else(|| keyword(run, "fetches").map(|keyword| &keyword.value));
    let Some(fetches) = fetches else {
        return false;
    };
    let mut found = false;
    walk_expression(fetches, &mut |expr| {
        // A fetch by the op's graph name (`sess.run(['cost:0', 'train_op'])`),
        // named as the train op's variable.
        if let Expr::Constant(ast::ExprConstant {
            value: ast::Constant::Str(fetched),
            ..
        }) = expr
        {
            let op = fetched.split(':').next().unwrap_or_default();
            found |= train_ops.contains(op) || train_ops.contains(&format!("{GRAPH_NAME}{op}"));
        }
        found |= dotted_name(expr).is_some_and(|name| {
            train_ops.contains(&name)
                || name
                    .rsplit_once('.')
                    .is_some_and(|(_, attribute)| train_ops.contains(&format!(".{attribute}")))
        });
    });
    found
}
