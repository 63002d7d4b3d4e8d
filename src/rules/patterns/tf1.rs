//! Shared pieces of the TF1 patterns: wrapping `tf.train`
//! optimizers in `hvd.DistributedOptimizer` (splitting the chained
//! `Optimizer(...).minimize(...)`: wrapping the train op it returns would
//! average nothing), pinning the GPU through
//! the session's `ConfigProto`, and the broadcast hook.

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::analysis::training::calls_in_scope;
use crate::rules::passes::learning_rate::scaled_call_text;
use crate::rules::rewrite::ModuleRewrite;

use crate::analysis::library;
use crate::analysis::training::{Scope, callee_name};
use crate::analysis::walk::{dotted_name, is_scope, keyword};
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::edit::Edit;
use crate::python::parse::span;

pub const SESSION_CONFIG_NOT_FOUND: Code = Code::new(
    "DST111",
    "session-config-not-found",
    Severity::Warning,
    "The `config=` given to a session or RunConfig could not be found, so its GPU was not pinned.",
);

/// The canonical callee of a call in a scope.
pub fn canonical_callee(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    call: &ast::ExprCall,
) -> Option<String> {
    callee_name(
        rewrite.analysis.package,
        rewrite.module.module,
        scope,
        &call.func,
    )
}

fn is_tf1_optimizer_call(rewrite: &ModuleRewrite, scope: &Scope, expr: &Expr) -> bool {
    matches!(expr, Expr::Call(call) if canonical_callee(rewrite, scope, call).is_some_and(|callee| library::is_tf1_optimizer(&callee)))
}

/// The TF1 API prefix a call is written with (`tf`, `tf.compat.v1`), so that
/// generated TF1 code reaches the same API (`tf.ConfigProto` is only under
/// `tf.compat.v1` in TF2).
pub fn tf1_prefix(rewrite: &ModuleRewrite, func: &Expr, suffix: &str) -> String {
    if let Some(text) = dotted_name(func)
        && let Some(prefix) = text.strip_suffix(suffix)
        && let Some(prefix) = prefix.strip_suffix('.')
    {
        return prefix.to_string();
    }
    compat_v1_name(rewrite)
}

/// Where `ConfigProto` is for an API that TF2 kept (`tf.estimator`): under the
/// call's prefix only when that is `compat.v1`, else under `tf.compat.v1`
/// (there since TF 1.13), since TF2 has no `tf.ConfigProto`.
pub fn config_proto_prefix(rewrite: &ModuleRewrite, call_prefix: &str) -> String {
    let bindings = &rewrite.module.module.bindings;
    let is_compat = call_prefix.ends_with("compat.v1")
        || bindings.iter().any(|(name, binding)| {
            name == call_prefix && binding.qualified == "tensorflow.compat.v1"
        });
    if is_compat {
        call_prefix.to_string()
    } else {
        compat_v1_name(rewrite)
    }
}

/// The module's name for `tensorflow.compat.v1`, or `<tf>.compat.v1`.
pub fn compat_v1_name(rewrite: &crate::rules::context::RewriteContext) -> String {
    rewrite
        .module
        .module
        .bindings
        .iter()
        .filter(|(_, binding)| binding.qualified == "tensorflow.compat.v1")
        .map(|(name, _)| name.clone())
        .min()
        .unwrap_or_else(|| format!("{}.compat.v1", rewrite.tf))
}

/// Wraps every TF1 optimizer the module builds in `hvd.DistributedOptimizer`.
pub fn wrap_optimizers(rewrite: &mut ModuleRewrite) {
    let module = rewrite.module;
    for scope in &module.scopes {
        for stmt in scope.facts.statements.iter().filter(|stmt| !is_scope(stmt)) {
            wrap_in_statement(rewrite, scope, stmt);
            allreduce_manual_gradients(rewrite, scope, stmt);
        }
    }
}

