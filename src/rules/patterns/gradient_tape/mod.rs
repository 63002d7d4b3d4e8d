//! Custom training loops with `tf.GradientTape`.
//!
//! What it does: after each `with tf.GradientTape() as tape:` block (or before
//! the `tape.gradient` call inside it) wraps the tape with
//! `hvd.DistributedGradientTape`; after the first optimizer step broadcasts the
//! model's and the optimizer's variables from rank 0, once; divides the step
//! count of the loop that drives training.
//!
//! Why: the distributed tape averages gradients across workers; workers start
//! from different random weights until rank 0's are broadcast, and optimizer
//! slots exist only after the first `apply_gradients`, hence "after the first
//! step".
//!
//! "Once" is kept by a flag in the Python loop that calls the step: inside
//! `@tf.function`, Python runs only while tracing, so a flag there would be
//! read once and never again; a flag assigned inside a
//! function would need `global`. The flag lives in the function that owns the
//! loop, so neither problem arises.
//!
//! Assumptions (reported when broken): `apply_gradients` is a statement or
//! the right-hand side of an assignment; the loop calling the step is in the
//! same module.

mod manual_steps;

use crate::rules::BROADCAST_PLACEMENT;
use crate::rules::assumptions::FUNCTION_PASSED_AS_VALUE;
use crate::rules::passes::learning_rate::OPTIMIZER_NOT_FOUND;

use crate::rules::passes::broadcast::{BroadcastTargets, FlagHome, place_broadcast};
use rustpython_parser::ast::{self, Expr, Stmt};

use super::Pattern;
use crate::analysis::training::calls_in_scope;
use crate::analysis::training::find_call;
use crate::rules::context::RewriteContext;
use crate::rules::passes::loop_steps::{divide_loop_steps, leaves_work_whole};
use crate::rules::rewrite::ModuleRewrite;

use crate::analysis::training::{Scope, TrainingPattern, is_gradient_tape_call};
use crate::analysis::walk::{for_each_statement, walk_statement_expressions};
use crate::analysis::walk::{is_loop, path_to};
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::edit::Edit;
use crate::python::parse::span;

pub const APPLY_GRADIENTS_POSITION: Code = Code::new(
    "DST008",
    "apply-gradients-position",
    Severity::Error,
    "`apply_gradients` is neither an expression statement nor the right-hand side of an assignment, so the broadcast after it cannot be placed.",
);

pub const TRAINING_LOOP_SPREAD_OVER_FILES: Code = Code::new(
    "DST010",
    "training-loop-spread-over-files",
    Severity::Error,
    "No loop of the package calls the GradientTape step by its name (the loop is outside the package, or reaches the step another way): the one-time broadcast was not added.",
);

/// A GradientTape loop.
pub struct GradientTape;

impl Pattern for GradientTape {
    fn pattern(&self) -> TrainingPattern {
        TrainingPattern::GradientTape
    }

    fn description(&self) -> &'static str {
        "a GradientTape loop"
    }

    fn save_barrier(&self, context: &RewriteContext, save: &ast::ExprCall) -> Option<String> {
        let _ = save;
        Some(format!(
            "{}.allreduce({}.constant(0), name=\"save_barrier\")",
            context.hvd, context.tf
        ))
    }

    fn eager_barrier(&self, context: &RewriteContext, name: &str) -> Option<String> {
        Some(format!(
            "{}.allreduce({}.constant(0), name=\"{name}\")",
            context.hvd, context.tf
        ))
    }

    fn codes(&self) -> &'static [Code] {
        &[APPLY_GRADIENTS_POSITION, TRAINING_LOOP_SPREAD_OVER_FILES]
    }

    fn rewrite(&self, rewrite: &mut ModuleRewrite) {
        rewrite_module(rewrite);
    }
}

