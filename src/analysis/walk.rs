//! Borrowing walks over the syntax tree: nested statement lists and the
//! expressions of a statement. Depth is bounded so that pathological input
//! cannot exhaust the stack (the parser already refuses what CPython refuses).

use rustpython_parser::ast::{self, Expr, Stmt};

/// Deeper expressions than this are not looked into.
const MAX_EXPRESSION_DEPTH: usize = 400;

/// The statement lists nested directly in `stmt` (bodies of compound statements).
pub fn nested_bodies(stmt: &Stmt) -> Vec<&[Stmt]> {
    match stmt {
        Stmt::FunctionDef(function) => vec![&function.body],
        Stmt::AsyncFunctionDef(function) => vec![&function.body],
        Stmt::ClassDef(class) => vec![&class.body],
        Stmt::For(node) => vec![&node.body, &node.orelse],
        Stmt::AsyncFor(node) => vec![&node.body, &node.orelse],
        Stmt::While(node) => vec![&node.body, &node.orelse],
        Stmt::If(node) => vec![&node.body, &node.orelse],
        Stmt::With(node) => vec![&node.body],
        Stmt::AsyncWith(node) => vec![&node.body],
        Stmt::Match(node) => node.cases.iter().map(|case| case.body.as_slice()).collect(),
        Stmt::Try(node) => try_bodies(&node.body, &node.handlers, &node.orelse, &node.finalbody),
        Stmt::TryStar(node) => {
            try_bodies(&node.body, &node.handlers, &node.orelse, &node.finalbody)
        }
        _ => Vec::new(),
    }
}

fn try_bodies<'a>(
    body: &'a [Stmt],
    handlers: &'a [ast::ExceptHandler],
    orelse: &'a [Stmt],
    finalbody: &'a [Stmt],
) -> Vec<&'a [Stmt]> {
    let mut bodies = vec![body];
    for handler in handlers {
        let ast::ExceptHandler::ExceptHandler(handler) = handler;
        bodies.push(&handler.body);
    }
    bodies.push(orelse);
    bodies.push(finalbody);
    bodies
}

/// Whether `stmt` starts a new Python scope (its body is not executed in place).
pub fn is_scope(stmt: &Stmt) -> bool {
    matches!(
        stmt,
        Stmt::FunctionDef(_) | Stmt::AsyncFunctionDef(_) | Stmt::ClassDef(_)
    )
}

/// Visits every statement of `body` in source order, descending into nested
/// blocks but not into function or class bodies when `enter_scopes` is false.
pub fn for_each_statement<'a>(
    body: &'a [Stmt],
    enter_scopes: bool,
    visit: &mut dyn FnMut(&'a Stmt),
) {
    for stmt in body {
        visit(stmt);
        if enter_scopes || !is_scope(stmt) {
            for_each_nested_body(stmt, &mut |nested| {
                for_each_statement(nested, enter_scopes, visit)
            });
        }
    }
}

/// Visits the statement lists nested directly in `stmt`, as `nested_bodies`
/// lists them, without collecting them (walks run over every statement).
fn for_each_nested_body<'a>(stmt: &'a Stmt, visit: &mut dyn FnMut(&'a [Stmt])) {
    let mut visit_try = |body: &'a [Stmt],
                         handlers: &'a [ast::ExceptHandler],
                         orelse: &'a [Stmt],
                         finalbody: &'a [Stmt]| {
        visit(body);
        for handler in handlers {
            let ast::ExceptHandler::ExceptHandler(handler) = handler;
            visit(&handler.body);
        }
        visit(orelse);
        visit(finalbody);
    };
    match stmt {
        Stmt::Try(node) => visit_try(&node.body, &node.handlers, &node.orelse, &node.finalbody),
        Stmt::TryStar(node) => visit_try(&node.body, &node.handlers, &node.orelse, &node.finalbody),
        Stmt::Match(node) => node.cases.iter().for_each(|case| visit(&case.body)),
        Stmt::FunctionDef(function) => visit(&function.body),
        Stmt::AsyncFunctionDef(function) => visit(&function.body),
        Stmt::ClassDef(class) => visit(&class.body),
        Stmt::For(node) => [&node.body, &node.orelse]
            .into_iter()
            .for_each(|b| visit(b)),
        Stmt::AsyncFor(node) => [&node.body, &node.orelse]
            .into_iter()
            .for_each(|b| visit(b)),
        Stmt::While(node) => [&node.body, &node.orelse]
            .into_iter()
            .for_each(|b| visit(b)),
        Stmt::If(node) => [&node.body, &node.orelse]
            .into_iter()
            .for_each(|b| visit(b)),
        Stmt::With(node) => visit(&node.body),
        Stmt::AsyncWith(node) => visit(&node.body),
        _ => {}
    }
}

