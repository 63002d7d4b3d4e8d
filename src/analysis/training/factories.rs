//! Keras training whose parts are made in other modules: a `fit` on a model
//! that a function of another module builds and compiles
//! (`model.build_model(...)` in `trainer/model.py`), and callbacks that a
//! function of another module returns (`util.make_callbacks(...)`). The
//! module making each part gets a Keras site there, run by the fitting
//! module, so that the optimizer is wrapped and the file-writing callbacks
//! are kept on rank 0 where they are made.

use rustpython_parser::ast::{self, Expr, Stmt};

use super::linking::add_site_once;
use super::scopes::{callee_name, calls_in_scope, find_call};
use super::{ModuleAnalysis, TrainingPattern, TrainingSite};
use crate::analysis::library;
use crate::analysis::package::Package;
use crate::analysis::walk::{dotted_name, keyword};
use crate::python::parse::span;

/// A part of a fit made by a function of another module.
enum MadeElsewhere {
    /// The function builds and compiles the fitted model.
    Model(String),
    /// The function returns the callbacks list given as this expression.
    Callbacks(String, std::ops::Range<usize>),
}

/// Adds a Keras site at each `compile` of a model factory of another module
/// whose model is fitted, and at the returned list of each callbacks
/// factory; records in the fitting module which receivers are compiled
/// elsewhere.
pub(super) fn attach_parts_made_elsewhere(package: &Package, modules: &mut [ModuleAnalysis]) {
    let mut parts = Vec::new();
    for (index, analysis) in modules.iter().enumerate() {
        for site in analysis
            .sites
            .iter()
            .filter(|site| site.pattern == TrainingPattern::Keras && !site.is_model_function)
        {
            parts.extend(
                parts_of_fit(package, analysis, site)
                    .into_iter()
                    .map(|part| (index, site.scope, part)),
            );
        }
    }
    attach_estimator_factories(package, modules);
    for (fitting_module, fitting_scope, part) in parts {
        match part {
            (receiver, MadeElsewhere::Model(function)) => {
                if attach_compiles(package, modules, &function) {
                    modules[fitting_module]
                        .compiled_elsewhere
                        .insert((fitting_scope, receiver));
                }
            }
            (_, MadeElsewhere::Callbacks(function, argument)) => {
                if attach_callback_lists(modules, &function) {
                    modules[fitting_module]
                        .callbacks_made_elsewhere
                        .insert(argument);
                }
            }
        }
    }
}

/// `estimator = model.build_estimator(config)` trained here, the factory in
/// another module: that module gets an Estimator site at the factory, so
/// that the construction there is rewritten (model directory, optimizer).
fn attach_estimator_factories(package: &Package, modules: &mut [ModuleAnalysis]) {
    let mut factories = Vec::new();
    for analysis in modules.iter() {
        for site in analysis
            .sites
            .iter()
            .filter(|site| site.pattern == TrainingPattern::Estimator && !site.is_model_function)
        {
            let scope = &analysis.scopes[site.scope];
            let Some((_, call)) = find_call(scope, &site.range) else {
                continue;
            };
            // `estimator.train(...)`, or `train_and_evaluate(estimator, ...)`.
            let estimator = match call.func.as_ref() {
                Expr::Attribute(attribute) if attribute.attr.as_str() != "train_and_evaluate" => {
                    &attribute.value
                }
                _ => match call
                    .args
                    .first()
                    .or_else(|| keyword(call, "estimator").map(|estimator| &estimator.value))
                {
                    Some(estimator) => estimator,
                    None => continue,
                },
            };
            if let Some(Expr::Call(made)) = made_by(analysis, site.scope, estimator)
                && let Some(callee) = callee_name(package, analysis.module, scope, &made.func)
                && !callee.starts_with(&format!("{}.", analysis.module.name))
                && super::models::is_estimator_factory(package, &callee)
            {
                factories.push(callee);
            }
        }
    }
    for factory in factories {
        if let Some((module_index, scope_index)) = function_scope(modules, &factory)
            && let Some(range) = modules[module_index].scopes[scope_index].range()
        {
            let site = TrainingSite {
                pattern: TrainingPattern::Estimator,
                ..model_function_site(scope_index, range)
            };
            add_site_once(&mut modules[module_index].sites, site);
        }
    }
}

/// A Keras site run by a loop of another module.
fn model_function_site(scope: usize, range: std::ops::Range<usize>) -> TrainingSite {
    TrainingSite {
        pattern: TrainingPattern::Keras,
        range,
        scope,
        is_model_function: true,
    }
}

