//! ## Invariant 11: each worker uses its own accelerator
//!
//! Horovod runs one process per GPU; each must see the GPU of its local rank,
//! in the form its TensorFlow reads. A TF1 session made with its own
//! `ConfigProto` reads `gpu_options.visible_device_list` of that proto, and
//! TF2's `tf.config.set_visible_devices` does not reach it.
//!
//! **Proven** when every session's own `ConfigProto` is pinned by
//! `hvd.local_rank()`, and otherwise when the module pins devices by the
//! local rank (or the user chose the devices under a condition of their
//! own). **Violated** when a session's own proto is not pinned, or nothing
//! is pinned. **Unknown** when a session's config comes from where the
//! checker cannot follow.

use rustpython_parser::ast::Expr;

use crate::analysis::walk::{dotted_name, keyword};
use crate::checker::{Decision, Invariant, Program, Verdict};
use crate::diagnostics::{Code, Severity};
use crate::python::parse::span;

pub const DEVICE_PINNED: Code = Code::new(
    "DST311",
    "device-per-worker",
    Severity::Error,
    "Each worker pins the GPU of its local rank, in the form the program's own TensorFlow reads.",
);

pub struct DevicePinned;

const SESSIONS: &[&str] = &[
    "tensorflow.Session",
    "tensorflow.InteractiveSession",
    "tensorflow.train.MonitoredTrainingSession",
    "tensorflow.estimator.RunConfig",
    "tensorflow.train.Supervisor",
    "tensorflow.enable_eager_execution",
];

impl Invariant for DevicePinned {
    fn code(&self) -> Code {
        DEVICE_PINNED
    }

    fn check(&self, program: &Program) -> Vec<Decision> {
        let Some(init) = program.module.index.horovod_init.clone() else {
            return Vec::new();
        };
        let calls = program.calls();
        let mut decisions = Vec::new();
        for call in calls {
            let Some(callee) = call.callee.as_deref() else {
                continue;
            };
            if !SESSIONS.contains(&callee) {
                continue;
            }
            let config = keyword(call.site.call, "config")
                .or_else(|| keyword(call.site.call, "session_config"));
            let Some(config) = config else {
                continue;
            };
            let line = program.line(call.range().start);
            if uses_no_gpu(&config.value) {
                continue;
            }
            let Some(name) = dotted_name(&config.value) else {
                if !program.calls_horovod_function(call.scope, &config.value, "local_rank") {
                    decisions.push(Decision::new(DEVICE_PINNED, Verdict::Unknown, span(&config.value), format!("the session at line {line} is configured by an expression the checker cannot follow, so it cannot show the GPU is pinned by `hvd.local_rank()`")));
                }
                continue;
            };
            decisions.push(if proto_pinned(program, &name) {
                Decision::new(DEVICE_PINNED, Verdict::Proven, span(&config.value), format!("the session at line {line} is pinned to the local rank's GPU"))
            } else {
                Decision::new(
                    DEVICE_PINNED,
                    Verdict::Violated,
                    span(&config.value),
                    format!("the session at line {line} reads its own `{name}`, whose `gpu_options.visible_device_list` is not set from `hvd.local_rank()`: every worker on a machine takes GPU 0"),
                )
                .with_suggestion(format!("add `{name}.gpu_options.visible_device_list = str(hvd.local_rank())` before the session is made"))
            });
        }
        if !decisions.is_empty() {
            return decisions;
        }
        let pinned_anywhere =
            pins_by_local_rank(program) || program.others().iter().any(pins_by_local_rank);
        if pinned_anywhere {
            return Vec::new();
        }
        vec![Decision::new(
            DEVICE_PINNED,
            Verdict::Violated,
            init,
            "no GPU is pinned by `hvd.local_rank()`: every worker on a machine takes the same GPU".to_string(),
        )
        .with_suggestion("after `hvd.init()`, make `gpus[hvd.local_rank()]` the only visible GPU (`tf.config.experimental.set_visible_devices`)")]
    }
}

/// `ConfigProto(device_count={"GPU": 0})`: a session that uses no GPU (a
/// barrier's own) takes none from the others.
fn uses_no_gpu(config: &rustpython_parser::ast::Expr) -> bool {
    use rustpython_parser::ast::{Constant, Expr};
    let rustpython_parser::ast::Expr::Call(proto) = config else {
        return false;
    };
    keyword(proto, "device_count").is_some_and(|count| {
        matches!(&count.value, Expr::Dict(dict) if dict.keys.iter().zip(&dict.values).any(|(key, value)| {
            matches!(key, Some(Expr::Constant(key)) if key.value == Constant::Str("GPU".into()))
                && matches!(value, Expr::Constant(value) if value.value == Constant::Int(0.into()))
        }))
    })
}

/// Whether `<proto>.gpu_options.visible_device_list` is assigned from the local rank.
fn proto_pinned(program: &Program, proto: &str) -> bool {
    let target = format!("{proto}.gpu_options.visible_device_list");
    program.module.scopes.iter().any(|scope| {
        scope.facts.assignments.iter().any(|assignment| {
            assignment.name == target
                && program.calls_horovod_function(scope, assignment.value, "local_rank")
        })
    })
}

/// A device choice by the local rank anywhere in the module, or the user's
/// own `CUDA_VISIBLE_DEVICES` under a condition (their intent).
fn pins_by_local_rank(program: &Program) -> bool {
    let by_call = program.calls().iter().any(|call| {
        call.site
            .call
            .args
            .iter()
            .chain(call.site.call.keywords.iter().map(|keyword| &keyword.value))
            .any(|argument| program.calls_horovod_function(call.scope, argument, "local_rank"))
            && call
                .method()
                .is_some_and(|method| method.contains("visible") || method.contains("device"))
    });
    let by_assignment = program.module.scopes.iter().any(|scope| {
        scope.facts.statements.iter().any(|statement| {
            let rustpython_parser::ast::Stmt::Assign(assign) = statement else {
                return false;
            };
            let pins = assign.targets.iter().any(|target| match target {
                Expr::Attribute(attribute) => attribute.attr.as_str() == "visible_device_list",
                Expr::Subscript(subscript) => matches!(subscript.slice.as_ref(),
                    Expr::Constant(constant) if matches!(&constant.value,
                        rustpython_parser::ast::Constant::Str(key) if key == "CUDA_VISIBLE_DEVICES")),
                _ => false,
            });
            pins && (program.calls_horovod_function(scope, &assign.value, "local_rank")
                || !matches!(assign.value.as_ref(), Expr::Call(_)))
        })
    });
    by_call || by_assignment
}