/// The expressions that belong to `stmt` itself (not to nested statements).
pub fn own_expressions(stmt: &Stmt) -> Vec<&Expr> {
    match stmt {
        Stmt::FunctionDef(function) => {
            let mut expressions: Vec<&Expr> = function.decorator_list.iter().collect();
            expressions.extend(argument_defaults(&function.args));
            expressions
        }
        Stmt::AsyncFunctionDef(function) => {
            let mut expressions: Vec<&Expr> = function.decorator_list.iter().collect();
            expressions.extend(argument_defaults(&function.args));
            expressions
        }
        Stmt::ClassDef(class) => {
            let mut expressions: Vec<&Expr> = class.decorator_list.iter().collect();
            expressions.extend(class.bases.iter());
            expressions.extend(class.keywords.iter().map(|keyword| &keyword.value));
            expressions
        }
        Stmt::Return(node) => node.value.iter().map(|value| value.as_ref()).collect(),
        Stmt::Delete(node) => node.targets.iter().collect(),
        Stmt::Assign(node) => {
            let mut expressions: Vec<&Expr> = node.targets.iter().collect();
            expressions.push(&node.value);
            expressions
        }
        Stmt::AugAssign(node) => vec![&node.target, &node.value],
        Stmt::AnnAssign(node) => {
            let mut expressions: Vec<&Expr> = vec![&node.target];
            expressions.extend(node.value.as_deref());
            expressions
        }
        Stmt::For(node) => vec![&node.target, &node.iter],
        Stmt::AsyncFor(node) => vec![&node.target, &node.iter],
        Stmt::While(node) => vec![&node.test],
        Stmt::If(node) => vec![&node.test],
        Stmt::With(node) => with_expressions(&node.items),
        Stmt::AsyncWith(node) => with_expressions(&node.items),
        Stmt::Match(node) => vec![&node.subject],
        Stmt::Raise(node) => node
            .exc
            .iter()
            .chain(node.cause.iter())
            .map(|e| e.as_ref())
            .collect(),
        Stmt::Try(node) => handler_types(&node.handlers),
        Stmt::TryStar(node) => handler_types(&node.handlers),
        Stmt::Assert(node) => {
            let mut expressions: Vec<&Expr> = vec![&node.test];
            expressions.extend(node.msg.as_deref());
            expressions
        }
        Stmt::Expr(node) => vec![&node.value],
        _ => Vec::new(),
    }
}

fn argument_defaults(arguments: &ast::Arguments) -> impl Iterator<Item = &Expr> {
    arguments
        .posonlyargs
        .iter()
        .chain(arguments.args.iter())
        .chain(arguments.kwonlyargs.iter())
        .filter_map(|argument| argument.default.as_deref())
}

fn with_expressions(items: &[ast::WithItem]) -> Vec<&Expr> {
    items
        .iter()
        .flat_map(|item| std::iter::once(&item.context_expr).chain(item.optional_vars.as_deref()))
        .collect()
}

fn handler_types(handlers: &[ast::ExceptHandler]) -> Vec<&Expr> {
    handlers
        .iter()
        .filter_map(|handler| {
            let ast::ExceptHandler::ExceptHandler(handler) = handler;
            handler.type_.as_deref()
        })
        .collect()
}

