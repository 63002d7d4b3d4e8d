//! Placing the one-time broadcast of the initial variables after the first
//! optimizer step, guarded by a flag that is set once per job.

use rustpython_parser::ast::{self, Expr, Stmt};

use super::BroadcastTargets;
use crate::analysis::library;
use crate::diagnostics::Diagnostic;
use crate::python::parse::span;
use crate::rules::BROADCAST_PLACEMENT;
use crate::rules::rewrite::ModuleRewrite;

pub(super) fn place_broadcast(
    rewrite: &mut ModuleRewrite,
    outermost_loop: &Stmt,
    after: &Stmt,
    targets: &[BroadcastTargets],
    step_name: Option<&str>,
) {
    let hvd = rewrite.hvd.clone();
    let flag = rewrite.fresh(&["broadcast_done", "hvd_broadcast_done"]);
    let unit = rewrite.stylist.indent_unit.clone();
    let keras_3 = rewrite
        .module
        .module
        .bindings
        .iter()
        .any(|(_, binding)| library::is_standalone_keras(&binding.qualified));
    // tf.keras 2 optimizers expose `variables()` (a method, or a callable list since Keras 2.11); Keras 3 a property.
    let mut broadcasts: Vec<String> = Vec::new();
    for target in targets {
        let optimizer_variables = if keras_3 {
            format!("{}.variables", target.optimizer)
        } else {
            format!("{}.variables()", target.optimizer)
        };
        for variables in [target.variables.clone(), optimizer_variables] {
            let line = format!("{unit}{hvd}.broadcast_variables({variables}, root_rank=0)");
            if !broadcasts.contains(&line) {
                broadcasts.push(line);
            }
        }
    }
    let flag_is_global = declare_flag(rewrite, outermost_loop, &flag);
    rewrite.insert_after_statement(
        &span(after),
        &[format!(
            "if not {flag}:\n{}\n{unit}{flag} = True",
            broadcasts.join("\n")
        )],
    );
    let line = rewrite.module.module.source.line_label(span(after).start);
    let how = match step_name {
        Some(step) => format!(
            "variables are broadcast from rank 0 once, after the first call of `{step}` ({line}), guarded by the Python flag `{flag}` in the calling loop: Python inside a @tf.function runs only while tracing, so the flag is kept outside it"
        ),
        _ => format!(
            "variables are broadcast from rank 0 once, after the first optimizer step ({line}), guarded by the flag `{flag}` set before the loop"
        ),
    };
    let how = if flag_is_global {
        format!(
            "{how}; the flag is a module global because the function holding the loop is itself called in a loop, and the broadcast must run once per job"
        )
    } else {
        how
    };
    rewrite.diagnose(Diagnostic::new(BROADCAST_PLACEMENT, span(after), how));
}

/// Sets the broadcast flag to False where it runs once per job: before the
/// loop, or, when the function holding the loop is itself called in a loop
/// (an epoch loop calling `train_one_epoch`), at module level with a
/// `global` declaration in the function. Returns whether it is global.
fn declare_flag(rewrite: &mut ModuleRewrite, outermost_loop: &Stmt, flag: &str) -> bool {
    let module = rewrite.module;
    let scope = &module.scopes[module.scope_at(span(outermost_loop).start)];
    let Some(function) = scope.function else {
        rewrite.insert_before_statement(&span(outermost_loop), &[format!("{flag} = False")]);
        return false;
    };
    if !is_called_in_a_loop(module, scope.name()) {
        rewrite.insert_before_statement(&span(outermost_loop), &[format!("{flag} = False")]);
        return false;
    }
    let top_level = module.module.body.iter().find(|stmt| {
        span(*stmt).start <= span(function).start && span(function).end <= span(*stmt).end
    });
    if let Some(top_level) = top_level {
        let lines = [format!("{flag} = False"), String::new(), String::new()];
        rewrite.insert_before_statement(&span(top_level), &lines);
    }
    let first = scope
        .body
        .iter()
        .find(|stmt| !is_docstring(stmt))
        .unwrap_or(&scope.body[0]);
    rewrite.insert_before_statement(&span(first), &[format!("global {flag}")]);
    true
}

/// Whether some loop of the module calls a function of this name (or the
/// method of this name on `self`).
fn is_called_in_a_loop(module: &crate::analysis::training::ModuleAnalysis, name: &str) -> bool {
    module.scopes.iter().any(|scope| {
        scope.facts.calls.iter().any(|site| {
            let calls_it = match site.call.func.as_ref() {
                Expr::Name(callee) => callee.id.as_str() == name,
                Expr::Attribute(attribute) => attribute.attr.as_str() == name,
                _ => false,
            };
            calls_it && !site.enclosing_loops.is_empty()
        })
    })
}

fn is_docstring(stmt: &Stmt) -> bool {
    matches!(stmt, Stmt::Expr(expression) if matches!(expression.value.as_ref(),
        Expr::Constant(ast::ExprConstant { value: ast::Constant::Str(_), .. })))
}