/// `grads = tf.gradients(loss, variables)` then `apply_gradients(zip(grads,
/// ...))`: the wrapped optimizer averages only what its own
/// `compute_gradients` makes, so these are averaged where they are made.
fn allreduce_manual_gradients(rewrite: &mut ModuleRewrite, scope: &Scope, stmt: &Stmt) {
    let Stmt::Assign(assign) = stmt else {
        return;
    };
    let (Expr::Call(call), [Expr::Name(target)]) =
        (assign.value.as_ref(), assign.targets.as_slice())
    else {
        allreduce_nested_gradients(rewrite, scope, stmt);
        return;
    };
    let makes_gradients = canonical_callee(rewrite, scope, call)
        .is_some_and(|callee| library::canonical_name(&callee) == "tensorflow.gradients");
    if !makes_gradients {
        allreduce_nested_gradients(rewrite, scope, stmt);
        return;
    }
    let name = target.id.as_str();
    if !makes_gradients
        || !reaches_apply_gradients(rewrite, stmt)
        || rewrite.is_assigned_from_horovod(scope.body, name, "allreduce")
        || !rewrite.owns_its_lines(&span(stmt))
    {
        return;
    }
    let line = format!(
        "{name} = [{}.allreduce(gradient) if gradient is not None else None for gradient in {name}]",
        rewrite.hvd
    );
    rewrite.insert_after_statement(&span(stmt), &[line]);
}

/// `tf.clip_by_global_norm(tf.gradients(cost, tvars), clip)`: the
/// gradients are averaged where they are made, before anything reads them.
fn allreduce_nested_gradients(rewrite: &mut ModuleRewrite, scope: &Scope, stmt: &Stmt) {
    if !reaches_apply_gradients(rewrite, stmt) || !rewrite.owns_its_lines(&span(stmt)) {
        return;
    }
    // Gradients already averaged where they are made (an earlier run's
    // `[hvd.allreduce(gradient) ... for gradient in tf.gradients(...)]`).
    let mut averaged_already = Vec::new();
    crate::analysis::walk::walk_statement_expressions(stmt, &mut |expr| {
        if let Expr::ListComp(comprehension) = expr
            && calls_horovod_allreduce(rewrite, &comprehension.elt)
        {
            averaged_already.extend(
                comprehension
                    .generators
                    .iter()
                    .map(|generator| span(&generator.iter)),
            );
        }
    });
    let mut nested = Vec::new();
    crate::analysis::walk::walk_statement_expressions(stmt, &mut |expr| {
        if let Expr::Call(call) = expr
            && canonical_callee(rewrite, scope, call)
                .is_some_and(|callee| library::canonical_name(&callee) == "tensorflow.gradients")
            && !averaged_already.contains(&span(expr))
        {
            nested.push(span(expr));
        }
    });
    for range in nested {
        let text = rewrite.source(range.clone()).to_string();
        let averaged = format!(
            "[{}.allreduce(gradient) if gradient is not None else None for gradient in {text}]",
            rewrite.hvd
        );
        rewrite.edit(Edit::replacement(range, averaged));
    }
}

/// Whether the gradients a statement makes reach an `apply_gradients`: made
/// inside one, or bound to names one reads, through the assignments that
/// pass them on (clipping, zipping). A gradient taken for another use
/// (`tf.gradients(q, actions)`, fed to another gradient as `grad_ys`) holds
/// one value per example, not a weight update: averaging it across workers
/// would mix their examples.
fn reaches_apply_gradients(rewrite: &ModuleRewrite, stmt: &Stmt) -> bool {
    let applies = |expr: &Expr| {
        let mut found = false;
        crate::analysis::walk::walk_expression(expr, &mut |inner| {
            found |= matches!(inner, Expr::Call(call) if matches!(call.func.as_ref(),
                Expr::Attribute(attribute) if attribute.attr.as_str() == "apply_gradients"));
        });
        found
    };
    let mut own = false;
    crate::analysis::walk::walk_statement_expressions(stmt, &mut |expr| own |= applies(expr));
    if own {
        return true;
    }
    let Stmt::Assign(assign) = stmt else {
        return false;
    };
    let mut reached: Vec<String> = assign.targets.iter().flat_map(bound_names).collect();
    let mentions_reached = |expr: &Expr, reached: &[String]| {
        let mut found = false;
        crate::analysis::walk::walk_expression(expr, &mut |inner| {
            found |= dotted_name(inner).is_some_and(|name| reached.contains(&name));
        });
        found
    };
    let assignments: Vec<_> = rewrite
        .module
        .scopes
        .iter()
        .flat_map(|scope| scope.facts.assignments.iter())
        .collect();
    loop {
        let before = reached.len();
        for assignment in &assignments {
            if !reached.contains(&assignment.name) && mentions_reached(assignment.value, &reached) {
                reached.push(assignment.name.clone());
            }
        }
        if reached.len() == before {
            break;
        }
    }
    rewrite.module.scopes.iter().any(|scope| {
        calls_in_scope(scope).into_iter().any(|(_, call)| {
            matches!(call.func.as_ref(), Expr::Attribute(attribute)
                if attribute.attr.as_str() == "apply_gradients")
                && call
                    .args
                    .iter()
                    .chain(call.keywords.iter().map(|keyword| &keyword.value))
                    .any(|argument| mentions_reached(argument, &reached))
        })
    })
}