/// The direct sub-expressions of `expr`.
pub fn child_expressions(expr: &Expr) -> Vec<&Expr> {
    match expr {
        Expr::BoolOp(node) => node.values.iter().collect(),
        Expr::NamedExpr(node) => vec![&node.target, &node.value],
        Expr::BinOp(node) => vec![&node.left, &node.right],
        Expr::UnaryOp(node) => vec![&node.operand],
        Expr::Lambda(node) => vec![&node.body],
        Expr::IfExp(node) => vec![&node.test, &node.body, &node.orelse],
        Expr::Dict(node) => node
            .keys
            .iter()
            .flatten()
            .chain(node.values.iter())
            .collect(),
        Expr::Set(node) => node.elts.iter().collect(),
        Expr::ListComp(node) => comprehension(&node.elt, None, &node.generators),
        Expr::SetComp(node) => comprehension(&node.elt, None, &node.generators),
        Expr::DictComp(node) => comprehension(&node.key, Some(&node.value), &node.generators),
        Expr::GeneratorExp(node) => comprehension(&node.elt, None, &node.generators),
        Expr::Await(node) => vec![&node.value],
        Expr::Yield(node) => node.value.iter().map(|value| value.as_ref()).collect(),
        Expr::YieldFrom(node) => vec![&node.value],
        Expr::Compare(node) => std::iter::once(node.left.as_ref())
            .chain(node.comparators.iter())
            .collect(),
        Expr::Call(node) => std::iter::once(node.func.as_ref())
            .chain(node.args.iter())
            .chain(node.keywords.iter().map(|keyword| &keyword.value))
            .collect(),
        Expr::FormattedValue(node) => std::iter::once(node.value.as_ref())
            .chain(node.format_spec.as_deref())
            .collect(),
        Expr::JoinedStr(node) => node.values.iter().collect(),
        Expr::Attribute(node) => vec![&node.value],
        Expr::Subscript(node) => vec![&node.value, &node.slice],
        Expr::Starred(node) => vec![&node.value],
        Expr::List(node) => node.elts.iter().collect(),
        Expr::Tuple(node) => node.elts.iter().collect(),
        Expr::Slice(node) => [&node.lower, &node.upper, &node.step]
            .into_iter()
            .filter_map(|part| part.as_deref())
            .collect(),
        Expr::Constant(_) | Expr::Name(_) => Vec::new(),
    }
}

fn comprehension<'a>(
    element: &'a Expr,
    value: Option<&'a Expr>,
    generators: &'a [ast::Comprehension],
) -> Vec<&'a Expr> {
    let mut expressions = vec![element];
    expressions.extend(value);
    for generator in generators {
        expressions.push(&generator.target);
        expressions.push(&generator.iter);
        expressions.extend(generator.ifs.iter());
    }
    expressions
}

/// Visits `expr` and every expression inside it, outermost first.
pub fn walk_expression<'a>(expr: &'a Expr, visit: &mut dyn FnMut(&'a Expr)) {
    walk_expression_bounded(expr, visit, 0);
}

fn walk_expression_bounded<'a>(expr: &'a Expr, visit: &mut dyn FnMut(&'a Expr), depth: usize) {
    if depth > MAX_EXPRESSION_DEPTH {
        return;
    }
    visit(expr);
    for_each_child_expression(expr, &mut |child| {
        walk_expression_bounded(child, visit, depth + 1)
    });
}

/// Visits the direct sub-expressions of `expr` in `child_expressions`'
/// order, without collecting them (every walk visits every expression).
fn for_each_child_expression<'a>(expr: &'a Expr, visit: &mut dyn FnMut(&'a Expr)) {
    let all = |expressions: &'a [Expr], visit: &mut dyn FnMut(&'a Expr)| {
        expressions.iter().for_each(&mut *visit)
    };
    match expr {
        Expr::BoolOp(node) => all(&node.values, visit),
        Expr::NamedExpr(node) => {
            visit(&node.target);
            visit(&node.value);
        }
        Expr::BinOp(node) => {
            visit(&node.left);
            visit(&node.right);
        }
        Expr::UnaryOp(node) => visit(&node.operand),
        Expr::Lambda(node) => visit(&node.body),
        Expr::IfExp(node) => {
            visit(&node.test);
            visit(&node.body);
            visit(&node.orelse);
        }
        Expr::Dict(node) => {
            node.keys.iter().flatten().for_each(&mut *visit);
            all(&node.values, visit);
        }
        Expr::Set(node) => all(&node.elts, visit),
        Expr::ListComp(_) | Expr::SetComp(_) | Expr::DictComp(_) | Expr::GeneratorExp(_) => {
            child_expressions(expr).into_iter().for_each(visit)
        }
        Expr::Compare(node) => {
            visit(&node.left);
            all(&node.comparators, visit);
        }
        Expr::Call(node) => {
            visit(&node.func);
            all(&node.args, visit);
            node.keywords
                .iter()
                .for_each(|keyword| visit(&keyword.value));
        }
        Expr::Await(node) => visit(&node.value),
        Expr::Yield(node) => node.value.iter().for_each(|value| visit(value)),
        Expr::YieldFrom(node) => visit(&node.value),
        Expr::FormattedValue(node) => {
            visit(&node.value);
            node.format_spec.iter().for_each(|spec| visit(spec));
        }
        Expr::JoinedStr(node) => all(&node.values, visit),
        Expr::Attribute(node) => visit(&node.value),
        Expr::Subscript(node) => {
            visit(&node.value);
            visit(&node.slice);
        }
        Expr::Starred(node) => visit(&node.value),
        Expr::List(node) => all(&node.elts, visit),
        Expr::Tuple(node) => all(&node.elts, visit),
        Expr::Slice(node) => [&node.lower, &node.upper, &node.step]
            .into_iter()
            .filter_map(|part| part.as_deref())
            .for_each(visit),
        Expr::Constant(_) | Expr::Name(_) => {}
    }
}

