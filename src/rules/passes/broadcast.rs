//! Placing the one-time broadcast of the initial variables after the first
//! optimizer step, guarded by a flag that is set once per job.
//!
//! Input: the statement of the first step, the loop or function that runs it,
//! and what to broadcast. Output: the guarded broadcast, the flag, and a
//! DST107 note saying where and why.

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::diagnostics::Diagnostic;
use crate::python::parse::{span, span_with_decorators};
use crate::rules::BROADCAST_PLACEMENT;
use crate::rules::rewrite::ModuleRewrite;

/// What to broadcast: the model's (or hand-built) variables and the optimizer.
pub struct BroadcastTargets {
    pub variables: String,
    pub optimizer: String,
}

/// Where the flag that makes the broadcast run once per job lives.
#[derive(Clone, Copy)]
pub enum FlagHome<'a> {
    /// Set before this loop, the outermost one around the step (made a
    /// module global when the function holding it is called in a loop).
    BeforeLoop(&'a Stmt),
    /// The step is in a function that no loop of its own runs (an agent's
    /// `replay`, called once per environment step): a module global.
    Global(&'a Stmt),
}

/// Inserts, after `after`, a broadcast of `targets` from rank 0 that runs
/// once; `horovod` names the `horovod.tensorflow` module (its
/// `broadcast_variables`), `step_name` the step function the loop calls.
pub fn place_broadcast(
    rewrite: &mut ModuleRewrite,
    horovod: &str,
    home: FlagHome,
    after: &Stmt,
    targets: &[BroadcastTargets],
    step_name: Option<&str>,
) {
    let hvd = horovod.to_string();
    let flag = rewrite.fresh(&["broadcast_done", "hvd_broadcast_done"]);
    let unit = rewrite.stylist.indent_unit.clone();
    let form = optimizer_variables_form(rewrite);
    let mut broadcasts: Vec<String> = Vec::new();
    for target in targets {
        let optimizer = &target.optimizer;
        let optimizer_variables = match form {
            VariablesForm::Method => format!("{optimizer}.variables()"),
            VariablesForm::Property => format!("{optimizer}.variables"),
            VariablesForm::Either => format!(
                "{optimizer}.variables() if callable({optimizer}.variables) else {optimizer}.variables"
            ),
        };
        for variables in [target.variables.clone(), optimizer_variables] {
            let line = format!("{unit}{hvd}.broadcast_variables({variables}, root_rank=0)");
            if !broadcasts.contains(&line) {
                broadcasts.push(line);
            }
        }
    }
    let flag_is_global = match home {
        FlagHome::BeforeLoop(outermost_loop) => declare_flag(rewrite, outermost_loop, &flag),
        FlagHome::Global(function) => {
            declare_global_flag(rewrite, function, &flag);
            true
        }
    };
    rewrite.insert_after_statement(
        &span(after),
        &[format!(
            "if not {flag}:\n{}\n{unit}{flag} = True",
            broadcasts.join("\n")
        )],
    );
    let line = rewrite.module.module.source.line_label(span(after).start);
    let how = match step_name {
        Some(step) => {
            // Only a compiled step (in any module) runs its Python while tracing alone.
            let compiled = rewrite
                .analysis
                .modules
                .iter()
                .flat_map(|module| module.scopes.iter())
                .any(|scope| scope.name() == step && scope.is_tf_function);
            let why = match compiled {
                true => {
                    "Python inside a @tf.function runs only while tracing, so the flag is kept outside it"
                }
                false => {
                    "the step function starts afresh at each call, so the flag is kept outside it"
                }
            };
            format!(
                "variables are broadcast from rank 0 once, after the first call of `{step}` ({line}), guarded by the Python flag `{flag}` in the calling loop: {why}"
            )
        }
        None if matches!(home, FlagHome::Global(_)) => format!(
            "variables are broadcast from rank 0 once, after the first optimizer step ({line}), guarded by the module global `{flag}`: the function holding the step runs once per call, with no loop of its own"
        ),
        None => format!(
            "variables are broadcast from rank 0 once, after the first optimizer step ({line}), guarded by the flag `{flag}` set before the loop"
        ),
    };
    let how = if flag_is_global && matches!(home, FlagHome::BeforeLoop(_)) {
        format!(
            "{how}; the flag is a module global because the function holding the loop is itself called in a loop, and the broadcast must run once per job"
        )
    } else {
        how
    };
    rewrite.diagnose(Diagnostic::new(BROADCAST_PLACEMENT, span(after), how));
}

/// How an optimizer's variables are read: Keras 2 optimizers expose
/// `variables()` (a method, or a callable list since Keras 2.11), Keras 3 a
/// property holding a list, which cannot be called.
#[derive(Clone, Copy)]
enum VariablesForm {
    Method,
    Property,
    /// The program does not say which Keras `tf.keras` is (TensorFlow 2.16
    /// and later ship Keras 3): a form both accept.
    Either,
}

fn optimizer_variables_form(rewrite: &ModuleRewrite) -> VariablesForm {
    match crate::rules::keras_runtime::known_generation(rewrite) {
        Some(crate::rules::keras_runtime::Generation::Two) => VariablesForm::Method,
        Some(crate::rules::keras_runtime::Generation::Three) => VariablesForm::Property,
        None => VariablesForm::Either,
    }
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
    declare_global_flag(rewrite, function, flag);
    true
}

/// `flag = False` at module level before the top-level statement holding
/// `function`, and `global flag` at the top of the function's body.
fn declare_global_flag(rewrite: &mut ModuleRewrite, function: &Stmt, flag: &str) {
    let module = rewrite.module;
    let top_level = module.module.body.iter().find(|stmt| {
        span(*stmt).start <= span(function).start && span(function).end <= span(*stmt).end
    });
    if let Some(top_level) = top_level {
        let lines = [format!("{flag} = False"), String::new(), String::new()];
        rewrite.insert_before_statement(&span_with_decorators(top_level), &lines);
    }
    let body = match function {
        Stmt::FunctionDef(function) => &function.body,
        Stmt::AsyncFunctionDef(function) => &function.body,
        _ => return,
    };
    let first = body
        .iter()
        .find(|stmt| !is_docstring(stmt))
        .unwrap_or(&body[0]);
    rewrite.insert_before_statement(&span_with_decorators(first), &[format!("global {flag}")]);
}

/// Whether some loop of the module calls a function of this name (or the
/// method of this name on `self`).
fn is_called_in_a_loop(module: &crate::analysis::training::ModuleAnalysis, name: &str) -> bool {
    module.scopes.iter().any(|scope| {
        scope
            .facts
            .calls
            .iter()
            .any(|site| calls_by_name(site.call, name) && !site.enclosing_loops.is_empty())
    })
}

/// Whether a call calls a function of this name, or a method of it on any receiver.
pub fn calls_by_name(call: &ast::ExprCall, name: &str) -> bool {
    match call.func.as_ref() {
        Expr::Name(callee) => callee.id.as_str() == name,
        Expr::Attribute(attribute) => attribute.attr.as_str() == name,
        _ => false,
    }
}

fn is_docstring(stmt: &Stmt) -> bool {
    matches!(stmt, Stmt::Expr(expression) if matches!(expression.value.as_ref(),
        Expr::Constant(ast::ExprConstant { value: ast::Constant::Str(_), .. })))
}