/// The names an assignment target binds, dotted (`self.grads`), a tuple's
/// elements each.
fn bound_names(target: &Expr) -> Vec<String> {
    match target {
        Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
            elts.iter().flat_map(bound_names).collect()
        }
        other => dotted_name(other).into_iter().collect(),
    }
}

/// Whether an expression calls Horovod's `allreduce` anywhere in it
/// (`hvd.allreduce(gradient) if gradient is not None else None`).
fn calls_horovod_allreduce(rewrite: &ModuleRewrite, expr: &Expr) -> bool {
    let mut found = false;
    crate::analysis::walk::walk_expression(expr, &mut |inner| {
        found |= matches!(inner, Expr::Call(call) if matches!(call.func.as_ref(),
            Expr::Attribute(attribute) if attribute.attr.as_str() == "allreduce"
                && rewrite.is_horovod_expression(&attribute.value)));
    });
    found
}

fn wrap_in_statement(rewrite: &mut ModuleRewrite, scope: &Scope, stmt: &Stmt) {
    let hvd = rewrite.hvd.clone();
    if let Stmt::Assign(assign) = stmt {
        // `opt = tf.train.AdamOptimizer(lr)` -> wrap on the next line.
        if is_tf1_optimizer_call(rewrite, scope, &assign.value)
            && let [Expr::Name(target)] = assign.targets.as_slice()
        {
            let name = target.id.as_str();
            if !rewrite.is_assigned_from_horovod(scope.body, name, "DistributedOptimizer")
                && rewrite.owns_its_lines(&span(stmt))
            {
                rewrite.insert_after_statement(
                    &span(stmt),
                    &[format!("{name} = {hvd}.DistributedOptimizer({name})")],
                );
            } else if !rewrite.is_assigned_from_horovod(scope.body, name, "DistributedOptimizer") {
                wrap_inline(rewrite, &assign.value);
            }
            return;
        }
        // `train_op = tf.train.AdamOptimizer(lr).minimize(loss)`: the optimizer
        // is wrapped, never the train op (a train op has no gradients to average), so the chain is split.
        if let Expr::Call(minimize) = assign.value.as_ref()
            && let Expr::Attribute(attribute) = minimize.func.as_ref()
            && attribute.attr.as_str() == "minimize"
            && let Expr::Call(optimizer) = attribute.value.as_ref()
            && is_tf1_optimizer_call(rewrite, scope, &attribute.value)
            && rewrite.owns_its_lines(&span(stmt))
        {
            let name = rewrite.fresh(&["optimizer", "hvd_optimizer"]);
            let construction = scaled_call_text(rewrite, scope, optimizer);
            rewrite.insert_before_statement(
                &span(stmt),
                &[
                    format!("{name} = {construction}"),
                    format!("{name} = {hvd}.DistributedOptimizer({name})"),
                ],
            );
            rewrite.edit(Edit::replacement(span(optimizer), name));
            return;
        }
    }
    // Anywhere else (an argument, a chain in an expression): wrap where it stands.
    let mut inline = Vec::new();
    crate::analysis::walk::walk_statement_expressions(stmt, &mut |expr| {
        if is_tf1_optimizer_call(rewrite, scope, expr) {
            inline.push(expr);
        }
    });
    for expr in inline {
        if !is_inside_distributed_optimizer(rewrite, stmt, expr) {
            wrap_inline(rewrite, expr);
        }
    }
}