/// Visits every expression of `stmt` itself (not of nested statements).
pub fn walk_statement_expressions<'a>(stmt: &'a Stmt, visit: &mut dyn FnMut(&'a Expr)) {
    for expr in own_expressions(stmt) {
        walk_expression(expr, visit);
    }
}

/// Every call expression in `stmt` itself (not in nested statements).
pub fn calls_in_statement(stmt: &Stmt) -> Vec<&ast::ExprCall> {
    let mut calls = Vec::new();
    for expr in own_expressions(stmt) {
        collect_calls(expr, &mut calls, 0);
    }
    calls
}

/// The value `name` takes in `a, b = x, y`.
pub fn unpacked_element<'e>(statement: &'e Stmt, name: &str) -> Option<&'e Expr> {
    let Stmt::Assign(assign) = statement else {
        return None;
    };
    let ([Expr::Tuple(targets)], Expr::Tuple(values)) =
        (assign.targets.as_slice(), assign.value.as_ref())
    else {
        return None;
    };
    let position = targets
        .elts
        .iter()
        .position(|target| matches!(target, Expr::Name(target) if target.id.as_str() == name))?;
    values.elts.get(position)
}

/// The calls in `expr`, outermost first, as `walk_expression` meets them:
/// the walk every analysis step repeats, so without a visitor per node.
fn collect_calls<'a>(expr: &'a Expr, calls: &mut Vec<&'a ast::ExprCall>, depth: usize) {
    if depth > MAX_EXPRESSION_DEPTH {
        return;
    }
    match expr {
        Expr::Constant(_) | Expr::Name(_) => {}
        Expr::Attribute(node) => collect_calls(&node.value, calls, depth + 1),
        Expr::Call(call) => {
            calls.push(call);
            collect_calls(&call.func, calls, depth + 1);
            for argument in &call.args {
                collect_calls(argument, calls, depth + 1);
            }
            for keyword in &call.keywords {
                collect_calls(&keyword.value, calls, depth + 1);
            }
        }
        _ => for_each_child_expression(expr, &mut |child| collect_calls(child, calls, depth + 1)),
    }
}

/// The dotted text of a name or attribute chain (`a.b.c`), if it is one.
pub fn dotted_name(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Name(name) => Some(name.id.to_string()),
        Expr::Attribute(attribute) => {
            dotted_name(&attribute.value).map(|base| format!("{base}.{}", attribute.attr))
        }
        _ => None,
    }
}

/// The keyword argument `name` of a call.
pub fn keyword<'a>(call: &'a ast::ExprCall, name: &str) -> Option<&'a ast::Keyword> {
    call.keywords
        .iter()
        .find(|keyword| keyword.arg.as_ref().is_some_and(|arg| arg.as_str() == name))
}

/// The names a target expression binds (`a`, `a, b`, `[a, *b]`).
pub fn target_names(target: &Expr) -> Vec<&str> {
    match target {
        Expr::Name(name) => vec![name.id.as_str()],
        Expr::Tuple(tuple) => tuple.elts.iter().flat_map(target_names).collect(),
        Expr::List(list) => list.elts.iter().flat_map(target_names).collect(),
        Expr::Starred(starred) => target_names(&starred.value),
        _ => Vec::new(),
    }
}

