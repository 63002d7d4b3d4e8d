//! The callbacks of a Keras `fit`: Horovod's broadcast and metric-averaging
//! callbacks first, file writers on rank 0 only, the others everywhere.

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::rules::rewrite::ModuleRewrite;

use super::{CALLBACKS_NOT_VISIBLE, rank_zero_verbose};
use crate::analysis::library::LibraryClass;
use crate::analysis::training::Scope;
use crate::analysis::walk::keyword;
use crate::diagnostics::Diagnostic;
use crate::python::edit::Edit;
use crate::python::parse::span;

/// `model.fit(data, **fit_kwargs)`: a keyword added beside the unpacked dict
/// would be given twice when the dict has it too (a TypeError). What the
/// call does not name goes into the dict instead:
/// `**{**fit_kwargs, "callbacks": [...], "verbose": ..., **({"steps_per_epoch": ...} if ... else {})}`.
pub(super) fn rewrite_unpacked_fit(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    fit: &ast::ExprCall,
    unpacked: &Expr,
) {
    if rewrite.calls_horovod_attribute(unpacked, "BroadcastGlobalVariablesCallback")
        || rewrite
            .expression_text(unpacked)
            .contains("BroadcastGlobalVariablesCallback")
    {
        return;
    }
    let dict = rewrite.expression_text(unpacked).to_string();
    let dict = if matches!(
        unpacked,
        Expr::Name(_) | Expr::Attribute(_) | Expr::Subscript(_)
    ) {
        dict
    } else {
        format!("({dict})")
    };
    let quote = rewrite.stylist.quote;
    let quoted = |key: &str| format!("{quote}{key}{quote}");
    let size = rewrite.horovod_call("size");
    let test = rewrite.rank_zero_test();
    let mut entries = vec![format!("**{dict}")];
    if keyword(fit, "callbacks").is_some() {
        rewrite_callbacks(rewrite, scope, fit, None);
    } else {
        let horovod_callbacks = broadcast_callbacks(rewrite, None).join(", ");
        entries.push(format!(
            "{}: [{horovod_callbacks}, *{dict}.get({}, [])]",
            quoted("callbacks"),
            quoted("callbacks")
        ));
        rewrite.diagnose(
            Diagnostic::new(CALLBACKS_NOT_VISIBLE, span(unpacked), format!("the callbacks in `{dict}` are not visible: any that write files (ModelCheckpoint, TensorBoard, CSVLogger, BackupAndRestore) will run on every rank"))
                .with_suggestion(format!("add file-writing callbacks only when `{test}`")),
        );
    }
    if keyword(fit, "verbose").is_some() {
        rank_zero_verbose(rewrite, fit);
    } else {
        entries.push(format!(
            "{}: {dict}.get({}, 1) if {test} else 0",
            quoted("verbose"),
            quoted("verbose")
        ));
    }
    for name in ["steps_per_epoch", "validation_steps"] {
        match keyword(fit, name) {
            Some(steps) => rewrite.divide_expression(&steps.value),
            None => entries.push(format!(
                "**({{{key}: max(1, {dict}[{key}] // {size})}} if {key} in {dict} and {dict}[{key}] else {{}})",
                key = quoted(name)
            )),
        }
    }
    // One entry per line, indented one level past the line of the call.
    let indentation = crate::python::source::indentation_at(rewrite.text, span(fit).start);
    let inner = format!(
        "{}{indentation}{}",
        rewrite.stylist.newline, rewrite.stylist.indent_unit
    );
    rewrite.edit(Edit::replacement(
        span(unpacked),
        format!(
            "{{{inner}{},{}{indentation}}}",
            entries.join(&format!(",{inner}")),
            rewrite.stylist.newline
        ),
    ));
}

/// Horovod's callbacks, in the order its examples give them: the broadcast,
/// the metric averaging, then the warm-up when there is one.
pub(super) fn broadcast_callbacks(rewrite: &ModuleRewrite, warmup: Option<&str>) -> Vec<String> {
    let mut callbacks = vec![
        format!(
            "{}.callbacks.BroadcastGlobalVariablesCallback(0)",
            rewrite.hvd
        ),
        format!("{}.callbacks.MetricAverageCallback()", rewrite.hvd),
    ];
    callbacks.extend(warmup.map(String::from));
    callbacks
}

