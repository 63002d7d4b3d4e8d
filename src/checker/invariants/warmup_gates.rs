//! Part of invariant 4 (the work split once, DST304): an agent that learns
//! only once a warm-up is over (`if memory.pointer > MEMORY_CAPACITY:
//! learn()`), inside a divided loop over the episodes it plays. Each worker
//! counts its own warm-up: with 1/N of the episodes, it spends the whole
//! warm-up on a smaller share and takes fewer than 1/N of the learning
//! steps (none at all when the share is shorter than the warm-up), while
//! the rate is scaled as if it took its share.

use rustpython_parser::ast::{self, CmpOp, Expr, Stmt};

use super::facts::SplitFacts;
use super::work_split::WORK_SPLIT;
use crate::analysis::walk::{
    dotted_name, environment_step_in, for_each_statement, loop_header, walk_expression,
    walk_statement_expressions,
};
use crate::checker::{Decision, Program, Verdict};
use crate::python::parse::span;

/// An open obligation for each warm-up gate on learning in a divided loop
/// that plays an environment.
pub(super) fn warmup_gates(program: &Program) -> Vec<Decision> {
    let facts = SplitFacts::of(program);
    let train_ops = super::facts::train_op_names(program);
    let steps = super::collectives_aligned::step_functions(program, &train_ops);
    let mut decisions = Vec::new();
    for scope in &program.module.scopes {
        for statement in scope.facts.statements.iter().copied() {
            let Some(header) = loop_header(statement) else {
                continue;
            };
            let divided = facts
                .divisions
                .iter()
                .any(|division| header.start <= division.start && division.end <= header.end);
            if !divided || environment_step_in(std::slice::from_ref(statement)).is_none() {
                continue;
            }
            for_each_statement(std::slice::from_ref(statement), false, &mut |inner| {
                let Stmt::If(gate) = inner else {
                    return;
                };
                let Some(counted) = warmup_count(&gate.test) else {
                    return;
                };
                if !takes_steps(&gate.body, &train_ops, &steps) {
                    return;
                }
                let line = program.line(span(gate.test.as_ref()).start);
                decisions.push(
                    Decision::new(
                        WORK_SPLIT,
                        Verdict::Unknown,
                        span(gate.test.as_ref()),
                        format!("the learning under the test at line {line} waits until `{counted}` passes a threshold, a count each worker makes of its own episodes: with the episodes divided, each worker spends the whole warm-up on its share and takes fewer than its share of the learning steps (none, when its share is shorter than the warm-up)"),
                    )
                    .with_suggestion("leave the episodes whole and the learning rate as written, or start learning on each worker after its share of the warm-up (a threshold of its own, not the replay buffer's size)"),
                );
            });
        }
    }
    decisions
}

/// `pointer > MEMORY_CAPACITY`, `len(memory) >= WARMUP`, `total_steps >
/// 1000`: a count compared with a threshold named in capitals or written
/// as a number. Returns the count's text.
fn warmup_count(test: &Expr) -> Option<String> {
    let Expr::Compare(ast::ExprCompare {
        left,
        ops,
        comparators,
        ..
    }) = test
    else {
        if let Expr::BoolOp(node) = test {
            return node.values.iter().find_map(warmup_count);
        }
        return None;
    };
    let [op] = ops.as_slice() else {
        return None;
    };
    let [threshold] = comparators.as_slice() else {
        return None;
    };
    if !matches!(op, CmpOp::Gt | CmpOp::GtE) {
        return None;
    }
    let is_threshold = match threshold {
        Expr::Constant(constant) => matches!(constant.value, ast::Constant::Int(_)),
        Expr::Name(name) => name
            .id
            .chars()
            .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit()),
        _ => false,
    };
    if !is_threshold {
        return None;
    }
    match left.as_ref() {
        Expr::Call(call) if dotted_name(&call.func).as_deref() == Some("len") => call
            .args
            .first()
            .and_then(dotted_name)
            .map(|name| format!("len({name})")),
        other => dotted_name(other),
    }
}

fn takes_steps(
    body: &[Stmt],
    train_ops: &[String],
    steps: &std::collections::HashSet<&str>,
) -> bool {
    let mut found = false;
    for_each_statement(body, false, &mut |inner| {
        walk_statement_expressions(inner, &mut |expr| {
            walk_expression(expr, &mut |nested| {
                if let Expr::Call(call) = nested {
                    found |= super::collectives_aligned::takes_a_step(call, train_ops, steps);
                }
            });
        });
    });
    found
}