/// Whether `name` is read anywhere in `body` other than as the callee of a call.
pub fn mentions_name_outside_calls(body: &[Stmt], name: &str) -> bool {
    let mut found = false;
    for_each_statement(body, true, &mut |stmt| {
        let mut callees = Vec::new();
        walk_statement_expressions(stmt, &mut |expr| {
            if let Expr::Call(call) = expr {
                callees.push(crate::python::parse::span(call.func.as_ref()));
            }
        });
        walk_statement_expressions(stmt, &mut |expr| {
            if let Expr::Name(candidate) = expr
                && candidate.id.as_str() == name
                && !callees.contains(&crate::python::parse::span(expr))
            {
                found = true;
            }
        });
    });
    found
}

/// Whether two ranges of a body sit in different branches of one `if` (a
/// cached file written in one, read in the other; a model bound again in
/// one, trained in the other): one pass runs only one of them.
pub fn in_other_branches(
    body: &[Stmt],
    first: &std::ops::Range<usize>,
    second: &std::ops::Range<usize>,
) -> bool {
    use crate::python::parse::span;
    let Some(path) = path_to(body, first) else {
        return false;
    };
    let within = |branch: &[Stmt], range: &std::ops::Range<usize>| {
        branch
            .first()
            .zip(branch.last())
            .is_some_and(|(start, end)| {
                span(start).start <= range.start && range.end <= span(end).end
            })
    };
    path.iter().any(|statement| match statement {
        Stmt::If(choice) => {
            (within(&choice.body, first) && within(&choice.orelse, second))
                || (within(&choice.orelse, first) && within(&choice.body, second))
        }
        _ => false,
    })
}

/// Statements from `body` down to `target`: the chain of enclosing statements.
pub fn path_to<'a>(body: &'a [Stmt], target: &std::ops::Range<usize>) -> Option<Vec<&'a Stmt>> {
    if target.is_empty() {
        return path_to_by_scanning(body, target);
    }
    // Statements of a body are ordered and disjoint: only the last one
    // starting at or before the target can be it or hold it (a linear scan
    // made a module of many statements quadratic).
    let index = body
        .partition_point(|stmt| crate::python::parse::span(stmt).start <= target.start)
        .checked_sub(1)?;
    let stmt = &body[index];
    let range = crate::python::parse::span(stmt);
    if range == *target {
        return Some(vec![stmt]);
    }
    if range.start <= target.start && target.end <= range.end {
        for nested in nested_bodies(stmt) {
            if let Some(mut path) = path_to(nested, target) {
                path.insert(0, stmt);
                return Some(path);
            }
        }
    }
    None
}

/// `path_to` for an empty range, which several statements may hold.
fn path_to_by_scanning<'a>(
    body: &'a [Stmt],
    target: &std::ops::Range<usize>,
) -> Option<Vec<&'a Stmt>> {
    for stmt in body {
        let range = crate::python::parse::span(stmt);
        if range == *target {
            return Some(vec![stmt]);
        }
        if range.start <= target.start && target.end <= range.end {
            for nested in nested_bodies(stmt) {
                if let Some(mut path) = path_to_by_scanning(nested, target) {
                    path.insert(0, stmt);
                    return Some(path);
                }
            }
        }
    }
    None
}

/// `ds.take(n)` with a literal n of ten or fewer: a look at the first
/// batches (a print, a plot), not a cut of the data a job trains on.
pub fn is_peek_take(call: &ast::ExprCall) -> bool {
    matches!(call.func.as_ref(), Expr::Attribute(method) if method.attr.as_str() == "take")
        && matches!(
            call.args.first(),
            Some(Expr::Constant(constant))
                if matches!(&constant.value, ast::Constant::Int(count) if *count <= 10u32.into())
        )
}

pub fn is_loop(stmt: &Stmt) -> bool {
    matches!(stmt, Stmt::For(_) | Stmt::While(_) | Stmt::AsyncFor(_))
}

/// The receiver a chain of method calls starts from (`ds` of `ds.a().b()`).
pub fn chain_root(expr: &Expr) -> &Expr {
    let mut root = expr;
    loop {
        match root {
            Expr::Call(call) => match call.func.as_ref() {
                Expr::Attribute(attribute) => root = &attribute.value,
                _ => return root,
            },
            _ => return root,
        }
    }
}

