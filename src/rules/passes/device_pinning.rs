//! Removal of the user's own device pinning (`CUDA_VISIBLE_DEVICES`,
//! `set_visible_devices`): Horovod pins one GPU per process now, and two
//! pinnings fight. The removal belongs to its DST104 diagnostic, so turning
//! DST104 off keeps the user's lines.
//!
//! Input: every scope of the module. Output: per removed statement, a
//! diagnostic carrying the removal as its fix.

use rustpython_parser::ast::{Expr, Stmt};

use crate::analysis::training::Scope;
use crate::analysis::walk::{is_scope, nested_bodies};
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::parse::span;
use crate::rules::context::is_string;
use crate::rules::edit_builders::remove_statement;
use crate::rules::rewrite::ModuleRewrite;

pub const DEVICE_PINNING_REMOVED: Code = Code::new(
    "DST104",
    "device-pinning-removed",
    Severity::Info,
    "User code that pinned devices was removed: Horovod pins one GPU per process.",
);

pub const CODES: &[Code] = &[DEVICE_PINNING_REMOVED];

pub fn run(rewrite: &mut ModuleRewrite) {
    let module = rewrite.module;
    for scope in &module.scopes {
        remove_in(rewrite, scope, scope.body);
    }
}

fn remove_in(rewrite: &mut ModuleRewrite, scope: &Scope, body: &[Stmt]) {
    let removable: Vec<bool> = body
        .iter()
        .map(|stmt| is_device_pinning(rewrite, scope, stmt))
        .collect();
    let all_removed = removable.iter().all(|removable| *removable);
    for (index, stmt) in body.iter().enumerate() {
        if removable[index] {
            let range = span(stmt);
            if !rewrite.owns_its_lines(&range) {
                continue;
            }
            let keep_pass = all_removed
                && index == body.len() - 1
                && !std::ptr::eq(body, rewrite.module.module.body.as_slice());
            let removal = remove_statement(rewrite.text, &rewrite.stylist, &range, keep_pass);
            let message = format!(
                "removed `{}`: Horovod pins one GPU per process with hvd.local_rank()",
                first_line(rewrite.source(span(stmt)))
            );
            rewrite.diagnose(
                Diagnostic::new(DEVICE_PINNING_REMOVED, range, message).with_fix(vec![removal]),
            );
        } else if let Stmt::If(node) = stmt
            && !tests_for_gpus(rewrite, &node.test)
        {
            // `if args.no_cuda: os.environ["CUDA_VISIBLE_DEVICES"] = "-1"`:
            // the user's own choice, not single-GPU pinning.
            continue;
        } else if !is_scope(stmt) {
            for nested in nested_bodies(stmt) {
                remove_in(rewrite, scope, nested);
            }
        }
    }
}

/// Whether an `if` asks about GPUs (`if gpus:`, `if len(gpus) > 1:`,
/// `if tf.config.list_physical_devices("GPU"):`): pinning under it is the
/// single-GPU setup Horovod replaces.
fn tests_for_gpus(_rewrite: &ModuleRewrite, test: &Expr) -> bool {
    let names_gpus = |word: &str| {
        let word = word.to_lowercase();
        word.contains("gpu") || word.contains("cuda") || word.contains("physical_devices")
    };
    let mut found = false;
    crate::analysis::walk::walk_expression(test, &mut |expr| {
        found |= match expr {
            Expr::Name(name) => names_gpus(name.id.as_str()),
            Expr::Attribute(attribute) => names_gpus(attribute.attr.as_str()),
            Expr::Constant(constant) => {
                matches!(&constant.value, rustpython_parser::ast::Constant::Str(text) if names_gpus(text))
            }
            _ => false,
        };
    });
    found
}

/// `CUDA_VISIBLE_DEVICES` set to `""` or `"-1"` hides every GPU: a CPU run
/// the user chose, which Horovod's pinning must not undo.
fn hides_all_gpus(value: &Expr) -> bool {
    is_string(value, "") || is_string(value, "-1")
}

fn is_device_pinning(rewrite: &ModuleRewrite, scope: &Scope, stmt: &Stmt) -> bool {
    match stmt {
        Stmt::Assign(assign) => assign.targets.iter().any(|target| {
            if let Expr::Subscript(subscript) = target
                && scope.bindings.resolve_raw(&subscript.value).as_deref() == Some("os.environ")
            {
                return is_string(&subscript.slice, "CUDA_VISIBLE_DEVICES")
                    && !hides_all_gpus(&assign.value);
            }
            false
        }),
        Stmt::Expr(expression) => {
            let Expr::Call(call) = expression.value.as_ref() else {
                return false;
            };
            let Some(callee) = scope.bindings.resolve(&call.func) else {
                return false;
            };
            match callee.as_str() {
                "tensorflow.config.experimental.set_visible_devices"
                | "tensorflow.config.set_visible_devices" => !call
                    .args
                    .iter()
                    .chain(call.keywords.iter().map(|k| &k.value))
                    .any(|argument| rewrite.calls_horovod(argument, "local_rank")),
                "os.environ.setdefault" | "os.putenv" => call
                    .args
                    .first()
                    .is_some_and(|key| is_string(key, "CUDA_VISIBLE_DEVICES")),
                _ => false,
            }
        }
        _ => false,
    }
}
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default().trim_end()
}
