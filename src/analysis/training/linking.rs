//! Training that spans modules: an Estimator's `model_fn`, a GradientTape
//! step function called by another module's loop, and a `fit` on a model
//! another module passes in. Each adds sites to the modules involved.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use rayon::prelude::*;
use rustpython_parser::ast::{self, Expr};

use super::models::{creates_estimator, has_keras_fit_keyword, model_function_argument};
use super::scopes::{callee_name, calls_in_scope};
use super::{ModuleAnalysis, Scope, TrainingPattern, TrainingSite};
use crate::analysis::package::Package;
use crate::analysis::walk::{dotted_name, is_loop, keyword};
use crate::python::parse::span;

/// Adds a site unless one already covers the same range, keeping sites in
/// source order. Returns whether it was added.
pub(super) fn add_site_once(sites: &mut Vec<TrainingSite>, site: TrainingSite) -> bool {
    if sites.iter().any(|existing| existing.range == site.range) {
        return false;
    }
    sites.push(site);
    sites.sort_by_key(|site| site.range.start);
    true
}

/// Marks the modules defining an Estimator's `model_fn` (its optimizer is rewritten there).
pub(super) fn attach_estimator_model_functions(package: &Package, modules: &mut [ModuleAnalysis]) {
    for name in estimator_model_functions(package, modules) {
        for analysis in modules.iter_mut() {
            if let Some(index) = analysis
                .scopes
                .iter()
                .position(|scope| scope.qualified_name == name)
                && let Some(range) = analysis.scopes[index].range()
            {
                add_site_once(
                    &mut analysis.sites,
                    TrainingSite {
                        pattern: TrainingPattern::Estimator,
                        range,
                        scope: index,
                        is_model_function: true,
                    },
                );
            }
        }
    }
}

/// Final names of the functions passed as `model_fn` to Estimator constructions.
fn estimator_model_functions(package: &Package, modules: &[ModuleAnalysis]) -> Vec<String> {
    // Every scope of every module in parallel: each call is looked at.
    modules
        .par_iter()
        .flat_map(|analysis| {
            analysis
                .scopes
                .par_iter()
                .map(move |scope| (analysis, scope))
        })
        .flat_map_iter(|(analysis, scope)| {
            let mut found = Vec::new();
            for (_, call) in calls_in_scope(scope) {
                if !creates_estimator(package, analysis.module, scope, call) {
                    continue;
                }
                if let Some(argument) = model_function_argument(call)
                    && let Some(name) = model_function_name(package, analysis, scope, argument)
                {
                    found.push(name);
                }
            }
            found
        })
        .collect()
}

/// The qualified name of the model_fn an Estimator is given: a function,
/// `functools.partial(model_fn, ...)`, or the function a factory returns
/// (`get_model_fn(params)`).
pub fn model_function_name(
    package: &Package,
    analysis: &ModuleAnalysis,
    scope: &Scope,
    argument: &Expr,
) -> Option<String> {
    let function = function_behind_partial(argument)?;
    let function = factory_call_named(scope, function).unwrap_or(function);
    if let Expr::Call(factory_call) = function {
        let factory = callee_name(package, analysis.module, scope, &factory_call.func)?;
        return super::models::returned_inner_function(package, &factory);
    }
    callee_name(package, analysis.module, scope, function)
}

/// The factory call a name holds when the scope binds it once, to that call
/// (`model_fn = model.generate_model_fn(...)`, then `Estimator(model_fn=model_fn)`).
fn factory_call_named<'a>(scope: &Scope<'a>, function: &Expr) -> Option<&'a Expr> {
    let Expr::Name(name) = function else {
        return None;
    };
    if scope
        .parameters
        .iter()
        .any(|parameter| parameter == name.id.as_str())
    {
        return None;
    }
    let mut assignments = scope
        .facts
        .assignments
        .iter()
        .filter(|assignment| assignment.name == name.id.as_str());
    let only = assignments.next()?;
    (assignments.next().is_none()
        && matches!(only.value, Expr::Call(_))
        && span(only.statement).start < span(function).start)
        .then_some(only.value)
}

/// The function an argument names: `functools.partial(model_fn, ...)` names it first.
fn function_behind_partial(function: &Expr) -> Option<&Expr> {
    match function {
        Expr::Call(partial)
            if dotted_name(&partial.func).is_some_and(|name| name.ends_with("partial")) =>
        {
            partial.args.first()
        }
        other => Some(other),
    }
}

