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

use std::collections::HashSet;

use rustpython_parser::ast::{self, Expr, Stmt};

use super::Pattern;
use crate::analysis::training::calls_in_scope;
use crate::analysis::training::find_call;
use crate::rules::passes::episodes::steps_differ_per_worker;
use crate::rules::passes::loop_steps::divide_loop_steps;
use crate::rules::rewrite::ModuleRewrite;

use super::tf1::{pin_session_config, tf1_prefix, wrap_optimizers};
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
    super::session_broadcast::broadcast_after_initializer(rewrite);
    divide_training_loops(rewrite);
}

/// `x.run(...)` calls of a scope with their statements.
pub(super) fn run_calls<'a>(scope: &Scope<'a>) -> Vec<(&'a Stmt, &'a ast::ExprCall, String)> {
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
        // A step function nested in the function that made the session
        // (`def train_step(...)` running the enclosing `sess`).
        let mut enclosing = scope.parent;
        while let Some(index) = enclosing {
            let outer = &module.scopes[index];
            if outer.function.is_some() {
                sessions.extend(outer.facts.session_names().into_iter().filter(|name| {
                    !scope
                        .facts
                        .assignments
                        .iter()
                        .any(|assignment| &assignment.name == name)
                }));
            }
            enclosing = outer.parent;
        }
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
            // A train op run by itself in the default session
            // (`training_op.run(feed_dict=...)` in a `with tf.Session():`).
            let runs_itself = train_ops.contains(&receiver);
            let trains = runs_itself || train_ops.is_empty() || runs_a_train_op(call, &train_ops);
            if !sessions.contains(receiver.as_str()) && !runs_itself {
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
                    let own_loop =
                        path_to(scope.body, &span(stmt)).and_then(|path| taking_steps(&path, stmt));
                    match own_loop {
                        Some(Err(episode)) => {
                            let refusal = steps_differ_per_worker(rewrite, episode);
                            rewrite.refuse(refusal);
                        }
                        Some(Ok(innermost)) => {
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
            let Some(taken) = taking_steps(&path, stmt) else {
                // A step function (`train_step(x_batch, y_batch)`): the loops
                // calling it take the steps.
                let callers = loops_calling(rewrite, scope);
                if callers.is_empty() {
                    steps_handed_away(rewrite, scope);
                }
                for caller_loop in callers {
                    if divided.insert(span(caller_loop)) {
                        divide_loop_steps(rewrite, caller_loop);
                    }
                }
                continue;
            };
            match taken {
                Err(episode) => {
                    let refusal = steps_differ_per_worker(rewrite, episode);
                    rewrite.refuse(refusal);
                }
                Ok(innermost) => {
                    if divided.insert(span(innermost)) {
                        divide_loop_steps(rewrite, innermost);
                    }
                }
            }
        }
    }
    divide_loops_calling_step_methods(rewrite, &step_methods, &mut divided);
}

/// The loop that takes a step's passes, of the statements on the path to it
/// (`episodes::loop_taking_steps`); `Err` with an episode loop that takes
/// one per environment step.
fn taking_steps<'a>(path: &[&'a Stmt], statement: &Stmt) -> Option<Result<&'a Stmt, &'a Stmt>> {
    let loops: Vec<&Stmt> = path.iter().copied().filter(|stmt| is_loop(stmt)).collect();
    crate::rules::passes::episodes::loop_taking_steps(&loops, statement)
}

/// A step function handed to another call as a value (`datavis.animate(
/// training_step, 10001)`): that call runs the steps where the tool cannot
/// count them, so none is divided and the rates stay as written.
fn steps_handed_away(rewrite: &mut ModuleRewrite, function: &Scope) {
    if function.function.is_none() || function.class.is_some() {
        return;
    }
    let name = function.name();
    let Some((_, site)) = crate::analysis::train_ops::calls_handed(rewrite.module, name)
        .into_iter()
        .find(|(scope_index, site)| {
            crate::analysis::train_ops::runs_it_unseen(
                rewrite.analysis,
                rewrite.module,
                *scope_index,
                site.call,
            )
        })
    else {
        return;
    };
    let receiver = dotted_name(&site.call.func).unwrap_or_else(|| "a call".to_string());
    rewrite.learning_rates.leave_rates();
    rewrite.diagnose(
        Diagnostic::new(
            crate::rules::passes::loop_steps::DATASET_NOT_SHARDED,
            span(site.call),
            format!("the step function `{name}` is handed to `{receiver}`, which runs it where the tool cannot count its calls: its steps are not divided among workers, and the learning rate was left as written"),
        )
        .with_suggestion(format!("call `{name}` from a loop of your own (`for i in range(n): {name}(...)`), which the tool divides, then run the tool again")),
    );
}