/// The parts of one fit made by functions of other modules, each with the
/// name the fit calls it by.
fn parts_of_fit(
    package: &Package,
    analysis: &ModuleAnalysis,
    site: &TrainingSite,
) -> Vec<(String, MadeElsewhere)> {
    let scope = &analysis.scopes[site.scope];
    let Some((_, fit)) = find_call(scope, &site.range) else {
        return Vec::new();
    };
    let Expr::Attribute(attribute) = fit.func.as_ref() else {
        return Vec::new();
    };
    if !library::is_keras_fit_method(attribute.attr.as_str())
        && attribute.attr.as_str() != library::KERAS_BATCH_STEP
    {
        return Vec::new();
    }
    let module_prefix = format!("{}.", analysis.module.name);
    let elsewhere = |expr: &Expr| -> Option<String> {
        let Expr::Call(call) = made_by(analysis, site.scope, expr)? else {
            return None;
        };
        let callee = callee_name(package, analysis.module, scope, &call.func)?;
        (!callee.starts_with(&module_prefix)).then_some(callee)
    };
    let mut parts = Vec::new();
    if let Some(receiver) = dotted_name(&attribute.value)
        && let Some(function) = elsewhere(&attribute.value)
    {
        parts.push((receiver, MadeElsewhere::Model(function)));
    }
    if let Some(callbacks) = keyword(fit, "callbacks") {
        // `helper(...)`, or `helper(...) + [counter]`: each summand that is
        // not a list literal is looked for elsewhere.
        let mut summands = Vec::new();
        flatten_sum(&callbacks.value, &mut summands);
        let unresolved: Vec<&Expr> = summands
            .into_iter()
            .filter(|summand| !matches!(summand, Expr::List(_)))
            .collect();
        let functions: Vec<String> = unresolved
            .iter()
            .filter_map(|summand| elsewhere(summand))
            .collect();
        if !functions.is_empty() && functions.len() == unresolved.len() {
            for function in functions {
                parts.push((
                    String::new(),
                    MadeElsewhere::Callbacks(function, span(&callbacks.value)),
                ));
            }
        }
    }
    parts
}

fn flatten_sum<'a>(expr: &'a Expr, summands: &mut Vec<&'a Expr>) {
    match expr {
        Expr::BinOp(operation) if matches!(operation.op, ast::Operator::Add) => {
            flatten_sum(&operation.left, summands);
            flatten_sum(&operation.right, summands);
        }
        other => summands.push(other),
    }
}

/// The expression a name was last assigned in the scope (or at top level),
/// or the expression itself when it is not a name.
fn made_by<'a>(
    analysis: &ModuleAnalysis<'a>,
    scope_index: usize,
    expr: &'a Expr,
) -> Option<&'a Expr> {
    let Some(name) = dotted_name(expr) else {
        return Some(expr);
    };
    [&analysis.scopes[scope_index], &analysis.scopes[0]]
        .into_iter()
        .find_map(|scope| scope.facts.last_value_of(&name))
}

/// A Keras site at each `compile` of the function `name`, or, where it has
/// none, of the helpers it calls that compile a model they are handed
/// (`compile_model(model, rate)`); whether it found one.
fn attach_compiles(package: &Package, modules: &mut [ModuleAnalysis], name: &str) -> bool {
    let Some((module_index, scope_index)) = function_scope(modules, name) else {
        return false;
    };
    let mut compiles = vec![(
        module_index,
        scope_index,
        own_compiles(&modules[module_index].scopes[scope_index]),
    )];
    if compiles[0].2.is_empty() {
        let analysis = &modules[module_index];
        let scope = &analysis.scopes[scope_index];
        compiles = calls_in_scope(scope)
            .into_iter()
            .filter_map(|(_, call)| callee_name(package, analysis.module, scope, &call.func))
            .filter_map(|helper| function_scope(modules, &helper))
            .map(|(module, scope)| {
                let helper = &modules[module].scopes[scope];
                let of_parameters = own_compiles(helper)
                    .into_iter()
                    .filter(|(receiver, _)| helper.parameters.contains(receiver))
                    .collect();
                (module, scope, of_parameters)
            })
            .collect();
    }
    let mut found = false;
    for (module, scope, ranges) in compiles {
        for (_, range) in ranges {
            found = true;
            add_site_once(
                &mut modules[module].sites,
                model_function_site(scope, range),
            );
        }
    }
    found
}

/// The `compile` calls of a scope's own statements, with their receivers.
fn own_compiles(scope: &super::Scope) -> Vec<(String, std::ops::Range<usize>)> {
    calls_in_scope(scope)
        .into_iter()
        .filter(|(_, call)| is_compile_with_arguments(call))
        .filter_map(|(_, call)| match call.func.as_ref() {
            Expr::Attribute(attribute) => Some((dotted_name(&attribute.value)?, span(call))),
            _ => None,
        })
        .collect()
}

/// A Keras site at the list the function `name` returns (directly, or
/// through the name it returns); whether it returns one.
fn attach_callback_lists(modules: &mut [ModuleAnalysis], name: &str) -> bool {
    let Some((module_index, scope_index)) = function_scope(modules, name) else {
        return false;
    };
    let analysis = &mut modules[module_index];
    let scope = &analysis.scopes[scope_index];
    let returned = scope
        .facts
        .statements
        .iter()
        .rev()
        .find_map(|stmt| match stmt {
            Stmt::Return(returned) => returned.value.as_deref(),
            _ => None,
        });
    let list = match returned {
        Some(list @ Expr::List(_)) => Some(list),
        Some(Expr::Name(name)) => scope
            .facts
            .last_value_of(name.id.as_str())
            .filter(|value| matches!(value, Expr::List(_))),
        _ => None,
    };
    let Some(list) = list else {
        return false;
    };
    add_site_once(
        &mut analysis.sites,
        model_function_site(scope_index, span(list)),
    );
    true
}

/// The module and scope of the function with this qualified name.
fn function_scope(modules: &[ModuleAnalysis], name: &str) -> Option<(usize, usize)> {
    modules
        .iter()
        .enumerate()
        .find_map(|(module_index, analysis)| {
            analysis
                .scopes
                .iter()
                .position(|scope| scope.function.is_some() && scope.qualified_name == name)
                .map(|scope_index| (module_index, scope_index))
        })
}

fn is_compile_with_arguments(call: &ast::ExprCall) -> bool {
    matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "compile")
        && (!call.args.is_empty() || !call.keywords.is_empty())
}