/// A GradientTape step function (`train_step(model, optimizer, ...)`) called
/// from a loop in another module: that loop is where the broadcast and the
/// step count belong, so the calling module gets a GradientTape site at the
/// call (it is a training module too).
pub(super) fn attach_step_callers(package: &Package, modules: &mut [ModuleAnalysis]) {
    let steps = gradient_tape_step_functions(modules);
    if steps.is_empty() {
        return;
    }
    // Modules in parallel, then in order: the first loop calling a step
    // (module path and line) is the one its rewrite names.
    let calls_per_module: Vec<Vec<StepCall>> = modules
        .par_iter()
        .map(|analysis| step_calls_in_loops(package, analysis, &steps))
        .collect();
    let mut called_elsewhere: HashMap<String, (String, String)> = HashMap::new();
    for (analysis, calls) in modules.iter_mut().zip(calls_per_module) {
        for StepCall {
            scope,
            range,
            step,
            caller,
        } in calls
        {
            called_elsewhere.entry(step).or_insert(caller);
            add_site_once(
                &mut analysis.sites,
                TrainingSite {
                    pattern: TrainingPattern::GradientTape,
                    range,
                    scope,
                    is_model_function: false,
                },
            );
        }
    }
    mark_steps_run_elsewhere(modules, &called_elsewhere);
}

/// Plain functions (not methods) holding a GradientTape site that also apply
/// the gradients: a whole training step another module may loop over.
fn gradient_tape_step_functions(modules: &[ModuleAnalysis]) -> HashSet<String> {
    let mut steps = HashSet::new();
    for analysis in modules {
        for site in analysis
            .sites
            .iter()
            .filter(|site| site.pattern == TrainingPattern::GradientTape)
        {
            let scope = &analysis.scopes[site.scope];
            let applies_gradients = scope.function.is_some()
                && scope.class.is_none()
                && analysis.module.source.text[scope.range().unwrap_or_default()]
                    .contains("apply_gradients(");
            if applies_gradients {
                steps.insert(scope.qualified_name.clone());
            }
        }
    }
    steps
}

/// A call, inside a loop, of a step function defined in another module.
struct StepCall {
    scope: usize,
    range: Range<usize>,
    /// The step function's qualified name.
    step: String,
    /// Module path and line of the call.
    caller: (String, String),
}

/// Calls, inside a loop, of a step function defined in another module, in
/// source order.
fn step_calls_in_loops(
    package: &Package,
    analysis: &ModuleAnalysis,
    steps: &HashSet<String>,
) -> Vec<StepCall> {
    let module = analysis.module;
    // Scopes in parallel: every call is resolved.
    let scopes = analysis.scopes.par_iter().enumerate();
    scopes
        .flat_map_iter(|(index, scope)| {
            let mut found = Vec::new();
            for site in &scope.facts.calls {
                let Some(callee) = callee_name(package, module, scope, &site.call.func) else {
                    continue;
                };
                let calls_a_step =
                    steps.contains(&callee) && !callee.starts_with(&format!("{}.", module.name));
                // In a loop's body, or in the header of a loop.
                let in_loop = !site.enclosing_loops.is_empty() || is_loop(site.statement);
                if calls_a_step && in_loop {
                    found.push(StepCall {
                        scope: index,
                        range: span(site.call),
                        step: callee,
                        caller: (
                            module.source.relative_path.clone(),
                            module.source.line_label(span(site.call).start),
                        ),
                    });
                }
            }
            found
        })
        .collect()
}

/// The step's own module is run by the loop that calls it: no init block of
/// its own, and its rewrite says where the loop is.
fn mark_steps_run_elsewhere(
    modules: &mut [ModuleAnalysis],
    called_elsewhere: &HashMap<String, (String, String)>,
) {
    for analysis in modules.iter_mut() {
        for (index, scope) in analysis.scopes.iter().enumerate() {
            if let Some(caller) = called_elsewhere.get(&scope.qualified_name) {
                analysis.step_callers.insert(index, caller.clone());
            }
        }
        for site in analysis.sites.iter_mut() {
            if site.pattern == TrainingPattern::GradientTape
                && analysis.step_callers.contains_key(&site.scope)
            {
                site.is_model_function = true;
            }
        }
    }
}

/// A `fit` on a parameter of a plain function, with Keras-only keywords: the
/// function may be handed a Keras model by another module.
#[derive(Clone)]
struct DelegatedFit {
    /// Qualified name of the function.
    function: String,
    parameter_index: usize,
    parameter: String,
    module: usize,
    scope: usize,
    /// The `fit` call.
    range: Range<usize>,
}