fn rewrite_module(rewrite: &mut ModuleRewrite) {
    let module = rewrite.module;
    // Last first: the wrap after a nested `with` goes in before the wrap after
    // the `with` around it, at the same offset, so each lands at its own depth.
    for site in module
        .sites
        .iter()
        .rev()
        .filter(|site| site.pattern == TrainingPattern::GradientTape)
    {
        let scope = &module.scopes[site.scope];
        let mut with_statement = None;
        for stmt in scope.facts.statements.iter().copied() {
            if span(stmt) == site.range {
                with_statement = Some(stmt);
            }
        }
        match with_statement {
            Some(Stmt::With(with)) => {
                let hvd = rewrite.hvd.clone();
                wrap_tape(rewrite, scope, with, &hvd);
            }
            // A call of a step function defined in another module.
            _ => broadcast_after_step_elsewhere(rewrite, site.scope, &site.range),
        }
    }
    let already_broadcast = rewrite.calls_method("broadcast_variables");
    let mut handled_scopes = Vec::new();
    for (index, scope) in module.scopes.iter().enumerate() {
        if handled_scopes.contains(&index) {
            continue;
        }
        let applies = apply_gradients_calls(scope);
        if applies.is_empty() {
            manual_steps::split_manual_step_loops(rewrite, index);
            continue;
        }
        handled_scopes.push(index);
        let nested = applies.iter().find(|(stmt, apply)| !match stmt {
            Stmt::Expr(expression) => span(expression.value.as_ref()) == span(*apply),
            Stmt::Assign(assign) => span(assign.value.as_ref()) == span(*apply),
            _ => false,
        });
        if let Some((_, apply)) = nested {
            rewrite.diagnose(
                Diagnostic::new(
                    APPLY_GRADIENTS_POSITION,
                    span(*apply),
                    "`apply_gradients` is nested in a larger expression, so the one-time broadcast of the initial variables could not be placed after it",
                )
                .with_suggestion("call `apply_gradients(...)` as a statement of its own"),
            );
            continue;
        }
        if already_broadcast {
            // An earlier run placed the broadcast and split the loop; whether
            // the loop could not be split still decides the learning rate.
            note_unsplit_loops(rewrite, index, &applies);
            continue;
        }
        broadcast_after_first_step(rewrite, index, &applies);
    }
}

/// The `x.apply_gradients(...)` calls of a scope, in order (a GAN step has one per model).
fn apply_gradients_calls<'a>(scope: &Scope<'a>) -> Vec<(&'a Stmt, &'a ast::ExprCall)> {
    calls_in_scope(scope)
        .into_iter()
        .filter(|(_, call)| matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "apply_gradients"))
        .collect()
}

/// The names the items of a `with` bind tapes to (`with tf.GradientTape() as
/// gen_tape, tf.GradientTape() as disc_tape:` binds two).
fn tape_names<'a>(scope: &Scope, with: &'a ast::StmtWith) -> Vec<&'a str> {
    with.items
        .iter()
        .filter(|item| is_gradient_tape_call(&scope.bindings, &item.context_expr))
        .filter_map(|item| match item.optional_vars.as_deref() {
            Some(Expr::Name(name)) => Some(name.id.as_str()),
            _ => None,
        })
        .collect()
}

/// `tape = <horovod>.DistributedGradientTape(tape)` after the `with` block (or
/// before `tape.gradient` inside it); `horovod` names `horovod.tensorflow`.
pub(super) fn wrap_tape(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    with: &ast::StmtWith,
    horovod: &str,
) {
    for tape in tape_names(scope, with) {
        if rewrite.is_assigned_from_horovod(scope.body, tape, "DistributedGradientTape") {
            continue;
        }
        let line = format!("{tape} = {horovod}.DistributedGradientTape({tape})");
        let gradient_inside = with
            .body
            .iter()
            .find(|stmt| statement_calls_method(stmt, tape, "gradient"));
        match gradient_inside {
            Some(stmt) => rewrite.insert_before_statement(&span(stmt), &[line]),
            None => {
                let with_range = span(with);
                let with_range = with_range.start
                    ..with
                        .body
                        .last()
                        .map_or(with_range.end, |last| span(last).end);
                rewrite.insert_after_statement(&with_range, &[line]);
            }
        }
    }
}