/// Adds Horovod's callbacks (and `warmup`, the warm-up callback, if any) to
/// a fit's, and keeps its file writers on rank 0.
pub(super) fn rewrite_callbacks(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    fit: &ast::ExprCall,
    warmup: Option<&str>,
) {
    let Some(callbacks) = keyword(fit, "callbacks") else {
        let horovod_callbacks = broadcast_callbacks(rewrite, warmup).join(", ");
        rewrite.add_keyword(fit, "callbacks", &format!("[{horovod_callbacks}]"));
        return;
    };
    match &callbacks.value {
        Expr::List(list) => rewrite_callback_list(rewrite, scope, list, warmup),
        Expr::Name(name) => {
            let definitions = list_definitions(rewrite, scope, name.id.as_str());
            let reaching = match definitions.as_slice() {
                [list] => Some(*list),
                _ => reaching_list_definition(scope, name.id.as_str(), span(fit).start),
            };
            if let Some(list) = reaching {
                rewrite_callback_list(rewrite, scope, list, warmup);
                guard_writer_appends(rewrite, scope, name.id.as_str());
            } else {
                callbacks_not_visible(rewrite, &callbacks.value, warmup);
            }
        }
        other => callbacks_not_visible(rewrite, other, warmup),
    }
}

pub(super) fn callbacks_not_visible(
    rewrite: &mut ModuleRewrite,
    value: &Expr,
    warmup: Option<&str>,
) {
    if rewrite.calls_horovod_attribute(value, "BroadcastGlobalVariablesCallback") {
        return;
    }
    let horovod_callbacks = broadcast_callbacks(rewrite, warmup).join(", ");
    let text = rewrite.expression_text(value).to_string();
    rewrite.edit(Edit::replacement(
        span(value),
        format!("[{horovod_callbacks}, *{text}]"),
    ));
    if rewrite
        .module
        .callbacks_made_elsewhere
        .contains(&span(value))
    {
        // The helper of another module that builds them keeps its writers on rank 0.
        return;
    }
    rewrite.diagnose(
        Diagnostic::new(
            CALLBACKS_NOT_VISIBLE,
            span(value),
            format!("the callbacks in `{text}` are built elsewhere: any that write files (ModelCheckpoint, TensorBoard, CSVLogger, BackupAndRestore) will run on every rank"),
        )
        .with_suggestion(format!("add file-writing callbacks only when `{}`", rewrite.rank_zero_test())),
    );
}

/// The list literals a name is assigned in this scope (or at top level when the scope never assigns it).
pub(super) fn list_definitions<'a>(
    rewrite: &ModuleRewrite<'a>,
    scope: &Scope<'a>,
    name: &str,
) -> Vec<&'a ast::ExprList> {
    let mut definitions = Vec::new();
    let mut other_assignments = 0;
    let scopes = [scope, &rewrite.module.scopes[0]];
    for candidate in scopes {
        for stmt in candidate.facts.statements.iter().copied() {
            if let Stmt::Assign(assign) = stmt
                && assign.targets.iter().any(
                    |target| matches!(target, Expr::Name(target) if target.id.as_str() == name),
                )
            {
                match assign.value.as_ref() {
                    Expr::List(list) => definitions.push(list),
                    _ => other_assignments += 1,
                }
            }
        }
        if !definitions.is_empty() || other_assignments > 0 {
            break;
        }
    }
    if other_assignments > 0 {
        return Vec::new();
    }
    definitions
}

/// The list a name holds at `at` when it is bound several times, each time
/// by a statement of the scope's own block (a notebook whose cells each make
/// their `callbacks = [...]` before their fit): the last binding before `at`,
/// when that is a list written out.
fn reaching_list_definition<'a>(
    scope: &Scope<'a>,
    name: &str,
    at: usize,
) -> Option<&'a ast::ExprList> {
    let mut reaching = None;
    for stmt in scope.facts.statements.iter().copied() {
        let Stmt::Assign(assign) = stmt else {
            continue;
        };
        if !assign
            .targets
            .iter()
            .any(|target| matches!(target, Expr::Name(target) if target.id.as_str() == name))
        {
            continue;
        }
        if !scope.body.iter().any(|top| std::ptr::eq(top, stmt)) {
            return None;
        }
        if span(stmt).end <= at {
            reaching = Some(assign.value.as_ref());
        }
    }
    match reaching? {
        Expr::List(list) => Some(list),
        _ => None,
    }
}

pub(super) fn rewrite_callback_list(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    list: &ast::ExprList,
    warmup: Option<&str>,
) {
    let already = list.elts.iter().any(|element| {
        rewrite.calls_horovod_attribute(element, "BroadcastGlobalVariablesCallback")
    });
    if !already {
        let horovod_callbacks = broadcast_callbacks(rewrite, warmup);
        match list.elts.first() {
            None => {
                let offset = span(list).start + 1;
                rewrite
                    .sink
                    .edit(Edit::insertion(offset, horovod_callbacks.join(", ")));
            }
            Some(first) => {
                let start = span(first).start;
                let line_start = crate::python::source::line_start(rewrite.text, start);
                let separator = if rewrite.text[line_start..start].trim().is_empty() {
                    format!(
                        "{}{}",
                        rewrite.stylist.newline,
                        &rewrite.text[line_start..start]
                    )
                } else {
                    " ".to_string()
                };
                let joined: String = horovod_callbacks
                    .iter()
                    .map(|callback| format!("{callback},{separator}"))
                    .collect();
                rewrite.edit(Edit::insertion(start, joined));
            }
        }
    }
    keep_writers_on_rank_zero(rewrite, scope, list);
}