/// A call from another module that passes a model to a delegated `fit`.
struct Delegation {
    fit: DelegatedFit,
    caller_module: usize,
    caller_scope: usize,
    call: Range<usize>,
}

/// `def train(model, ...): model.fit(...)` in a module that never imports
/// TensorFlow, called from another module with a Keras model: the `fit` is
/// training (its module gets a Keras site, run by the caller), and the call
/// is where the model was compiled (the caller gets a Keras site there).
pub(super) fn attach_delegated_fits(package: &Package, modules: &mut [ModuleAnalysis]) {
    let candidates = delegated_fit_candidates(modules);
    for delegation in delegations(package, modules, &candidates) {
        let fit = delegation.fit;
        let fitting = &mut modules[fit.module];
        let added = add_site_once(
            &mut fitting.sites,
            TrainingSite {
                pattern: TrainingPattern::Keras,
                range: fit.range,
                scope: fit.scope,
                is_model_function: true,
            },
        );
        if added {
            fitting.models[fit.scope].insert(fit.parameter);
        }
        add_site_once(
            &mut modules[delegation.caller_module].sites,
            TrainingSite {
                pattern: TrainingPattern::Keras,
                range: delegation.call,
                scope: delegation.caller_scope,
                is_model_function: false,
            },
        );
    }
}

fn delegated_fit_candidates(modules: &[ModuleAnalysis]) -> Vec<DelegatedFit> {
    let mut candidates = Vec::new();
    for (module_index, analysis) in modules.iter().enumerate() {
        for (index, scope) in analysis.scopes.iter().enumerate() {
            if scope.function.is_none() || scope.class.is_some() {
                continue;
            }
            for (_, call) in calls_in_scope(scope) {
                if let Some((parameter_index, parameter)) = fit_on_parameter(scope, call) {
                    candidates.push(DelegatedFit {
                        function: scope.qualified_name.clone(),
                        parameter_index,
                        parameter,
                        module: module_index,
                        scope: index,
                        range: span(call),
                    });
                }
            }
        }
    }
    candidates
}

/// `parameter.fit(..., epochs=...)`: the parameter's position and name.
fn fit_on_parameter(scope: &Scope, call: &ast::ExprCall) -> Option<(usize, String)> {
    if let Expr::Attribute(attribute) = call.func.as_ref()
        && crate::analysis::library::is_keras_fit_method(attribute.attr.as_str())
        && let Expr::Name(receiver) = attribute.value.as_ref()
        && let Some(position) = scope
            .parameters
            .iter()
            .position(|parameter| parameter == receiver.id.as_str())
        && has_keras_fit_keyword(call)
    {
        Some((position, receiver.id.to_string()))
    } else {
        None
    }
}

/// Calls from other modules that pass a known model to a candidate's parameter.
fn delegations(
    package: &Package,
    modules: &[ModuleAnalysis],
    candidates: &[DelegatedFit],
) -> Vec<Delegation> {
    if candidates.is_empty() {
        return Vec::new();
    }
    // Modules in parallel, each one's delegations in order.
    modules
        .par_iter()
        .enumerate()
        .flat_map_iter(|(caller_module, analysis)| {
            delegations_from(package, caller_module, analysis, candidates)
        })
        .collect()
}

/// The calls of one module that pass a known model to a candidate's parameter.
fn delegations_from(
    package: &Package,
    caller_module: usize,
    analysis: &ModuleAnalysis,
    candidates: &[DelegatedFit],
) -> Vec<Delegation> {
    let mut confirmed = Vec::new();
    for (index, scope) in analysis.scopes.iter().enumerate() {
        for (_, call) in calls_in_scope(scope) {
            let Some(callee) = callee_name(package, analysis.module, scope, &call.func) else {
                continue;
            };
            for candidate in candidates.iter().filter(|candidate| {
                candidate.function == callee && candidate.module != caller_module
            }) {
                let argument = keyword(call, &candidate.parameter)
                    .map(|keyword| &keyword.value)
                    .or_else(|| call.args.get(candidate.parameter_index));
                let passes_a_model = argument
                    .and_then(dotted_name)
                    .is_some_and(|name| analysis.models[index].contains(&name));
                if passes_a_model {
                    confirmed.push(Delegation {
                        fit: candidate.clone(),
                        caller_module,
                        caller_scope: index,
                        call: span(call),
                    });
                }
            }
        }
    }
    confirmed
}