fn is_inside_distributed_optimizer(rewrite: &ModuleRewrite, stmt: &Stmt, target: &Expr) -> bool {
    let target = span(target);
    let mut inside = false;
    crate::analysis::walk::walk_statement_expressions(stmt, &mut |expr| {
        if let Expr::Call(call) = expr
            && rewrite.calls_horovod_attribute(&call.func, "DistributedOptimizer")
            && call.args.iter().any(|argument| span(argument) == target)
        {
            inside = true;
        }
    });
    inside
}

fn wrap_inline(rewrite: &mut ModuleRewrite, expr: &Expr) {
    let range = span(expr);
    rewrite.edit(Edit::insertion(
        range.start,
        format!("{}.DistributedOptimizer(", rewrite.hvd),
    ));
    rewrite.edit(Edit::insertion(range.end, ")"));
}

/// Pins the GPU of a session (or `RunConfig`) built by `call`, inside `statement`:
/// `config.gpu_options.visible_device_list = str(hvd.local_rank())` on its
/// `ConfigProto`, created when the call passes none.
pub fn pin_session_config(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    statement: &Stmt,
    call: &ast::ExprCall,
    keyword_name: &str,
    prefix: &str,
) {
    if rewrite.mentions("visible_device_list") && rewrite.calls_method("local_rank") {
        return;
    }
    let pin = |rewrite: &ModuleRewrite, name: &str| {
        format!(
            "{name}.gpu_options.visible_device_list = str({})",
            rewrite.horovod_call("local_rank")
        )
    };
    match keyword(call, keyword_name).map(|keyword| &keyword.value) {
        None => {
            let name = rewrite.fresh(&["config", "session_config"]);
            let lines = [
                format!("{name} = {prefix}.ConfigProto()"),
                pin(rewrite, &name),
            ];
            rewrite.insert_before_statement(&span(statement), &lines);
            rewrite.add_keyword(call, keyword_name, &name);
        }
        Some(Expr::Name(name)) => {
            let name = name.id.to_string();
            let mut assignment = None;
            for candidate in [scope, &rewrite.module.scopes[0]] {
                for stmt in candidate.facts.statements.iter().copied() {
                    if let Stmt::Assign(assign) = stmt
                        && assign.targets.iter().any(|target| matches!(target, Expr::Name(target) if target.id.as_str() == name))
                        && let Expr::Call(value) = assign.value.as_ref()
                        && canonical_callee(rewrite, candidate, value).as_deref() == Some("tensorflow.ConfigProto")
                    {
                        assignment = Some(span(stmt));
                    }
                }
                if assignment.is_some() {
                    break;
                }
            }
            match assignment {
                Some(range) if rewrite.owns_its_lines(&range) => {
                    let line = pin(rewrite, &name);
                    rewrite.insert_after_statement(&range, &[line]);
                }
                _ => {
                    let line = pin(rewrite, &name);
                    rewrite.diagnose(
                        Diagnostic::new(SESSION_CONFIG_NOT_FOUND, span(call), format!("`{name}` is not built with ConfigProto(...) in this function or at module level, so its GPU was not pinned"))
                            .with_suggestion(format!("after `{name}` is built, add `{line}`")),
                    );
                }
            }
        }
        Some(Expr::Call(inline))
            if canonical_callee(rewrite, scope, inline).as_deref()
                == Some("tensorflow.ConfigProto") =>
        {
            let name = rewrite.fresh(&["config", "session_config"]);
            let text = rewrite
                .expression_text(&Expr::Call(inline.clone()))
                .to_string();
            let lines = [format!("{name} = {text}"), pin(rewrite, &name)];
            rewrite.insert_before_statement(&span(statement), &lines);
            rewrite.edit(Edit::replacement(span(inline), name));
        }
        Some(other) => {
            let text = rewrite.expression_text(other).to_string();
            rewrite.diagnose(
                Diagnostic::new(SESSION_CONFIG_NOT_FOUND, span(other), format!("the session config `{text}` could not be followed, so its GPU was not pinned"))
                    .with_suggestion(format!("set `.gpu_options.visible_device_list = str({})` on it", rewrite.horovod_call("local_rank"))),
            );
        }
    }
}