/// Whether `stmt` (or a statement nested in it) calls `receiver.method(...)`.
fn statement_calls_method(stmt: &Stmt, receiver: &str, method: &str) -> bool {
    let mut found = false;
    for_each_statement(std::slice::from_ref(stmt), false, &mut |inner| {
        walk_statement_expressions(inner, &mut |expr| {
            if let Expr::Call(call) = expr
                && let Expr::Attribute(attribute) = call.func.as_ref()
                && attribute.attr.as_str() == method
                && matches!(attribute.value.as_ref(), Expr::Name(name) if name.id.as_str() == receiver)
            {
                found = true;
            }
        });
    });
    found
}

fn broadcast_targets(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    apply: &ast::ExprCall,
) -> Option<BroadcastTargets> {
    let Expr::Attribute(attribute) = apply.func.as_ref() else {
        return None;
    };
    let optimizer = rewrite.expression_text(&attribute.value).to_string();
    let pairs = apply.args.first().or_else(|| {
        crate::analysis::walk::keyword(apply, "grads_and_vars").map(|keyword| &keyword.value)
    })?;
    let variables = match pairs {
        Expr::Call(call) if is_zip(call) => {
            variables_of(rewrite, resolve_alias(scope, call.args.get(1)?))
        }
        Expr::Name(name) => {
            // `pairs = zip(grads, variables)` is consumed by `apply_gradients`:
            // materialise it so that anything reading it later sees the pairs.
            let call = values_assigned_to(scope, name.id.as_str())
                .into_iter()
                .rev()
                .find_map(|value| match value {
                    Expr::Call(call) if is_zip(call) => Some(call),
                    _ => None,
                })?;
            let range = span(call);
            rewrite.edit(Edit::insertion(range.start, "list("));
            rewrite.edit(Edit::insertion(range.end, ")"));
            match call.args.get(1) {
                Some(variables) if is_simple(variables) => variables_of(rewrite, variables),
                _ => format!("[variable for _, variable in {}]", name.id),
            }
        }
        _ => return None,
    };
    Some(BroadcastTargets {
        variables,
        optimizer,
    })
}

/// `variables = net.trainable_variables` assigned once in the step: the
/// assigned expression, which a caller can name too.
fn resolve_alias<'a>(scope: &Scope<'a>, expr: &'a Expr) -> &'a Expr {
    let Expr::Name(name) = expr else {
        return expr;
    };
    match values_assigned_to(scope, name.id.as_str()).as_slice() {
        [value]
            if is_simple(value) || reads_only_globals(scope, value) || is_sum_of_simple(value) =>
        {
            value
        }
        _ => expr,
    }
}

/// `self.encoder.trainable_variables + self.decoder.trainable_variables`:
/// a sum of attribute chains, which a sibling method (or the step's caller,
/// for globals) can evaluate as written.
fn is_sum_of_simple(expr: &Expr) -> bool {
    match expr {
        Expr::BinOp(operation) if operation.op == ast::Operator::Add => {
            is_sum_of_simple(&operation.left) && is_sum_of_simple(&operation.right)
        }
        other => is_simple(other),
    }
}

/// Whether an expression reads no parameter or local of the step
/// (`list(weights.values()) + list(biases.values())` over module-level
/// dictionaries of hand-built variables): a caller can evaluate it as written.
fn reads_only_globals(scope: &Scope, expr: &Expr) -> bool {
    let locals = crate::analysis::bindings::assigned_names(scope.body);
    let mut global = true;
    crate::analysis::walk::walk_expression(expr, &mut |inner| {
        if let Expr::Name(name) = inner {
            let name = name.id.as_str();
            global &= !locals.contains(name) && !scope.parameters.iter().any(|p| p == name);
        }
    });
    global
}

/// The values `name = ...` assigns in a scope's own statements, in order.
fn values_assigned_to<'a>(scope: &Scope<'a>, name: &str) -> Vec<&'a Expr> {
    let mut values = Vec::new();
    for stmt in scope.facts.statements.iter().copied() {
        if let Stmt::Assign(assign) = stmt
            && assign
                .targets
                .iter()
                .any(|target| matches!(target, Expr::Name(target) if target.id.as_str() == name))
        {
            values.push(assign.value.as_ref());
        }
    }
    values
}

fn is_zip(call: &ast::ExprCall) -> bool {
    matches!(call.func.as_ref(), Expr::Name(name) if name.id.as_str() == "zip")
        && call.args.len() == 2
}

