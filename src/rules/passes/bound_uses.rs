//! What counts with a bound the work split divided follows it: the running
//! averages that divide by it (`avg_cost += c / total_batch`), the tests of
//! the loop's variable against it (`if i == n - 1:`), and the ranges after
//! the loop that index what it recorded (`eval_indices = range(0, n, k)`
//! plotted against losses appended every `k` steps).
//!
//! Input: the loop and the bound just divided. Output: division edits.

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::analysis::walk::{walk_expression, walk_statement_expressions};
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

/// Divides what counts with `bound`, which the split of `loop_statement` divided.
pub fn follow_divided_bound(rewrite: &mut ModuleRewrite, loop_statement: &Stmt, bound: &Expr) {
    divide_running_averages(rewrite, loop_statement, bound);
    divide_last_step_tests(rewrite, loop_statement, bound);
    divide_later_ranges(rewrite, loop_statement, bound);
}

/// `generations` bounds the loop, which records a value every `eval_every`
/// steps, and `range(0, generations, eval_every)` after it numbers the
/// records. The records and the range agree only when the loop runs a whole
/// number of `eval_every`s, so the name is bound again before the loop to
/// each worker's share, rounded down to one (at least one):
/// `generations = max(eval_every, generations // hvd.size() // eval_every *
/// eval_every)`; every later use reads it. Returns whether it did.
pub fn rebind_for_recorded_steps(
    rewrite: &mut ModuleRewrite,
    loop_statement: &Stmt,
    bound: &Expr,
) -> bool {
    let Expr::Name(name) = bound else {
        return false;
    };
    let scope = &rewrite.module.scopes[rewrite.module.scope_at(span(loop_statement).start)];
    let Some(step) = step_of_later_range(rewrite, scope, loop_statement, bound) else {
        return false;
    };
    // Before the outermost loop around this one, which must not assign the name.
    let outermost = crate::analysis::walk::path_to(scope.body, &span(loop_statement))
        .and_then(|path| {
            path.into_iter()
                .find(|statement| crate::analysis::walk::is_loop(statement))
        })
        .unwrap_or(loop_statement);
    let assigned_inside = scope.facts.assignments.iter().any(|assignment| {
        assignment.name == name.id.as_str() && {
            let at = span(assignment.statement);
            span(outermost).start <= at.start && at.end <= span(outermost).end
        }
    });
    if assigned_inside || !rewrite.owns_its_lines(&span(outermost)) {
        return false;
    }
    let size = rewrite.horovod_call("size");
    let name = name.id.as_str();
    rewrite.insert_before_statement(
        &span(outermost),
        &[format!(
            "{name} = max({step}, {name} // {size} // {step} * {step})  # this worker's share, whole `{step}`s"
        )],
    );
    true
}

/// The step of a `range(start, bound, step)` after the loop, in its scope,
/// that is not a `for` loop of its own.
fn step_of_later_range(
    rewrite: &ModuleRewrite,
    scope: &crate::analysis::training::Scope,
    loop_statement: &Stmt,
    bound: &Expr,
) -> Option<String> {
    let bound_text = rewrite.expression_text(bound);
    let loop_end = span(loop_statement).end;
    let mut step = None;
    for stmt in &scope.facts.statements {
        if span(*stmt).start < loop_end || step.is_some() {
            continue;
        }
        let iterated = match stmt {
            Stmt::For(node) => Some(span(node.iter.as_ref())),
            _ => None,
        };
        walk_statement_expressions(stmt, &mut |expr| {
            if let Expr::Call(call) = expr
                && iterated.as_ref() != Some(&span(expr))
                && matches!(call.func.as_ref(), Expr::Name(range) if range.id.as_str() == "range")
                && let [_, stop, by] = call.args.as_slice()
                && rewrite.expression_text(stop) == bound_text
                && step.is_none()
            {
                step = Some(rewrite.expression_text(by).to_string());
            }
        });
    }
    step
}

