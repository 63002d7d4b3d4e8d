//! A TF1 loop stopped by the end of its data: `while True:` running the
//! train op until the graph's iterator raises `OutOfRangeError`. The data
//! it walks is the tf.data pipeline made into that iterator
//! (`ds.make_initializable_iterator()`, `make_one_shot_iterator`, or
//! `iterator.make_initializer(ds)` when one iterator serves several
//! datasets: the one whose initializer the epoch runs before the loop).
//! Sharding that pipeline splits the work, as for a Keras `fit`.

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::analysis::walk::{dotted_name, path_to, walk_statement_expressions};
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

/// The dataset expression the end-of-data loop walks, when the tool can
/// name one.
pub fn dataset_of<'a>(rewrite: &ModuleRewrite<'a>, loop_statement: &Stmt) -> Option<&'a Expr> {
    let scope = &rewrite.module.scopes[rewrite.module.scope_at(span(loop_statement).start)];
    let enclosing = path_to(scope.body, &span(loop_statement))?;
    let stopped_by_end = enclosing
        .iter()
        .any(|statement| catches_end_of_data(statement))
        || body_breaks_at_end_of_data(loop_statement);
    if !stopped_by_end {
        return None;
    }
    let made = iterator_datasets(rewrite);
    let distinct = |made: &[(Option<String>, &'a Expr)]| {
        let mut texts: Vec<&str> = made
            .iter()
            .map(|(_, dataset)| rewrite.expression_text(dataset))
            .collect();
        texts.sort_unstable();
        texts.dedup();
        texts.len()
    };
    if distinct(&made) == 1 {
        return made.first().map(|(_, dataset)| *dataset);
    }
    // One iterator, several datasets: the initializer the code runs last
    // before the loop, in the statements that enclose it.
    let before = span(loop_statement).start;
    let mut chosen = None;
    for statement in enclosing.iter().chain(std::iter::once(&loop_statement)) {
        let body_statements = crate::analysis::walk::nested_bodies(statement);
        for body in body_statements {
            for inner in body.iter().filter(|inner| span(*inner).end <= before) {
                walk_statement_expressions(inner, &mut |expression| {
                    if let Expr::Call(call) = expression
                        && matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "run")
                        && let Some(Expr::Name(initializer)) = call.args.first()
                        && let Some((_, dataset)) = made
                            .iter()
                            .find(|(name, _)| name.as_deref() == Some(initializer.id.as_str()))
                    {
                        chosen = Some(*dataset);
                    }
                });
            }
        }
    }
    chosen
}

/// A `try` whose handlers catch `OutOfRangeError`.
fn catches_end_of_data(statement: &Stmt) -> bool {
    let Stmt::Try(node) = statement else {
        return false;
    };
    node.handlers.iter().any(|handler| {
        let ast::ExceptHandler::ExceptHandler(handler) = handler;
        handler
            .type_
            .as_deref()
            .and_then(dotted_name)
            .is_some_and(|name| name.ends_with("OutOfRangeError"))
    })
}

/// `while True:` whose body breaks out when `OutOfRangeError` is caught.
fn body_breaks_at_end_of_data(loop_statement: &Stmt) -> bool {
    let Stmt::While(while_loop) = loop_statement else {
        return false;
    };
    while_loop.body.iter().any(|statement| {
        catches_end_of_data(statement)
            && matches!(statement, Stmt::Try(node) if node.handlers.iter().any(|handler| {
                let ast::ExceptHandler::ExceptHandler(handler) = handler;
                handler.body.iter().any(|inner| matches!(inner, Stmt::Break(_) | Stmt::Return(_)))
            }))
    })
}

/// The datasets the module makes into graph iterators, with the name the
/// initializer is kept in when one iterator serves several
/// (`train_init = iterator.make_initializer(train_data)`).
fn iterator_datasets<'a>(rewrite: &ModuleRewrite<'a>) -> Vec<(Option<String>, &'a Expr)> {
    let mut made = Vec::new();
    for scope in &rewrite.module.scopes {
        for site in &scope.facts.calls {
            let Expr::Attribute(attribute) = site.call.func.as_ref() else {
                continue;
            };
            let method = attribute.attr.as_str();
            let dataset = match method {
                "make_initializable_iterator" | "make_one_shot_iterator"
                    if site.call.args.is_empty() =>
                {
                    Some(attribute.value.as_ref())
                }
                "make_initializable_iterator" | "make_one_shot_iterator" | "make_initializer" => {
                    site.call.args.first()
                }
                _ => None,
            };
            let Some(dataset) = dataset else {
                continue;
            };
            let kept_in = match site.statement {
                Stmt::Assign(assign) if method == "make_initializer" => {
                    assign.targets.first().and_then(dotted_name)
                }
                _ => None,
            };
            made.push((kept_in, dataset));
        }
    }
    made
}