/// The innermost loops around the calls, in this module, of a plain
/// function (`def train_step(...)`, called by its name).
fn loops_calling<'a>(rewrite: &ModuleRewrite<'a>, function: &Scope) -> Vec<&'a Stmt> {
    let module = rewrite.module;
    if function.function.is_none() || function.class.is_some() {
        return Vec::new();
    }
    module
        .calls_named(function.name())
        .into_iter()
        .filter(|(_, site)| matches!(site.call.func.as_ref(), Expr::Name(_)))
        .filter_map(|(scope_index, site)| {
            let caller = &module.scopes[scope_index];
            let path = path_to(caller.body, &span(site.statement))?;
            path.iter().rev().find(|stmt| is_loop(stmt)).copied()
        })
        .collect()
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
    let mut called_here = false;
    for scope in module.scopes.iter().filter(|scope| scope.class.is_none()) {
        for (stmt, call) in calls_in_scope(scope) {
            let Expr::Attribute(attribute) = call.func.as_ref() else {
                continue;
            };
            if !methods.contains(attribute.attr.as_str()) {
                continue;
            }
            called_here = true;
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
                // Steps once per environment step of an episode: refused.
                let outer_first: Vec<&Stmt> = loops.iter().rev().copied().collect();
                match taking_steps(&outer_first, stmt) {
                    Some(Err(episode)) => {
                        let refusal = steps_differ_per_worker(rewrite, episode);
                        rewrite.refuse(refusal);
                        continue;
                    }
                    taken => taken.and_then(Result::ok),
                }
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
    if !called_here {
        super::session_steps_elsewhere::steps_taken_by_importers(rewrite, step_methods);
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
pub(super) fn train_op_names(rewrite: &ModuleRewrite) -> HashSet<String> {
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
    // A list of train ops run one at a time (`training_ops[phase]`).
    for scope in &rewrite.module.scopes {
        for assignment in &scope.facts.assignments {
            if let Expr::List(ast::ExprList { elts, .. }) | Expr::Tuple(ast::ExprTuple { elts, .. }) =
                assignment.value
                && !elts.is_empty()
                && elts
                    .iter()
                    .all(|element| dotted_name(element).is_some_and(|name| names.contains(&name)))
            {
                names.insert(assignment.name.clone());
            }
        }
    }
    // Train ops returned by a function of the module (`d_opt, g_opt =
    // model_opt(...)`, or `self.d_opt, self.g_opt = ...` in a model class).
    let mut found: Vec<String> = names.iter().cloned().collect();
    let known = found.len();
    crate::analysis::train_ops::follow_returns(rewrite.module, &mut found);
    for name in found.into_iter().skip(known) {
        if let Some((_, attribute)) = name.rsplit_once('.') {
            names.insert(format!(".{attribute}"));
        }
        names.insert(name);
    }
    names
}

/// Marks a train op's graph name among the names of train ops.
const GRAPH_NAME: &str = "graph:";

/// Whether a `sess.run(...)` fetches one of the train ops.
pub(super) fn runs_a_train_op(run: &ast::ExprCall, train_ops: &HashSet<String>) -> bool {
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
        // The train op of one model of a list (`nets[0].train`).
        found |= matches!(expr, Expr::Attribute(attribute)
            if matches!(attribute.value.as_ref(), Expr::Subscript(_))
                && train_ops.contains(&format!(".{}", attribute.attr)));
    });
    found
}
