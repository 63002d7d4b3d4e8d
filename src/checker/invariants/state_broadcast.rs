//! ## Invariant 3: the initial state is broadcast once, after it exists
//!
//! Workers start from different random weights; rank 0's must be copied to
//! every other rank once, after every trained variable exists, or the
//! averaged gradients are applied to N different models.
//!
//! **Proven** when the loop's form of the broadcast is there: the
//! `BroadcastGlobalVariablesCallback` among a `fit`'s callbacks, a
//! `BroadcastGlobalVariablesHook` for a monitored session or Estimator,
//! `hvd.broadcast_variables`/`hvd.broadcast_global_variables` for a custom
//! loop or a session (after the variables are initialised), or when a
//! custom loop trains only variables made from constants. **Violated** when
//! there is none, or when a session broadcasts before it initialises.
//! **Unknown** when a `fit`'s callbacks come from where the checker cannot
//! follow.

use rustpython_parser::ast::Expr;

use crate::analysis::training::{Scope, TrainingPattern};
use crate::analysis::walk::{dotted_name, walk_expression};
use crate::checker::program::ScopedCall;
use crate::checker::{Decision, Invariant, Program, Verdict};
use crate::diagnostics::{Code, Severity};
use crate::python::parse::span;

pub const STATE_BROADCAST: Code = Code::new(
    "DST303",
    "initial-state-broadcast",
    Severity::Error,
    "The initial variables are broadcast from rank 0 once per job, after every trained variable exists.",
);

pub struct StateBroadcast;

const BROADCASTS: &[&str] = &[
    "broadcast_variables",
    "broadcast_global_variables",
    "BroadcastGlobalVariablesHook",
    "BroadcastGlobalVariablesCallback",
    "broadcast_object",
];

impl Invariant for StateBroadcast {
    fn code(&self) -> Code {
        STATE_BROADCAST
    }

    fn check(&self, program: &Program) -> Vec<Decision> {
        // Analysis code trains nothing: there is no state to share.
        if !program.uses_horovod() || !super::facts::takes_optimizer_steps(program) {
            return Vec::new();
        }
        let calls = program.calls();
        let mut decisions = Vec::new();
        for site in program
            .module
            .sites
            .iter()
            .filter(|site| !site.is_model_function)
        {
            let line = program.line(site.range.start);
            let scope = &program.module.scopes[site.scope];
            let decision = match site.pattern {
                TrainingPattern::Keras => match fit_call(calls, scope, &site.range) {
                    Some(fit) if matches!(fit.method(), Some("fit" | "fit_generator")) => {
                        fit_broadcast(program, fit, line)
                    }
                    _ => anywhere(program, calls, site.range.clone(), line),
                },
                TrainingPattern::Session => {
                    session_broadcast(program, calls, site.range.clone(), line)
                }
                _ => constant_start(program, calls, scope, &site.range)
                    .or_else(|| broadcast_too_late(program, calls, scope, &site.range))
                    .or_else(|| weights_kept_from_before(program, calls, scope, &site.range))
                    .unwrap_or_else(|| anywhere(program, calls, site.range.clone(), line)),
            };
            decisions.push(decision);
        }
        decisions
    }
}

fn fit_call<'c, 'p, 'a>(
    calls: &'c [ScopedCall<'p, 'a>],
    scope: &Scope,
    range: &std::ops::Range<usize>,
) -> Option<&'c ScopedCall<'p, 'a>> {
    calls
        .iter()
        .find(|call| std::ptr::eq(call.scope, scope) && call.range() == *range)
}

/// The broadcast callback among a `fit`'s callbacks.
fn fit_broadcast(program: &Program, fit: &ScopedCall, line: usize) -> Decision {
    let Some(callbacks) = crate::analysis::walk::keyword(fit.site.call, "callbacks") else {
        if let Some(unpacked) = fit
            .site
            .call
            .keywords
            .iter()
            .find(|keyword| keyword.arg.is_none())
        {
            return unpacked_callbacks(program, fit, &unpacked.value, line);
        }
        return Decision::new(
            STATE_BROADCAST,
            Verdict::Violated,
            fit.range(),
            format!("the `fit` at line {line} has no callbacks, so nothing broadcasts rank 0's initial weights: the workers train different models"),
        )
        .with_suggestion("pass `callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0)]`");
    };
    match holds_broadcast(program, fit.scope, &callbacks.value) {
        Some(true) => Decision::new(
            STATE_BROADCAST,
            Verdict::Proven,
            span(&callbacks.value),
            format!("the `fit` at line {line} broadcasts the initial weights"),
        ),
        Some(false) => Decision::new(
            STATE_BROADCAST,
            Verdict::Violated,
            span(&callbacks.value),
            format!("no callback of the `fit` at line {line} broadcasts rank 0's initial weights: the workers train different models"),
        )
        .with_suggestion("add `hvd.callbacks.BroadcastGlobalVariablesCallback(0)` first among the callbacks"),
        None => Decision::new(
            STATE_BROADCAST,
            Verdict::Unknown,
            span(&callbacks.value),
            format!("the callbacks of the `fit` at line {line} come from where the checker cannot follow, so it cannot show that rank 0's initial weights are broadcast"),
        )
        .with_suggestion("build the callback list in the function that calls `fit`, with `hvd.callbacks.BroadcastGlobalVariablesCallback(0)` in it"),
    }
}