/// The file-writing callbacks of a list, each kept on rank 0 only.
pub(super) fn keep_writers_on_rank_zero(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    list: &ast::ExprList,
) {
    for element in &list.elts {
        if is_writer_callback(rewrite, scope, element) {
            let text = rewrite.expression_text(element).to_string();
            let replacement = format!("*([{text}] if {} else [])", rewrite.rank_zero_test());
            rewrite
                .sink
                .edit(Edit::replacement(span(element), replacement));
        }
    }
}

/// A file-writing callback made here, or held in a name assigned one
/// (`checkpoint_cb = ModelCheckpoint(...)`), or returned by a function of
/// this module that makes one.
pub(super) fn is_writer_callback(rewrite: &ModuleRewrite, scope: &Scope, element: &Expr) -> bool {
    made_writer_callback(rewrite, scope, element).is_some_and(|(made, call)| {
        made || rewrite
            .callee(scope, &call.func)
            .is_some_and(|callee| returns_writer_callback(rewrite, &callee))
    })
}

/// Whether `element` (a call, or a name assigned one) makes a file-writing
/// callback, with the call; `None` when it is no call.
fn made_writer_callback<'e>(
    rewrite: &ModuleRewrite<'e>,
    scope: &Scope,
    element: &'e Expr,
) -> Option<(bool, &'e ast::ExprCall)> {
    let value = match element {
        Expr::Name(_) => rewrite.assignment_of(element)?.value,
        other => other,
    };
    let Expr::Call(call) = value else {
        return None;
    };
    let made = matches!(
        rewrite.library_class_of_call(scope, call),
        Some(LibraryClass::Callback { writes_files: true })
    ) || rewrite
        .callee(scope, &call.func)
        .is_some_and(|class| is_writer_callback_class(rewrite, &class));
    Some((made, call))
}

/// A function of this module that returns a file-writing callback it makes
/// (`def create_tensorboard_callback(dir): ...; return
/// tf.keras.callbacks.TensorBoard(log_dir=...)`): what it returns writes.
fn returns_writer_callback(rewrite: &ModuleRewrite, function: &str) -> bool {
    rewrite
        .module
        .scopes
        .iter()
        .filter(|scope| scope.function.is_some() && scope.qualified_name == function)
        .any(|scope| {
            scope.facts.statements.iter().any(|statement| {
                matches!(statement, Stmt::Return(node)
                if node.value.as_deref().is_some_and(|value| {
                    made_writer_callback(rewrite, scope, value).is_some_and(|(made, _)| made)
                }))
            })
        })
}

/// A callback class of the package whose methods write files (an
/// `on_epoch_end` that saves sample images) and leave the model and the
/// training alone (no `self.model.<x> = ...`): rank 0 alone needs it.
fn is_writer_callback_class(rewrite: &ModuleRewrite, class: &str) -> bool {
    let analysis = rewrite.analysis;
    let is_callback = analysis
        .package
        .is_subclass(class, "tensorflow.keras.callbacks.Callback");
    let writes = analysis.effects.classes.get(class).is_some_and(|effects| {
        effects.iter().any(|reached| {
            !reached.guessed
                && matches!(
                    reached.effect,
                    crate::analysis::catalogue::Effect::Writes { .. }
                )
        })
    });
    let prefix = format!("{class}.");
    let steers_training = analysis.modules.iter().any(|module| {
        module
            .scopes
            .iter()
            .filter(|scope| scope.qualified_name.starts_with(&prefix))
            .any(|method| {
                method
                    .facts
                    .assignments
                    .iter()
                    .any(|assignment| assignment.name.starts_with("self.model."))
                    || rewrite.calls_horovod_in(method.body)
            })
    });
    is_callback && writes && !steers_training
}

/// `callbacks.append(ModelCheckpoint(...))` runs on rank 0 only.
pub(super) fn guard_writer_appends(rewrite: &mut ModuleRewrite, scope: &Scope, name: &str) {
    let mut appends = Vec::new();
    for stmt in scope.facts.statements.iter().copied() {
        if let Stmt::Expr(expression) = stmt
            && let Expr::Call(call) = expression.value.as_ref()
            && let Expr::Attribute(attribute) = call.func.as_ref()
            && attribute.attr.as_str() == "append"
            && matches!(attribute.value.as_ref(), Expr::Name(receiver) if receiver.id.as_str() == name)
            && call
                .args
                .first()
                .is_some_and(|argument| is_writer_callback(rewrite, scope, argument))
        {
            appends.push(stmt);
        }
    }
    for stmt in appends {
        if rewrite.owns_its_lines(&span(stmt)) && !rewrite.is_guarded(stmt) {
            rewrite.guard_statements(&[stmt]);
        }
    }
}
