//! Tapes that demonstrate differentiation rather than train: every gradient
//! they take is only shown (`dy_dx = tape.gradient(y, x)`, then
//! `print(dy_dx)`), so no optimizer can apply it. Tutorials put such a cell
//! beside their training loop; wrapping it for Horovod averages a gradient
//! nobody uses, and Horovod's tape fails on a bare variable as its source.

use std::ops::Range;

use rustpython_parser::ast::{self, Expr, Stmt};

use super::Scope;
use super::sites::tape_opened;
use crate::analysis::walk::{for_each_statement, walk_statement_expressions};
use crate::python::parse::span;

/// Whether every `gradient` call on the tape `stmt` opens is shown and
/// nothing else: printed directly, or bound to a name that the scope only
/// prints afterwards, differentiates again (`t1.gradient(dx, x)`), or
/// returns from a function that is only called to be printed; and no other
/// function reads it. `module_body` is the whole module's.
pub fn gradients_only_shown(scope: &Scope, stmt: &Stmt, module_body: &[Stmt]) -> bool {
    let Some(tape) = tape_opened(scope, stmt) else {
        return false;
    };
    // This tape's calls: up to where the name is bound to another tape.
    let opened = span(stmt).start;
    let mut until = usize::MAX;
    for_each_statement(scope.body, false, &mut |statement| {
        if let Stmt::With(other) = statement
            && span(statement).start > opened
            && other.items.iter().any(|item| {
                matches!(item.optional_vars.as_deref(), Some(Expr::Name(name)) if name.id.as_str() == tape)
            })
        {
            until = until.min(span(statement).start);
        }
    });
    let gradients: Vec<_> = scope
        .facts
        .calls
        .iter()
        .filter(|site| (opened..until).contains(&span(site.call).start))
        .filter(|site| {
            matches!(site.call.func.as_ref(), Expr::Attribute(attribute)
                if attribute.attr.as_str() == "gradient"
                    && matches!(attribute.value.as_ref(), Expr::Name(receiver) if receiver.id.as_str() == tape))
        })
        .collect();
    // A tape the program wraps for Horovod itself stays a site, so that the
    // checker can say its gradients feed no optimizer step.
    let wrapped = scope.facts.calls.iter().any(|site| {
        (opened..until).contains(&span(site.call).start)
            && matches!(site.call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "DistributedGradientTape")
            && matches!(site.call.args.first(), Some(Expr::Name(name)) if name.id.as_str() == tape)
    });
    let shown = printed_ranges(scope.body);
    !wrapped
        && !gradients.is_empty()
        && gradients.iter().all(|site| {
            let call = span(site.call);
            if within(&shown, &call) {
                return true;
            }
            match site.statement {
                Stmt::Assign(assign) if span(assign.value.as_ref()) == call => {
                    match assign.targets.as_slice() {
                        [Expr::Name(name)] => {
                            let returned_to_print = function_only_printed(scope, module_body);
                            only_printed(
                                scope.body,
                                name.id.as_str(),
                                call.end,
                                &shown,
                                returned_to_print,
                            )
                        }
                        _ => false,
                    }
                }
                _ => false,
            }
        })
}

/// The argument ranges of every `print(...)` call in `body`, nested
/// functions included.
fn printed_ranges(body: &[Stmt]) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    for_each_statement(body, true, &mut |statement| {
        walk_statement_expressions(statement, &mut |expr| {
            if let Expr::Call(ast::ExprCall { func, args, .. }) = expr
                && matches!(func.as_ref(), Expr::Name(name) if name.id.as_str() == "print")
            {
                ranges.extend(args.iter().map(span));
            }
        });
    });
    ranges
}

fn within(ranges: &[Range<usize>], inner: &Range<usize>) -> bool {
    ranges
        .iter()
        .any(|outer| outer.start <= inner.start && inner.end <= outer.end)
}