/// `fit(**kwargs)`: the callbacks set as `kwargs["callbacks"] = [...]`.
fn unpacked_callbacks(program: &Program, fit: &ScopedCall, kwargs: &Expr, line: usize) -> Decision {
    if mentions_broadcast(program, fit.scope, kwargs) {
        return Decision::new(
            STATE_BROADCAST,
            Verdict::Proven,
            span(kwargs),
            format!("the `fit` at line {line} broadcasts the initial weights"),
        );
    }
    let name = dotted_name(kwargs).unwrap_or_else(|| "kwargs".to_string());
    let set = fit.scope.facts.statements.iter().find_map(|statement| {
        let rustpython_parser::ast::Stmt::Assign(assign) = statement else {
            return None;
        };
        let sets_callbacks = assign.targets.iter().any(|target| {
            matches!(target, Expr::Subscript(subscript)
                if dotted_name(&subscript.value).as_deref() == Some(name.as_str())
                    && matches!(subscript.slice.as_ref(), Expr::Constant(constant)
                        if constant.value == rustpython_parser::ast::Constant::Str("callbacks".to_string())))
        });
        sets_callbacks.then_some(assign.value.as_ref())
    });
    match set {
        Some(value) if holds_broadcast(program, fit.scope, value) == Some(true) => Decision::new(
            STATE_BROADCAST,
            Verdict::Proven,
            span(value),
            format!("the `fit` at line {line} broadcasts the initial weights"),
        ),
        _ => Decision::new(
            STATE_BROADCAST,
            Verdict::Unknown,
            fit.range(),
            format!("the callbacks of the `fit` at line {line} come through `**{name}`, and the checker cannot show that one broadcasts rank 0's initial weights"),
        )
        .with_suggestion("pass `callbacks=[hvd.callbacks.BroadcastGlobalVariablesCallback(0), ...]` to `fit` directly"),
    }
}

/// Whether a callbacks expression holds the broadcast callback: `None` when
/// it reads a name the scope never assigns a list to.
fn holds_broadcast(program: &Program, scope: &Scope, expr: &Expr) -> Option<bool> {
    if mentions_broadcast(program, scope, expr) {
        return Some(true);
    }
    let mut unresolved = false;
    let mut found = false;
    walk_expression(expr, &mut |inner| {
        let Some(name) = dotted_name(inner) else {
            return;
        };
        let assigned: Vec<_> = [scope, &program.module.scopes[0]]
            .into_iter()
            .flat_map(|scope| scope.facts.assignments.iter())
            .filter(|assignment| assignment.name == name)
            .collect();
        let added = scope.facts.calls.iter().any(|site| {
            matches!(site.call.func.as_ref(), Expr::Attribute(attribute)
                if dotted_name(&attribute.value).as_deref() == Some(name.as_str())
                    && matches!(attribute.attr.as_str(), "append" | "insert" | "extend"))
                && site
                    .call
                    .args
                    .iter()
                    .any(|argument| mentions_broadcast(program, scope, argument))
        });
        if added
            || assigned
                .iter()
                .any(|assignment| mentions_broadcast(program, scope, assignment.value))
        {
            found = true;
        } else if assigned.is_empty() || scope.parameters.contains(&name) {
            unresolved = true;
        }
    });
    if found {
        Some(true)
    } else if unresolved {
        None
    } else {
        Some(false)
    }
}

fn mentions_broadcast(program: &Program, scope: &Scope, expr: &Expr) -> bool {
    BROADCASTS
        .iter()
        .any(|function| program.calls_horovod_function(scope, expr, function))
}