/// The methods of a chain of calls on a receiver, outermost last:
/// `ds.shard(...).repeat().take(n)` gives `shard`, `repeat`, `take` with
/// each call's range.
pub fn method_chain(expr: &Expr) -> Vec<(&str, &ast::ExprCall)> {
    let mut chain = Vec::new();
    let mut current = expr;
    loop {
        match current {
            Expr::Call(call) => match call.func.as_ref() {
                Expr::Attribute(attribute) => {
                    chain.push((attribute.attr.as_str(), call));
                    current = &attribute.value;
                }
                _ => break,
            },
            Expr::Attribute(attribute) => current = &attribute.value,
            _ => break,
        }
    }
    chain.reverse();
    chain
}

/// An expression's shape without its source positions, to compare two.
pub fn expression_shape(expr: &Expr) -> String {
    let mut parts = Vec::new();
    walk_expression(expr, &mut |inner| match inner {
        Expr::Name(name) => parts.push(name.id.to_string()),
        Expr::Constant(constant) => parts.push(format!("{:?}", constant.value)),
        Expr::Attribute(attribute) => parts.push(attribute.attr.to_string()),
        _ => parts.push(String::from("·")),
    });
    parts.join(" ")
}

/// `env.step(action)`: a step of a reinforcement-learning environment, which
/// makes the data the loop around it trains on.
pub fn is_environment_step(call: &ast::ExprCall) -> bool {
    matches!(call.func.as_ref(), Expr::Attribute(attribute)
        if attribute.attr.as_str() == "step"
            && dotted_name(&attribute.value)
                .is_some_and(|receiver| receiver.to_lowercase().contains("env")))
}

/// The first environment step anywhere in the statements, nested loops
/// included (not nested functions).
pub fn environment_step_in(statements: &[Stmt]) -> Option<&ast::ExprCall> {
    let mut found = None;
    for_each_statement(statements, false, &mut |stmt| {
        if found.is_none() {
            found = calls_in_statement(stmt)
                .into_iter()
                .find(|call| is_environment_step(call));
        }
    });
    found
}

/// The header of a loop: the iterable of a `for`, the test of a `while`.
pub fn loop_header(statement: &Stmt) -> Option<std::ops::Range<usize>> {
    match statement {
        Stmt::For(node) => Some(crate::python::parse::span(node.iter.as_ref())),
        Stmt::While(node) => Some(crate::python::parse::span(node.test.as_ref())),
        _ => None,
    }
}

/// The statements that leave a loop early, with the test of the innermost
/// `if` around each: its `break`s (not those of nested loops) and its
/// `return`s, which leave the loop with the function.
pub fn loop_breaks(body: &[Stmt]) -> Vec<(&Stmt, Option<&Expr>)> {
    let mut found = Vec::new();
    fn walk<'a>(
        body: &'a [Stmt],
        test: Option<&'a Expr>,
        found: &mut Vec<(&'a Stmt, Option<&'a Expr>)>,
    ) {
        for statement in body {
            match statement {
                Stmt::Break(_) | Stmt::Return(_) => found.push((statement, test)),
                Stmt::If(node) => {
                    walk(&node.body, Some(&node.test), found);
                    walk(&node.orelse, Some(&node.test), found);
                }
                Stmt::With(node) => walk(&node.body, test, found),
                Stmt::Try(node) => {
                    walk(&node.body, test, found);
                    walk(&node.orelse, test, found);
                    walk(&node.finalbody, test, found);
                }
                _ => {}
            }
        }
    }
    walk(body, None, &mut found);
    found
}

/// Whether `statement` sits in an `if` of the loop's own body that ends by
/// leaving the loop (`if done: update(...); break`): it runs once per pass
/// of the loop, as the episode ends, which every worker counts alike.
pub fn runs_as_the_loop_ends(loop_statement: &Stmt, statement: &Stmt) -> bool {
    let body = match loop_statement {
        Stmt::While(node) => &node.body,
        Stmt::For(node) => &node.body,
        _ => return false,
    };
    let at = crate::python::parse::span(statement);
    body.iter().any(|own| {
        matches!(own, Stmt::If(choice)
        if matches!(choice.body.last(), Some(Stmt::Break(_)))
            && choice.body.iter().any(|inner| {
                let range = crate::python::parse::span(inner);
                range.start <= at.start && at.end <= range.end
            }))
    })
}
