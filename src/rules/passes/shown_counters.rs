//! Calls that only show what they are given: a print, a log line, a plot,
//! or a function of the module whose body only shows it (`plot(epoch + 1)`
//! drawing a figure titled with the epoch). The step counter passed to one
//! draws no data, so a loop whose other statements read all the data each
//! step still trains on a full batch.

use std::collections::HashSet;

use rustpython_parser::ast::{self, Expr};

use crate::analysis::walk::{dotted_name, for_each_statement, walk_statement_expressions};
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

/// Printing, formatting, logging or plotting a message.
pub fn shows(call: &ast::ExprCall) -> bool {
    let callee = dotted_name(&call.func).unwrap_or_default().to_lowercase();
    let formats = matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "format");
    let plots_or_logs = ["plt.", "pyplot.", "logging.", "logger.", "log."]
        .iter()
        .any(|prefix| callee.starts_with(prefix));
    callee == "print" || callee.ends_with(".print") || callee == "str" || formats || plots_or_logs
}

/// Whether `call` is of a module function that only shows the arguments
/// mentioning `counters`: each lands in a parameter its body reads only
/// inside calls that show.
pub fn only_shows_counters(
    rewrite: &ModuleRewrite,
    call: &ast::ExprCall,
    mentions: &dyn Fn(&Expr) -> bool,
) -> bool {
    let Expr::Name(name) = call.func.as_ref() else {
        return false;
    };
    let Some(index) = rewrite.module.function_scope(name.id.as_str()) else {
        return false;
    };
    let scope = &rewrite.module.scopes[index];
    if call.keywords.iter().any(|keyword| mentions(&keyword.value)) {
        return false;
    }
    let mut parameters = HashSet::new();
    for (place, argument) in call.args.iter().enumerate() {
        if !mentions(argument) {
            continue;
        }
        match (argument, scope.parameters.get(place)) {
            (Expr::Starred(_), _) | (_, None) => return false,
            (_, Some(parameter)) => parameters.insert(parameter.as_str()),
        };
    }
    let mut shown = Vec::new();
    for_each_statement(scope.body, true, &mut |statement| {
        walk_statement_expressions(statement, &mut |expr| {
            if let Expr::Call(inner) = expr
                && shows(inner)
            {
                shown.extend(inner.args.iter().map(span));
                shown.extend(inner.keywords.iter().map(|keyword| span(&keyword.value)));
            }
        });
    });
    let mut only_shown = true;
    for_each_statement(scope.body, true, &mut |statement| {
        walk_statement_expressions(statement, &mut |expr| {
            if let Expr::Name(read) = expr
                && parameters.contains(read.id.as_str())
            {
                let at = span(expr);
                only_shown &= shown
                    .iter()
                    .any(|outer| outer.start <= at.start && at.end <= outer.end);
            }
        });
    });
    only_shown
}