/// Adds `hvd.BroadcastGlobalVariablesHook(0)` to a `hooks=` argument, as a new list
/// (`hooks.append(...)` returns None, which `hooks=` would then receive).
pub fn add_broadcast_hook(rewrite: &mut ModuleRewrite, call: &ast::ExprCall) {
    let hook = format!("{}.BroadcastGlobalVariablesHook(0)", rewrite.hvd);
    match keyword(call, "hooks").map(|keyword| &keyword.value) {
        None => rewrite.add_keyword(call, "hooks", &format!("[{hook}]")),
        Some(value) if rewrite.calls_horovod_attribute(value, "BroadcastGlobalVariablesHook") => {}
        // A Horovod hook held in a name (`bcast_hook = hvd.BroadcastGlobalVariablesHook(0)`).
        Some(Expr::List(list))
            if list
                .elts
                .iter()
                .any(|hook| rewrite.holds_horovod_object(hook)) => {}
        Some(Expr::List(list)) => match list.elts.last() {
            Some(last) => rewrite
                .sink
                .edit(Edit::insertion(span(last).end, format!(", {hook}"))),
            None => rewrite
                .sink
                .edit(Edit::insertion(span(list).start + 1, hook)),
        },
        Some(Expr::Name(name))
            if rewrite.module.scopes.iter().any(|scope| {
                rewrite.is_assigned_from_horovod(
                    scope.body,
                    name.id.as_str(),
                    "BroadcastGlobalVariablesHook",
                )
            }) => {}
        Some(other) => {
            let text = rewrite.expression_text(other).to_string();
            rewrite
                .sink
                .edit(Edit::replacement(span(other), format!("[*{text}, {hook}]")));
        }
    }
}

/// `dir` -> `dir if hvd.rank() == 0 else None`: only rank 0 writes checkpoints.
pub fn rank_zero_directory(rewrite: &mut ModuleRewrite, call: &ast::ExprCall, keyword_name: &str) {
    let Some(value) = keyword(call, keyword_name).map(|keyword| &keyword.value) else {
        return;
    };
    if matches!(
        value,
        Expr::Constant(ast::ExprConstant {
            value: ast::Constant::None,
            ..
        })
    ) || rewrite.is_rank_dependent(value)
    {
        return;
    }
    let text = rewrite.expression_text(value);
    let text = if matches!(value, Expr::IfExp(_) | Expr::Lambda(_) | Expr::NamedExpr(_)) {
        format!("({text})")
    } else {
        text.to_string()
    };
    let replacement = format!("{text} if {} else None", rewrite.rank_zero_test());
    rewrite
        .sink
        .edit(Edit::replacement(span(value), replacement));
}

/// Divides the step keywords of a call (`last_step=`, `steps=`, `max_steps=`).
pub fn divide_step_keywords(rewrite: &mut ModuleRewrite, call: &ast::ExprCall, names: &[&str]) {
    for name in names {
        if let Some(value) = keyword(call, name).map(|keyword| &keyword.value)
            && !matches!(
                value,
                Expr::Constant(ast::ExprConstant {
                    value: ast::Constant::None,
                    ..
                })
            )
        {
            rewrite.divide_expression(value);
        }
    }
}

/// `StopAtStepHook(last_step=n)` and `(num_steps=n)` anywhere in the module: divided.
pub fn divide_stop_at_step_hooks(rewrite: &mut ModuleRewrite) {
    let module = rewrite.module;
    for scope in &module.scopes {
        for (_, call) in calls_in_scope(scope) {
            if canonical_callee(rewrite, scope, call).as_deref()
                == Some("tensorflow.train.StopAtStepHook")
            {
                if let Some(first) = call.args.first() {
                    rewrite.divide_expression(first);
                }
                divide_step_keywords(rewrite, call, &["last_step", "num_steps"]);
            }
        }
    }
}

/// `tf.Session(...)` or `tf.InteractiveSession(...)`.
pub fn is_session_call(rewrite: &ModuleRewrite, scope: &Scope, expr: &Expr) -> bool {
    matches!(expr, Expr::Call(call) if makes_session(rewrite, scope, call))
}

/// `tf.Session(...)` or `tf.InteractiveSession(...)`, under any import name.
pub fn makes_session(rewrite: &ModuleRewrite, scope: &Scope, call: &ast::ExprCall) -> bool {
    matches!(
        canonical_callee(rewrite, scope, call).as_deref(),
        Some("tensorflow.Session" | "tensorflow.InteractiveSession")
    )
}