fn is_simple(expr: &Expr) -> bool {
    match expr {
        Expr::Name(_) => true,
        Expr::Attribute(attribute) => is_simple(&attribute.value),
        Expr::List(list) => list.elts.iter().all(is_simple),
        Expr::Tuple(tuple) => tuple.elts.iter().all(is_simple),
        _ => false,
    }
}

/// `model.trainable_variables` -> `model.variables` (non-trainable state too); anything else as written.
fn variables_of(rewrite: &ModuleRewrite, variables: &Expr) -> String {
    variables_text(rewrite.text, variables)
}

/// [`variables_of`] for an expression of `text` (this module's or another's).
fn variables_text(text: &str, variables: &Expr) -> String {
    if let Expr::Attribute(attribute) = variables
        && matches!(
            attribute.attr.as_str(),
            "trainable_variables" | "trainable_weights"
        )
    {
        return format!("{}.variables", &text[span(attribute.value.as_ref())]);
    }
    // The sum of two models' variables: each model's, summed.
    if let Expr::BinOp(operation) = variables
        && operation.op == ast::Operator::Add
        && is_sum_of_simple(variables)
    {
        return format!(
            "{} + {}",
            variables_text(text, &operation.left),
            variables_text(text, &operation.right)
        );
    }
    text[span(variables)].to_string()
}

fn broadcast_after_first_step(
    rewrite: &mut ModuleRewrite,
    scope_index: usize,
    applies: &[(&Stmt, &ast::ExprCall)],
) {
    let module = rewrite.module;
    let scope = &module.scopes[scope_index];
    // The first loop that steps runs first: its steps (a GAN has one per
    // model, in one loop) are where the broadcast goes. Steps of later
    // loops (a fine-tune after pre-training) start from weights already equal.
    let first_loop = |apply: &(&Stmt, &ast::ExprCall)| {
        path_to(scope.body, &span(apply.0)).and_then(|path| {
            path.iter()
                .rev()
                .find(|stmt| is_loop(stmt))
                .map(|stmt| span(*stmt))
        })
    };
    let leading = first_loop(&applies[0]);
    let (applies, later): (Vec<(&Stmt, &ast::ExprCall)>, Vec<_>) = applies
        .iter()
        .copied()
        .partition(|apply| leading.is_none() || first_loop(apply) == leading);
    broadcast_models_of_later_loops(rewrite, scope_index, &applies, &later);
    // Every model the step trains (a GAN has two) is broadcast, after the
    // last of its optimizer steps (each optimizer's slots exist only then).
    let (stmt, apply) = *applies.last().expect("at least one apply_gradients");
    let targets: Option<Vec<BroadcastTargets>> = applies
        .iter()
        .map(|(_, apply)| broadcast_targets(rewrite, scope, apply))
        .collect();
    let Some(targets) = targets else {
        rewrite.diagnose(Diagnostic::new(
            OPTIMIZER_NOT_FOUND,
            span(apply),
            "the variables given to `apply_gradients` could not be identified, so no broadcast of the initial variables was added",
        ).with_suggestion(format!("after the first step, call `{0}.broadcast_variables(<model>.variables, root_rank=0)` and `{0}.broadcast_variables(<optimizer>.variables(), root_rank=0)`", rewrite.hvd)));
        return;
    };
    // The step runs directly in a Python loop of this scope.
    if !scope.is_tf_function
        && let Some(path) = path_to(scope.body, &span(stmt))
        && let Some(outermost) = path.iter().find(|stmt| is_loop(stmt))
    {
        let innermost = path.iter().rev().find(|stmt| is_loop(stmt)).copied();
        broadcast_before_loop(rewrite, outermost, stmt, &targets, None);
        if let Some(innermost) = innermost {
            divide_loop_steps(rewrite, innermost);
        }
        return;
    }
    // The step is a function (often a `@tf.function`): find the Python loop that calls it.
    let step_name = scope.name().to_string();
    if broadcast_in_caller_loop(rewrite, scope_index, &step_name, apply, &targets) {
        return;
    }
    if let Some((path, line)) = module.step_callers.get(&scope_index) {
        rewrite.diagnose(Diagnostic::new(
            BROADCAST_PLACEMENT,
            span(apply),
            format!("`{step_name}` is called by the training loop in {path} ({line}): the one-time broadcast and the step count are rewritten there"),
        ));
        return;
    }
    report_unplaced_broadcast(rewrite, scope_index, &step_name, apply, &targets);
}

