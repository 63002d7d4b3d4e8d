//! Part of invariant 8 (collectives aligned, DST308): a step taken only when
//! a test holds on what the loop has gathered so far (`if len(inputs) >=
//! 128: sess.run(train_op, ...)`), where the loop gathers it with random
//! draws of its own (words dropped or kept at random). Each rank draws its
//! own, so the ranks take different numbers of steps, and the one with
//! fewer leaves the others waiting in an allreduce.

use std::collections::HashSet;

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::analysis::index::CallSite;
use crate::analysis::training::Scope;
use crate::analysis::walk::{
    dotted_name, for_each_statement, path_to, target_names, walk_expression,
    walk_statement_expressions,
};
use crate::checker::{Decision, Program, Verdict};
use crate::python::parse::span;

use super::collectives_aligned::COLLECTIVES_ALIGNED;

/// The step at `site`, when an `if` inside its loop gates it on names the
/// loop grows, and the loop draws random numbers.
pub(super) fn step_gated_on_random_gathering(
    program: &Program,
    scope: &Scope,
    site: &CallSite,
) -> Option<Decision> {
    let path = path_to(scope.body, &span(site.statement))?;
    let gate_at = path
        .iter()
        .rposition(|statement| matches!(statement, Stmt::If(_)))?;
    let loop_at = path[..gate_at]
        .iter()
        .rposition(|statement| crate::analysis::walk::is_loop(statement))?;
    let Stmt::If(gate) = path[gate_at] else {
        return None;
    };
    let looped = path[loop_at];
    // `while episodes < N:` ... `if done: episodes += 1; update(...)`: the
    // gate counts the loop's own passes, so each rank takes exactly N steps.
    if let Stmt::While(node) = looped
        && gate_advances_the_bound(gate, &node.test)
    {
        return None;
    }
    let body = match looped {
        Stmt::For(node) => &node.body,
        Stmt::While(node) => &node.body,
        _ => return None,
    };
    let counters: HashSet<&str> = match looped {
        Stmt::For(node) => target_names(&node.target).into_iter().collect(),
        _ => HashSet::new(),
    };
    let mut tested = HashSet::new();
    walk_expression(&gate.test, &mut |expr| {
        if let Expr::Name(name) = expr {
            tested.insert(name.id.to_string());
        }
    });
    let mut grown = HashSet::new();
    let mut appended: HashSet<&str> = HashSet::new();
    let mut draws = None;
    for_each_statement(body, false, &mut |statement| {
        match statement {
            Stmt::AugAssign(node) => grown.extend(target_names(&node.target)),
            Stmt::Assign(node) => {
                for target in &node.targets {
                    grown.extend(target_names(target));
                }
            }
            _ => {}
        }
        walk_statement_expressions(statement, &mut |expr| {
            let Expr::Call(call) = expr else {
                return;
            };
            let callee = dotted_name(&call.func).unwrap_or_default();
            if let Expr::Attribute(method) = call.func.as_ref()
                && matches!(method.attr.as_str(), "append" | "extend")
                && let Expr::Name(receiver) = method.value.as_ref()
            {
                grown.insert(receiver.id.as_str());
                appended.insert(receiver.id.as_str());
            }
            if draws.is_none() && callee.split('.').any(|part| part == "random") {
                draws = Some(span(call).start);
            }
        });
    });
    // `while episodes < N:` ... `if episodes % k == 0: update(...)`: a test
    // of the loop's own bound counter (and of names the loop never sets)
    // comes out alike on every rank, pass by pass of that counter.
    if let Stmt::While(node) = looped {
        let mut bounds = HashSet::new();
        walk_expression(&node.test, &mut |expr| {
            if let Expr::Name(name) = expr {
                bounds.insert(name.id.to_string());
            }
        });
        if tested.iter().any(|name| bounds.contains(name))
            && tested
                .iter()
                .all(|name| bounds.contains(name) || !grown.contains(name.as_str()))
        {
            return None;
        }
    }
    // What the loop appends to first: a counter it only adds to says less.
    let mut gathered: Vec<&String> = tested
        .iter()
        .filter(|name| grown.contains(name.as_str()) && !counters.contains(name.as_str()))
        .collect();
    gathered.sort_by_key(|name| (!appended.contains(name.as_str()), name.as_str()));
    let (Some(name), Some(draw)) = (gathered.first(), draws) else {
        return None;
    };
    let line = program.line(span(site.call).start);
    Some(
        Decision::new(
            COLLECTIVES_ALIGNED,
            Verdict::Unknown,
            span(gate),
            format!(
                "the step at line {line} runs only when this test on `{name}` holds, and the loop gathers `{name}` with random draws of each rank's own (line {}): the ranks may take different numbers of steps, and the one with fewer leaves the others waiting in an allreduce",
                program.line(draw)
            ),
        )
        .with_suggestion("make every rank take the same number of steps: draw with one seed on every rank and take this rank's share of the batches, or agree on the count with an allreduce of its minimum"),
    )
}

/// Whether the gate's own block adds to a name the `while` loop's test reads.
fn gate_advances_the_bound(gate: &ast::StmtIf, test: &Expr) -> bool {
    let mut bounds = HashSet::new();
    walk_expression(test, &mut |expr| {
        if let Expr::Name(name) = expr {
            bounds.insert(name.id.to_string());
        }
    });
    gate.body.iter().any(|statement| {
        matches!(statement, Stmt::AugAssign(node)
            if matches!(node.op, ast::Operator::Add)
                && matches!(node.target.as_ref(), Expr::Name(name) if bounds.contains(name.id.as_str())))
    })
}
