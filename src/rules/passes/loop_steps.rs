//! Dividing the steps of the loop that drives training among the workers:
//! its step limit (`while step < n`, `if step >= n: break`), else the bound
//! of `range(n)` or `dataset.take(n)`, else (when configured) a shard of the
//! tf.data pipeline it iterates; when none applies, DST101 says that every
//! worker walks all the data.
//!
//! Input: the loop statement a pattern found to drive training. Output: the
//! division edits, or the shard, or the diagnostic.

use std::collections::HashSet;

use rustpython_parser::ast::{self, CmpOp, Constant, Expr, Stmt};

use super::sharding::shard_dataset;
use crate::analysis::walk::{for_each_statement, target_names};
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

pub const DATASET_NOT_SHARDED: Code = Code::new(
    "DST101",
    "dataset-not-sharded",
    Severity::Warning,
    "Every worker iterates the whole dataset and no step count divides the work: no speed-up.",
);

pub const CODES: &[Code] = &[DATASET_NOT_SHARDED];

/// Divides the step count of the loop that drives training.
pub fn divide_loop_steps(rewrite: &mut ModuleRewrite, loop_statement: &Stmt) {
    let limits = step_limits(loop_statement);
    if !limits.is_empty() {
        for limit in limits {
            rewrite.divide_expression(limit);
        }
        return;
    }
    let Stmt::For(for_loop) = loop_statement else {
        return;
    };
    let mut iterable = for_loop.iter.as_ref();
    if let Expr::Call(call) = iterable
        && matches!(call.func.as_ref(), Expr::Name(name) if name.id.as_str() == "enumerate")
        && let Some(inner) = call.args.first()
    {
        iterable = inner;
    }
    if let Some(bound) = range_or_take_bound(iterable) {
        rewrite.divide_expression(bound);
        return;
    }
    let already_sharded = rewrite.text.contains(".shard(");
    let scope_index = rewrite.module.scope_at(span(loop_statement).start);
    let scope = &rewrite.module.scopes[scope_index];
    if !already_sharded && rewrite.options.shard_datasets && shard_dataset(rewrite, scope, iterable)
    {
        return;
    }
    if !already_sharded {
        report_unsplit_loop(rewrite, &for_loop.iter);
    }
}

/// `n` in `range(n)` or `dataset.take(n)`.
fn range_or_take_bound(iterable: &Expr) -> Option<&Expr> {
    let Expr::Call(call) = iterable else {
        return None;
    };
    let is_range = matches!(call.func.as_ref(), Expr::Name(name) if name.id.as_str() == "range");
    let is_take = matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "take");
    ((is_range || is_take) && call.args.len() == 1).then(|| &call.args[0])
}

fn report_unsplit_loop(rewrite: &mut ModuleRewrite, iterable: &Expr) {
    let iterable_text = rewrite.expression_text(iterable).to_string();
    let suggestion = format!(
        "shard the dataset with `.shard({0}, {1})` before batching, or iterate `.take(<steps> // {0})`",
        rewrite.horovod_call("size"),
        rewrite.horovod_call("rank")
    );
    rewrite.diagnose(
        Diagnostic::new(
            DATASET_NOT_SHARDED,
            span(iterable),
            format!("every worker iterates all of `{iterable_text}` and no step count divides the work, so more workers bring no speed-up"),
        )
        .with_suggestion(suggestion),
    );
}

/// The step limits a loop stops at, by a counter it increments
/// (`step += 1`): `while step < n:`, and `if step >= n: ... break` in its
/// body (not in nested loops or functions).
fn step_limits(loop_statement: &Stmt) -> Vec<&Expr> {
    let counters = advanced_counters(loop_statement);
    let mut limits = Vec::new();
    let body = match loop_statement {
        Stmt::While(while_loop) => {
            limits.extend(limit_of(&counters, &while_loop.test, false));
            &while_loop.body
        }
        Stmt::For(for_loop) => &for_loop.body,
        _ => return limits,
    };
    let mut tests = Vec::new();
    collect_ifs(body, &mut tests);
    for node in tests {
        if breaks(&node.body)
            && let Some(limit) = limit_of(&counters, &node.test, true)
        {
            limits.push(limit);
        }
    }
    limits
}

/// The counters a loop advances: `i += 1`, or a step count read back
/// (`_, step = sess.run([train_op, global_step])`) whose name says so.
/// `if loss > 1e3: break` or `total += loss` are not step limits.
fn advanced_counters(loop_statement: &Stmt) -> HashSet<String> {
    let names_a_step = |name: &str| {
        let name = name.to_lowercase();
        name.contains("step") || name.contains("iter")
    };
    let mut advanced: HashSet<String> = HashSet::new();
    let loop_only = std::slice::from_ref(loop_statement);
    for_each_statement(loop_only, false, &mut |stmt| match stmt {
        Stmt::AugAssign(assign) => {
            let by_a_count = matches!(
                assign.value.as_ref(),
                Expr::Constant(ast::ExprConstant {
                    value: Constant::Int(_),
                    ..
                })
            );
            let names = target_names(&assign.target).into_iter();
            let counted = names.filter(|name| by_a_count || names_a_step(name));
            advanced.extend(counted.map(String::from));
        }
        Stmt::Assign(assign) => {
            for target in &assign.targets {
                let names = target_names(target).into_iter();
                advanced.extend(names.filter(|name| names_a_step(name)).map(String::from));
            }
        }
        _ => {}
    });
    advanced
}

/// The limit in `counter OP limit`, either way round, when the test is true
/// once the counter reaches the limit (`reached`: >=, >, ==) or while it is
/// below (<, <=, !=).
fn limit_of<'a>(counters: &HashSet<String>, test: &'a Expr, reached: bool) -> Option<&'a Expr> {
    let Expr::Compare(compare) = test else {
        return None;
    };
    let ([operator], [right]) = (compare.ops.as_slice(), compare.comparators.as_slice()) else {
        return None;
    };
    let is_counter =
        |expr: &Expr| matches!(expr, Expr::Name(name) if counters.contains(name.id.as_str()));
    let (limit, counter_on_left) = if is_counter(&compare.left) {
        (right, true)
    } else if is_counter(right) {
        (compare.left.as_ref(), false)
    } else {
        return None;
    };
    let true_at_limit = match (operator, counter_on_left) {
        (CmpOp::GtE | CmpOp::Gt | CmpOp::Eq, true)
        | (CmpOp::LtE | CmpOp::Lt | CmpOp::Eq, false) => true,
        (CmpOp::Lt | CmpOp::LtE | CmpOp::NotEq, true)
        | (CmpOp::Gt | CmpOp::GtE | CmpOp::NotEq, false) => false,
        _ => return None,
    };
    (true_at_limit == reached).then_some(limit)
}

fn breaks(body: &[Stmt]) -> bool {
    body.iter().any(|stmt| match stmt {
        Stmt::Break(_) => true,
        Stmt::If(node) => breaks(&node.body),
        _ => false,
    })
}

/// The `if`s of a loop body, through `with` and `try` but not nested loops.
fn collect_ifs<'a>(body: &'a [Stmt], found: &mut Vec<&'a ast::StmtIf>) {
    for stmt in body {
        match stmt {
            Stmt::If(node) => {
                found.push(node);
                collect_ifs(&node.body, found);
                collect_ifs(&node.orelse, found);
            }
            Stmt::With(node) => collect_ifs(&node.body, found),
            Stmt::Try(node) => collect_ifs(&node.body, found),
            _ => {}
        }
    }
}