/// Loops after the first that step models the first does not (a head
/// trained on a frozen encoder) train too: each such loop broadcasts its new
/// models once, after its own first step, and its steps are divided. A later
/// loop stepping the first loop's models (an evaluation's fine-tune, a
/// second stage) is left as it is.
fn broadcast_models_of_later_loops(
    rewrite: &mut ModuleRewrite,
    scope_index: usize,
    first: &[(&Stmt, &ast::ExprCall)],
    later: &[(&Stmt, &ast::ExprCall)],
) {
    let scope = &rewrite.module.scopes[scope_index];
    if scope.is_tf_function {
        return;
    }
    let mut broadcast: Vec<String> = first
        .iter()
        .filter_map(|(_, apply)| broadcast_targets(rewrite, scope, apply))
        .map(|target| target.variables)
        .collect();
    for (stmt, apply) in later {
        let Some(target) = broadcast_targets(rewrite, scope, apply) else {
            continue;
        };
        if broadcast.contains(&target.variables) {
            continue;
        }
        let Some(path) = path_to(scope.body, &span(*stmt)) else {
            continue;
        };
        let Some(outermost) = path.iter().find(|statement| is_loop(statement)) else {
            continue;
        };
        broadcast.push(target.variables.clone());
        broadcast_before_loop(rewrite, outermost, stmt, &[target], None);
        if let Some(innermost) = path.iter().rev().find(|statement| is_loop(statement)) {
            divide_loop_steps(rewrite, innermost);
        }
    }
}

/// The broadcast through this module's Horovod, its flag set before `outermost`.
fn broadcast_before_loop(
    rewrite: &mut ModuleRewrite,
    outermost: &Stmt,
    after: &Stmt,
    targets: &[BroadcastTargets],
    step_name: Option<&str>,
) {
    let horovod = rewrite.hvd.clone();
    let home = FlagHome::BeforeLoop(outermost);
    place_broadcast(rewrite, &horovod, home, after, targets, step_name);
}

/// Places the broadcast in a Python loop of this module that calls the step
/// function by name; returns whether the step was handled (placed, or
/// reported because the targets cannot be named there).
fn broadcast_in_caller_loop(
    rewrite: &mut ModuleRewrite,
    scope_index: usize,
    step_name: &str,
    apply: &ast::ExprCall,
    targets: &[BroadcastTargets],
) -> bool {
    let module = rewrite.module;
    let scope = &module.scopes[scope_index];
    for (caller_index, caller) in module.scopes.iter().enumerate() {
        if caller_index == scope_index || caller.is_tf_function {
            continue;
        }
        for (call_statement, call) in calls_in_scope(caller) {
            let calls_step = matches!(call.func.as_ref(), Expr::Name(name) if name.id.as_str() == step_name)
                || matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == step_name && matches!(attribute.value.as_ref(), Expr::Name(receiver) if receiver.id.as_str() == "self"));
            if !calls_step {
                continue;
            }
            let Some(path) = path_to(caller.body, &span(call_statement)) else {
                continue;
            };
            let Some(outermost) = path.iter().find(|stmt| is_loop(stmt)) else {
                continue;
            };
            let translated: Option<Vec<BroadcastTargets>> = targets
                .iter()
                .map(|targets| translate_targets(rewrite, scope, call, targets))
                .collect();
            let Some(translated) = translated else {
                rewrite.diagnose(Diagnostic::new(
                    OPTIMIZER_NOT_FOUND,
                    span(apply),
                    format!("the model or optimizer of `{step_name}` is local to it, so the broadcast after its first call could not name them"),
                ).with_suggestion(format!("pass the model and optimizer to `{step_name}` as arguments, or broadcast inside it on the first batch (Horovod's `first_batch` pattern)")));
                return true;
            };
            let innermost = path.iter().rev().find(|stmt| is_loop(stmt)).copied();
            broadcast_before_loop(
                rewrite,
                outermost,
                call_statement,
                &translated,
                Some(step_name),
            );
            if let Some(innermost) = innermost {
                divide_loop_steps(rewrite, innermost);
            }
            return true;
        }
    }
    false
}