/// Whether every read of `name` after `after` in `body` is inside a print
/// or calls it (a function of that name defined later: a gradient is not
/// callable), and every read in a nested function that does not bind the
/// name itself calls it.
fn only_printed(
    body: &[Stmt],
    name: &str,
    after: usize,
    shown: &[Range<usize>],
    returned_to_print: bool,
) -> bool {
    let mut fine = true;
    for_each_statement(body, false, &mut |statement| {
        let called = called_ranges(statement);
        let differentiated = differentiated_ranges(statement);
        let returned = returned_to_print && matches!(statement, Stmt::Return(_));
        walk_statement_expressions(statement, &mut |expr| {
            if reads(expr, name) {
                let at = span(expr);
                fine &= called.contains(&at)
                    || at.start < after
                    || within(shown, &at)
                    || within(&differentiated, &at)
                    || returned;
            }
        });
        fine &= nested_reads_call(statement, name);
    });
    fine
}

/// For a `def` or `class` statement: every read of `name` in its body,
/// unless the function binds the name itself, is the callee of a call.
fn nested_reads_call(statement: &Stmt, name: &str) -> bool {
    let body = match statement {
        Stmt::FunctionDef(function) if !binds(&function.args, &function.body, name) => {
            &function.body
        }
        Stmt::AsyncFunctionDef(function) if !binds(&function.args, &function.body, name) => {
            &function.body
        }
        Stmt::ClassDef(class) => &class.body,
        _ => return true,
    };
    let mut fine = true;
    for_each_statement(body, false, &mut |inner| {
        let called = called_ranges(inner);
        walk_statement_expressions(inner, &mut |expr| {
            fine &= !reads(expr, name) || called.contains(&span(expr));
        });
        fine &= nested_reads_call(inner, name);
    });
    fine
}

/// Whether a function binds `name` itself: a parameter, an assignment or a
/// nested definition of its own.
fn binds(arguments: &ast::Arguments, body: &[Stmt], name: &str) -> bool {
    let parameter = arguments
        .posonlyargs
        .iter()
        .chain(&arguments.args)
        .chain(&arguments.kwonlyargs)
        .any(|argument| argument.def.arg.as_str() == name);
    let mut bound = parameter;
    for_each_statement(body, false, &mut |statement| {
        bound |= match statement {
            Stmt::FunctionDef(function) => function.name.as_str() == name,
            Stmt::AsyncFunctionDef(function) => function.name.as_str() == name,
            Stmt::ClassDef(class) => class.name.as_str() == name,
            _ => false,
        };
        walk_statement_expressions(statement, &mut |expr| {
            bound |= matches!(expr, Expr::Name(target)
                if target.id.as_str() == name && target.ctx == ast::ExprContext::Store);
        });
    });
    bound
}

fn reads(expr: &Expr, name: &str) -> bool {
    matches!(expr, Expr::Name(read) if read.id.as_str() == name && read.ctx == ast::ExprContext::Load)
}

/// The arguments of the `gradient` calls of one statement: a gradient
/// differentiated again (a second derivative) is shown through that one.
fn differentiated_ranges(statement: &Stmt) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    walk_statement_expressions(statement, &mut |expr| {
        if let Expr::Call(call) = expr
            && matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "gradient")
        {
            ranges.extend(call.args.iter().map(span));
        }
    });
    ranges
}

/// Whether the scope is a module function that is called, and only inside
/// prints (`print(grad_logexp(x).numpy())`): what it returns is shown.
fn function_only_printed(scope: &Scope, module_body: &[Stmt]) -> bool {
    if scope.function.is_none() || scope.class.is_some() {
        return false;
    }
    let name = scope.name();
    let shown = printed_ranges(module_body);
    let mut calls = 0;
    let mut fine = true;
    for_each_statement(module_body, true, &mut |statement| {
        walk_statement_expressions(statement, &mut |expr| {
            if reads(expr, name) {
                calls += 1;
                fine &= within(&shown, &span(expr));
            }
        });
    });
    calls > 0 && fine
}

/// The callee ranges of the calls of one statement.
fn called_ranges(statement: &Stmt) -> Vec<Range<usize>> {
    let mut called = Vec::new();
    walk_statement_expressions(statement, &mut |expr| {
        if let Expr::Call(call) = expr {
            called.push(span(call.func.as_ref()));
        }
    });
    called
}