/// `eval_indices = range(0, generations, eval_every)` after a loop whose
/// bound `generations` was divided: it indexes what the loop recorded, so
/// it is divided too (undivided, it is longer than the records, and a plot
/// of one against the other fails). A later `for` over such a range is a
/// loop of its own and keeps its count.
fn divide_later_ranges(rewrite: &mut ModuleRewrite, loop_statement: &Stmt, bound: &Expr) {
    if !matches!(bound, Expr::Name(_) | Expr::Attribute(_)) {
        return;
    }
    let bound_text = rewrite.expression_text(bound);
    let loop_end = span(loop_statement).end;
    let scope = &rewrite.module.scopes[rewrite.module.scope_at(span(loop_statement).start)];
    let mut stops = Vec::new();
    for stmt in &scope.facts.statements {
        if span(*stmt).start < loop_end {
            continue;
        }
        let iterated = match stmt {
            Stmt::For(node) => Some(span(node.iter.as_ref())),
            _ => None,
        };
        walk_statement_expressions(stmt, &mut |expr| {
            let Expr::Call(call) = expr else {
                return;
            };
            if iterated.as_ref() == Some(&span(expr)) {
                return;
            }
            let is_range =
                matches!(call.func.as_ref(), Expr::Name(name) if name.id.as_str() == "range");
            let stop = match call.args.as_slice() {
                [stop] | [_, stop] | [_, stop, _] => stop,
                _ => return,
            };
            if is_range && rewrite.expression_text(stop) == bound_text {
                stops.push(stop);
            }
        });
    }
    for stop in stops {
        rewrite.divide_expression(stop);
    }
}

/// After dividing `bound`, divisions by the same expression later in the
/// scope (`avg_cost += c / total_batch`, `loss / num_batches`) divide by the
/// divided count, so the means the loop prints stay means.
fn divide_running_averages(rewrite: &mut ModuleRewrite, loop_statement: &Stmt, bound: &Expr) {
    if !matches!(bound, Expr::Name(_) | Expr::Attribute(_)) {
        return;
    }
    let bound_text = rewrite.expression_text(bound);
    let loop_start = span(loop_statement).start;
    let scope = &rewrite.module.scopes[rewrite.module.scope_at(loop_start)];
    let mut divisors = Vec::new();
    for stmt in &scope.facts.statements {
        walk_statement_expressions(stmt, &mut |expr| {
            if let Expr::BinOp(division) = expr
                && division.op == ast::Operator::Div
                && span(division.right.as_ref()).start > loop_start
                && rewrite.expression_text(&division.right) == bound_text
            {
                divisors.push(division.right.as_ref());
            }
        });
    }
    for divisor in divisors {
        rewrite.divide_expression(divisor);
    }
}

/// After dividing `bound`, tests in the loop body that compare the loop's
/// variable with the same bound (`if i == num_iterations - 1:` to save or
/// print at the last step) compare with the divided bound: the undivided
/// one is never reached, and the last save would be lost.
fn divide_last_step_tests(rewrite: &mut ModuleRewrite, loop_statement: &Stmt, bound: &Expr) {
    let Stmt::For(for_loop) = loop_statement else {
        return;
    };
    if !matches!(bound, Expr::Name(_) | Expr::Attribute(_)) {
        return;
    }
    let variables = crate::analysis::walk::target_names(&for_loop.target);
    let bound_text = rewrite.expression_text(bound);
    let mentions_variable = |expr: &Expr| {
        let mut found = false;
        walk_expression(expr, &mut |inner| {
            found |= matches!(inner, Expr::Name(name) if variables.contains(&name.id.as_str()));
        });
        found
    };
    let mut bounds = Vec::new();
    crate::analysis::walk::for_each_statement(&for_loop.body, false, &mut |statement| {
        walk_statement_expressions(statement, &mut |expr| {
            let Expr::Compare(compare) = expr else {
                return;
            };
            let sides: Vec<&Expr> = std::iter::once(compare.left.as_ref())
                .chain(compare.comparators.iter())
                .collect();
            if !sides.iter().any(|side| mentions_variable(side)) {
                return;
            }
            for side in sides.iter().filter(|side| !mentions_variable(side)) {
                walk_expression(side, &mut |inner| {
                    if matches!(inner, Expr::Name(_) | Expr::Attribute(_))
                        && rewrite.expression_text(inner) == bound_text
                    {
                        bounds.push(inner);
                    }
                });
            }
        });
    });
    for compared in bounds {
        rewrite.divide_expression(compared);
    }
}