/// No loop of this module calls the step: say why no broadcast was added.
fn report_unplaced_broadcast(
    rewrite: &mut ModuleRewrite,
    scope_index: usize,
    step_name: &str,
    apply: &ast::ExprCall,
    targets: &[BroadcastTargets],
) {
    let module = rewrite.module;
    let scope = &module.scopes[scope_index];
    let used_as_value = rewrite
        .sink
        .diagnostics
        .iter()
        .any(|diagnostic| diagnostic.code == FUNCTION_PASSED_AS_VALUE)
        || crate::analysis::walk::mentions_name_outside_calls(&module.module.body, step_name);
    let (code, message) = if scope.function.is_some() && used_as_value {
        (
            FUNCTION_PASSED_AS_VALUE,
            format!(
                "no loop calls `{step_name}` by its name (it is used as a value), so the one-time broadcast of the initial variables was not added"
            ),
        )
    } else if scope.function.is_some() {
        (
            TRAINING_LOOP_SPREAD_OVER_FILES,
            format!(
                "no loop in this module calls `{step_name}`: the training loop is spread over several files, so the one-time broadcast of the initial variables was not added"
            ),
        )
    } else {
        (
            OPTIMIZER_NOT_FOUND,
            "the optimizer step is not inside a loop; no broadcast was added".to_string(),
        )
    };
    rewrite.diagnose(Diagnostic::new(code, span(apply), message).with_suggestion(format!(
        "after the first call of the step, run `{0}.broadcast_variables({1}, root_rank=0)` and `{0}.broadcast_variables({2}.variables(), root_rank=0)` once",
        rewrite.hvd, targets[0].variables, targets[0].optimizer
    )));
}

/// The loop here calls a step function of another module: broadcast after
/// its first call, in that function's arguments, and divide the loop.
fn broadcast_after_step_elsewhere(
    rewrite: &mut ModuleRewrite,
    scope_index: usize,
    range: &std::ops::Range<usize>,
) {
    let analysis = rewrite.analysis;
    let scope = &rewrite.module.scopes[scope_index];
    let Some((stmt, call)) = find_call(scope, range) else {
        return;
    };
    let Some(callee) = crate::analysis::training::callee_name(
        analysis.package,
        rewrite.module.module,
        scope,
        &call.func,
    ) else {
        return;
    };
    let Some((step_module, step)) = analysis.modules.iter().find_map(|other| {
        other
            .scopes
            .iter()
            .find(|candidate| candidate.qualified_name == callee)
            .map(|step| (other, step))
    }) else {
        return;
    };
    let step_name = step.name().to_string();
    let applies = apply_gradients_calls(step);
    let targets: Option<Vec<BroadcastTargets>> = (!applies.is_empty())
        .then(|| {
            applies
                .iter()
                .map(|(_, apply)| {
                    step_targets(&step_module.module.source.text, step, apply)
                        .and_then(|targets| translate_targets(rewrite, step, call, &targets))
                })
                .collect()
        })
        .flatten();
    let Some(targets) = targets else {
        rewrite.diagnose(Diagnostic::new(
            OPTIMIZER_NOT_FOUND,
            span(call),
            format!("the model or optimizer that `{step_name}` trains could not be named here, so no broadcast of the initial variables was added"),
        ).with_suggestion(format!("pass the model and optimizer to `{step_name}` as arguments, or after its first call run `{0}.broadcast_variables(<model>.variables, root_rank=0)` and `{0}.broadcast_variables(<optimizer>.variables(), root_rank=0)`", rewrite.hvd)));
        return;
    };
    let Some(path) = path_to(scope.body, &span(stmt)) else {
        return;
    };
    let (Some(outermost), Some(innermost)) = (
        path.iter().find(|stmt| is_loop(stmt)).copied(),
        path.iter().rev().find(|stmt| is_loop(stmt)).copied(),
    ) else {
        return;
    };
    if !rewrite.calls_method("broadcast_variables") {
        broadcast_before_loop(rewrite, outermost, stmt, &targets, Some(&step_name));
    }
    divide_loop_steps(rewrite, innermost);
}