/// A broadcast in the module, else in another module of the package.
fn anywhere(
    program: &Program,
    calls: &[ScopedCall],
    range: std::ops::Range<usize>,
    line: usize,
) -> Decision {
    if let Some(call) = calls.iter().find(|call| is_broadcast(call)) {
        return Decision::new(
            STATE_BROADCAST,
            Verdict::Proven,
            call.range(),
            format!(
                "the loop at line {line} starts from rank 0's state (broadcast at line {})",
                program.line(call.range().start)
            ),
        );
    }
    if let Some((path, elsewhere)) = program.package_calls_horovod(BROADCASTS) {
        return Decision::new(
            STATE_BROADCAST,
            Verdict::Proven,
            range,
            format!(
                "the loop at line {line} starts from rank 0's state (broadcast in {path}, line {elsewhere})"
            ),
        );
    }
    Decision::new(
        STATE_BROADCAST,
        Verdict::Violated,
        range,
        format!("nothing broadcasts rank 0's initial state to the other workers before the loop at line {line} trains: they train different models"),
    )
    .with_suggestion("broadcast once after the variables exist: `hvd.broadcast_variables(model.variables, root_rank=0)` after the first step, `sess.run(hvd.broadcast_global_variables(0))` after initialising, or `hvd.BroadcastGlobalVariablesHook(0)`")
}

/// The range of the outermost loop of `scope` holding `site`.
fn outermost_loop(scope: &Scope, site: &std::ops::Range<usize>) -> Option<std::ops::Range<usize>> {
    let path = crate::analysis::walk::path_to(scope.body, site)?;
    path.iter()
        .find(|statement| crate::analysis::walk::is_loop(statement))
        .map(|outermost| span(*outermost))
}

/// The loop holding `site` trains only variables made from constants.
fn constant_start(
    program: &Program,
    calls: &[ScopedCall],
    scope: &Scope,
    site: &std::ops::Range<usize>,
) -> Option<Decision> {
    let loop_range = outermost_loop(scope, site)?;
    super::constant_start::stepped_from_constants(program, calls, scope, &loop_range)
}

/// A Horovod call that broadcasts the initial state.
fn is_broadcast(call: &ScopedCall) -> bool {
    call.horovod_function()
        .is_some_and(|function| BROADCASTS.contains(&function))
}

/// A loop of `scope` that steps before the first broadcast of the same
/// scope starts (a pre-training loop, with the broadcast in the fine-tune
/// loop after it): its averaged steps move N different models.
fn broadcast_too_late(
    program: &Program,
    calls: &[ScopedCall],
    scope: &Scope,
    site: &std::ops::Range<usize>,
) -> Option<Decision> {
    let loop_range = outermost_loop(scope, site)?;
    let broadcasts: Vec<&ScopedCall> = calls
        .iter()
        .filter(|call| std::ptr::eq(call.scope, scope) && is_broadcast(call))
        .collect();
    let first = broadcasts.iter().map(|call| call.range().start).min()?;
    (first >= loop_range.end).then(|| {
        Decision::new(
            STATE_BROADCAST,
            Verdict::Violated,
            loop_range.clone(),
            format!(
                "the loop at line {} steps before the first broadcast (line {}): its averaged gradients move models that start from different weights on each worker",
                program.line(loop_range.start),
                program.line(first)
            ),
        )
        .with_suggestion("broadcast once after the first step of the first loop that trains")
    })
}

/// Weights read in the loop before its broadcast and written back after it
/// (a meta-learning step, `new = old + (new - old) * rate`): on the first
/// pass each worker writes back a mix of its own initial weights, and the
/// models stay apart from then on, the broadcast having run once.
fn weights_kept_from_before(
    program: &Program,
    calls: &[ScopedCall],
    scope: &Scope,
    site: &std::ops::Range<usize>,
) -> Option<Decision> {
    let loop_range = outermost_loop(scope, site)?;
    let in_loop: Vec<&ScopedCall> = calls
        .iter()
        .filter(|call| std::ptr::eq(call.scope, scope))
        .filter(|call| loop_range.contains(&call.range().start))
        .collect();
    let broadcast = in_loop
        .iter()
        .filter(|call| is_broadcast(call))
        .map(|call| call.range().start)
        .min()?;
    let read = in_loop
        .iter()
        .find(|call| call.method() == Some("get_weights") && call.range().start < broadcast)?;
    let written = in_loop
        .iter()
        .find(|call| call.method() == Some("set_weights") && call.range().start > broadcast)?;
    Some(
        Decision::new(
            STATE_BROADCAST,
            Verdict::Violated,
            read.range(),
            format!(
                "the weights read here, before the broadcast (line {}), are written back at line {}: on the first pass each worker writes back its own initial weights, and the models stay different",
                program.line(broadcast),
                program.line(written.range().start)
            ),
        )
        .with_suggestion("broadcast the model's variables before the loop, once the model is built"),
    )
}