/// What a step function of another module broadcasts, in its own names:
/// `optimizer.apply_gradients(zip(grads, model.trainable_variables))`.
fn step_targets(text: &str, step: &Scope, apply: &ast::ExprCall) -> Option<BroadcastTargets> {
    let Expr::Attribute(attribute) = apply.func.as_ref() else {
        return None;
    };
    let Expr::Call(pairs) = apply.args.first()? else {
        return None;
    };
    if !is_zip(pairs) {
        return None;
    }
    let variables = resolve_alias(step, pairs.args.get(1)?);
    if !is_simple(variables) {
        return None;
    }
    Some(BroadcastTargets {
        variables: variables_text(text, variables),
        optimizer: text[span(attribute.value.as_ref())].to_string(),
    })
}

/// Rewrites names local to the step function into the caller's arguments.
fn translate_targets(
    rewrite: &ModuleRewrite,
    step: &Scope,
    call: &ast::ExprCall,
    targets: &BroadcastTargets,
) -> Option<BroadcastTargets> {
    let translate = |text: &str| -> Option<String> {
        let root_end = text
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(text.len());
        let (root, rest) = text.split_at(root_end);
        if root.is_empty() {
            return Some(text.to_string());
        }
        let is_method = step.class.is_some();
        if is_method && step.parameters.first().is_some_and(|first| first == root) {
            // `self.net` in the step is `self.net` in the sibling method that calls `self.step(...)`.
            return Some(text.to_string());
        }
        if let Some(position) = step
            .parameters
            .iter()
            .position(|parameter| parameter == root)
        {
            let argument = crate::analysis::walk::keyword(call, root)
                .map(|keyword| &keyword.value)
                .or_else(|| {
                    call.args.get(if is_method {
                        position.checked_sub(1)?
                    } else {
                        position
                    })
                })?;
            if matches!(argument, Expr::Starred(_)) {
                return None;
            }
            return Some(format!("{}{rest}", rewrite.expression_text(argument)));
        }
        let local = crate::analysis::bindings::assigned_names(step.body).contains(root);
        if local { None } else { Some(text.to_string()) }
    };
    if targets.variables.starts_with('[') {
        // A list of hand-built variables: each must be visible in the caller.
        let names: Vec<&str> = targets
            .variables
            .trim_matches(['[', ']'])
            .split(',')
            .map(str::trim)
            .collect();
        let translated: Option<Vec<String>> = names.iter().map(|name| translate(name)).collect();
        return Some(BroadcastTargets {
            variables: format!("[{}]", translated?.join(", ")),
            optimizer: translate(&targets.optimizer)?,
        });
    }
    Some(BroadcastTargets {
        variables: translate(&targets.variables)?,
        optimizer: translate(&targets.optimizer)?,
    })
}

/// Marks the work as not split when a loop driving this step (in its own
/// scope, or a Python loop calling it by name) is one the split leaves whole.
fn note_unsplit_loops(
    rewrite: &mut ModuleRewrite,
    scope_index: usize,
    applies: &[(&Stmt, &ast::ExprCall)],
) {
    let module = rewrite.module;
    let scope = &module.scopes[scope_index];
    let Some((stmt, _)) = applies.last() else {
        return;
    };
    let mut loops = Vec::new();
    if let Some(path) = path_to(scope.body, &span(*stmt)) {
        loops.extend(path.iter().rev().find(|stmt| is_loop(stmt)).copied());
    }
    let step_name = scope.name();
    for caller in module.scopes.iter().filter(|caller| !caller.is_tf_function) {
        for (call_statement, call) in calls_in_scope(caller) {
            let calls_step =
                matches!(call.func.as_ref(), Expr::Name(name) if name.id.as_str() == step_name);
            if calls_step && let Some(path) = path_to(caller.body, &span(call_statement)) {
                loops.extend(path.iter().rev().find(|stmt| is_loop(stmt)).copied());
            }
        }
    }
    if loops
        .iter()
        .any(|training_loop| leaves_work_whole(rewrite, training_loop))
    {
        rewrite.learning_rates.leave_rates();
    }
}