/// A session's broadcast must come after its variables are initialised.
fn session_broadcast(
    program: &Program,
    calls: &[ScopedCall],
    range: std::ops::Range<usize>,
    line: usize,
) -> Decision {
    let found = anywhere(program, calls, range, line);
    if found.verdict != Verdict::Proven {
        return found;
    }
    // Several sessions that train, each initialising its own variables: one
    // broadcast does not reach the others. A session that only evaluates or
    // exports needs none.
    let train_ops = super::facts::train_op_names(program);
    let sessions = calls
        .iter()
        .filter(|call| {
            matches!(
                call.callee.as_deref(),
                Some("tensorflow.Session" | "tensorflow.InteractiveSession")
            )
        })
        .filter(|session| trains_in(program, session, calls, &train_ops))
        .count();
    let broadcasts = calls
        .iter()
        .filter(|call| call.horovod_function() == Some("broadcast_global_variables"))
        .count();
    if sessions > 1 && broadcasts < sessions {
        return Decision::new(
            STATE_BROADCAST,
            Verdict::Unknown,
            found.range.clone(),
            format!("the module makes {sessions} sessions but broadcasts in {broadcasts}: the checker cannot show each trained graph starts from rank 0's state"),
        )
        .with_suggestion("run `hvd.broadcast_global_variables(0)` after initialising the variables of each session that trains");
    }
    let broadcast = calls
        .iter()
        .find(|call| call.horovod_function() == Some("broadcast_global_variables"));
    let initialiser = calls.iter().find(|call| {
        program.has_effect(
            call,
            &crate::analysis::catalogue::Effect::InitialisesVariables,
        )
    });
    if let (Some(broadcast), Some(initialiser)) = (broadcast, initialiser)
        && std::ptr::eq(broadcast.scope, initialiser.scope)
        && span(broadcast.site.statement).start < span(initialiser.site.statement).start
        && initialiser.site.enclosing_loops.is_empty()
    {
        // Built before the initialiser is fine; run before it is not.
        let runs_before = matches!(
            broadcast.site.statement,
            rustpython_parser::ast::Stmt::Expr(_)
        );
        if runs_before {
            return Decision::new(
                STATE_BROADCAST,
                Verdict::Violated,
                broadcast.range(),
                format!(
                    "the broadcast at line {} runs before the variables are initialised (line {}): the initialiser then gives every worker its own weights",
                    program.line(broadcast.range().start),
                    program.line(initialiser.range().start)
                ),
            );
        }
    }
    found
}

/// Whether the session a call makes (`with tf.Session() as sess:`,
/// `sess = tf.Session()`) runs a train op, or may: it is handed to other
/// code, which the checker does not follow.
fn trains_in(
    program: &Program,
    session: &ScopedCall,
    calls: &[ScopedCall],
    train_ops: &[String],
) -> bool {
    let bound = session
        .scope
        .facts
        .assignments
        .iter()
        .find(|assignment| std::ptr::eq(assignment.statement, session.site.statement))
        .map(|assignment| assignment.name.clone());
    let Some(name) = bound else {
        return true;
    };
    // The session's own runs: in its function, inside its `with` block, or
    // after `sess = ...` and before the name is bound to another session.
    let made = span(session.site.statement);
    let rebound = session
        .scope
        .facts
        .assignments
        .iter()
        .filter(|assignment| {
            assignment.name == name && span(assignment.statement).start > made.start
        })
        .map(|assignment| span(assignment.statement).start)
        .min()
        .unwrap_or(usize::MAX);
    let is_with = matches!(
        session.site.statement,
        rustpython_parser::ast::Stmt::With(_)
    );
    let is_session = |expr: &Expr| dotted_name(expr).as_deref() == Some(name.as_str());
    calls.iter().any(|call| {
        let at = span(call.site.statement);
        let inside = if is_with {
            made.start <= at.start && at.end <= made.end
        } else {
            made.end <= at.start && at.start < rebound
        };
        let runs_a_train_op = matches!(call.site.call.func.as_ref(), Expr::Attribute(attribute)
            if attribute.attr.as_str() == "run" && is_session(&attribute.value))
            && call.site.call.args.first().is_some_and(|fetches| {
                let mut runs = false;
                walk_expression(fetches, &mut |inner| {
                    runs |= dotted_name(inner)
                        .is_some_and(|fetched| super::facts::is_train_op(&fetched, train_ops));
                });
                runs
            });
        if !std::ptr::eq(call.scope, session.scope) || !inside {
            return false;
        }
        if runs_a_train_op {
            return true;
        }
        // `net.train(sess, ...)`: the package's code handed the session may
        // run the step (a library's, `saver.restore(sess, path)`, does not).
        // What the catalogue knows is asked last: it is the costly question.
        let hands_the_session_over = call.site.call.args.iter().any(is_session)
            || call
                .site
                .call
                .keywords
                .iter()
                .any(|keyword| is_session(&keyword.value));
        let library = || {
            call.callee
                .as_deref()
                .is_some_and(|callee| callee.starts_with("tensorflow"))
                || !matches!(
                    program.known(call),
                    crate::analysis::effects::Known::Nothing
                )
        };
        hands_the_session_over && !library()
    })
}
