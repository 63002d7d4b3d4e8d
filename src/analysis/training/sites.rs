//! Where each module's own training loops show themselves: a `fit` on a Keras
//! model, a `with tf.GradientTape()` block, a TF1 session or an Estimator's
//! training call.

use std::collections::HashSet;
use std::ops::Range;

use rayon::prelude::*;
use rustpython_parser::ast::{self, Expr, Stmt};

use super::models::{creates_model, estimator_names, has_keras_fit_keyword};
use super::scopes::callee_name;
use super::{ModuleAnalysis, Scope, TrainingPattern, TrainingSite};
use crate::analysis::bindings::Bindings;
use crate::analysis::library::{self, KERAS_MODEL};
use crate::analysis::package::{Module, Package, Symbol};
use crate::analysis::walk::dotted_name;
use crate::python::parse::span;

pub fn is_gradient_tape_call(bindings: &Bindings, expr: &Expr) -> bool {
    let Expr::Call(call) = expr else { return false };
    bindings
        .resolve(&call.func)
        .is_some_and(|name| library::is_gradient_tape(&name))
}

/// Fills a module's `sites` and `assumed_models` from its own code.
pub(super) fn find_sites(package: &Package, analysis: &mut ModuleAnalysis) {
    let module = ModuleFacts::of(package, analysis.module, &analysis.scopes);
    // Computed once: scanning the top level for every scope is quadratic on large modules.
    let top_level_estimators = estimator_names(package, analysis.module, &analysis.scopes[0]);
    // Scopes in parallel (a large module is one task of the package's).
    let per_scope: Vec<FoundSites> = analysis
        .scopes
        .par_iter()
        .enumerate()
        .map(|(index, scope)| {
            let mut estimators = estimator_names(package, analysis.module, scope);
            estimators.extend(top_level_estimators.iter().cloned());
            let scope = ScopeFacts {
                index,
                scope,
                models: &analysis.models[index],
                estimators,
                in_model_step: is_keras_model_step(package, analysis.module, scope),
            };
            let mut found = FoundSites::default();
            find_sites_in_scope(&module, &scope, &mut found);
            found
        })
        .collect();
    let mut found = FoundSites::default();
    for part in per_scope {
        found.sites.extend(part.sites);
        found.assumed_models.extend(part.assumed_models);
    }
    // A tape whose gradients no step of the module applies is analysis
    // (gradients with respect to an input), not training. A module that
    // already uses Horovod keeps its tapes, for the checker to judge.
    if !analysis.module.binds_horovod()
        && !super::calls_any_of(&analysis.scopes, library::OPTIMIZER_STEP_METHODS)
    {
        found
            .sites
            .retain(|site| site.pattern != TrainingPattern::GradientTape);
    }
    found.sites.sort_by_key(|site| site.range.start);
    analysis.sites = found.sites;
    analysis.assumed_models = found.assumed_models;
}

/// What the site checks need to know about the whole module.
struct ModuleFacts<'s> {
    package: &'s Package,
    module: &'s Module,
    /// A Session that never runs an optimizer step is inference, not training.
    builds_a_train_op: bool,
    imports_tensorflow: bool,
}

impl<'s> ModuleFacts<'s> {
    fn of(package: &'s Package, module: &'s Module, scopes: &[Scope]) -> Self {
        ModuleFacts {
            package,
            module,
            builds_a_train_op: super::calls_any_of(scopes, &["minimize", "apply_gradients"])
                || train_op_built_elsewhere(package, module, scopes).is_some(),
            imports_tensorflow: module.bindings.iter().any(|(_, binding)| {
                library::is_tensorflow(&library::canonical_name(&binding.qualified))
            }),
        }
    }
}

/// What the site checks need to know about one scope.
struct ScopeFacts<'s, 'a> {
    index: usize,
    scope: &'s Scope<'a>,
    models: &'s HashSet<String>,
    /// Names bound to Estimators here or at the module's top level.
    estimators: HashSet<String>,
    /// The scope is a Keras model's own `train_step` or `test_step`.
    in_model_step: bool,
}

#[derive(Default)]
struct FoundSites {
    sites: Vec<TrainingSite>,
    assumed_models: Vec<(usize, String, Range<usize>)>,
}

/// A method `train_step`/`test_step` of a package subclass of `keras.Model`.
fn is_keras_model_step(package: &Package, module: &Module, scope: &Scope) -> bool {
    scope.class.is_some_and(|class| {
        matches!(scope.name(), "train_step" | "test_step")
            && package.is_subclass(&format!("{}.{}", module.name, class.name), KERAS_MODEL)
    })
}

fn find_sites_in_scope(module: &ModuleFacts, scope: &ScopeFacts, found: &mut FoundSites) {
    let site = |pattern, range, is_model_function| TrainingSite {
        pattern,
        range,
        scope: scope.index,
        is_model_function,
    };
    for (stmt, calls) in scope.scope.facts.statements_with_calls() {
        if opens_gradient_tape(scope.scope, stmt)
            && !differentiates_watched_inputs(scope.scope, stmt)
            && !super::shown_gradients::gradients_only_shown(scope.scope, stmt, &module.module.body)
        {
            // A tape in a Keras model's own `train_step` is part of `fit`: its
            // gradients skip the DistributedOptimizer's averaging, so the Keras
            // rule wraps that tape too.
            let pattern = if scope.in_model_step {
                TrainingPattern::Keras
            } else {
                TrainingPattern::GradientTape
            };
            found
                .sites
                .push(site(pattern, span(stmt), scope.in_model_step));
        }
        for call in calls.iter().map(|site| site.call) {
            if let Some(pattern) = training_call_pattern(module, scope, call) {
                found.sites.push(site(pattern, span(call), false));
            }
        }
        for call in calls.iter().map(|site| site.call) {
            match fit_receiver(module, scope, call) {
                FitReceiver::NotAModel => {}
                FitReceiver::Model => {
                    found
                        .sites
                        .push(site(TrainingPattern::Keras, span(call), false));
                }
                FitReceiver::AssumedModel(name) => {
                    found.assumed_models.push((scope.index, name, span(call)));
                    found
                        .sites
                        .push(site(TrainingPattern::Keras, span(call), false));
                }
            }
        }
    }
}

/// The name `with tf.GradientTape() as tape:` binds, when `stmt` is one.
pub(super) fn tape_opened<'a>(scope: &Scope, stmt: &'a Stmt) -> Option<&'a str> {
    let Stmt::With(with) = stmt else {
        return None;
    };
    with.items
        .iter()
        .find_map(|item| match item.optional_vars.as_deref() {
            Some(Expr::Name(name))
                if is_gradient_tape_call(&scope.bindings, &item.context_expr) =>
            {
                Some(name.id.as_str())
            }
            _ => None,
        })
}

/// A tape whose `gradient(target, sources)` calls all take sources it
/// `watch`es (`with tf.GradientTape() as t: t.watch(images)`, then
/// `t.gradient(score, [images])`): gradients with respect to inputs (a
/// saliency map, a gradient penalty), which no optimizer applies.
pub fn differentiates_watched_inputs(scope: &Scope, stmt: &Stmt) -> bool {
    let Some(tape) = tape_opened(scope, stmt) else {
        return false;
    };
    let on_tape = |method: &str| -> Vec<&ast::ExprCall> {
        scope
            .facts
            .calls
            .iter()
            .map(|site| site.call)
            .filter(|call| {
                matches!(call.func.as_ref(), Expr::Attribute(attribute)
                    if attribute.attr.as_str() == method
                        && matches!(attribute.value.as_ref(), Expr::Name(receiver) if receiver.id.as_str() == tape))
            })
            .collect()
    };
    let watched: HashSet<&str> = on_tape("watch")
        .iter()
        .filter_map(|call| match call.args.first() {
            Some(Expr::Name(name)) => Some(name.id.as_str()),
            _ => None,
        })
        .collect();
    let sources_watched = |sources: &Expr| match sources {
        Expr::Name(name) => watched.contains(name.id.as_str()),
        Expr::List(list) => !list.elts.is_empty()
            && list.elts.iter().all(
                |element| matches!(element, Expr::Name(name) if watched.contains(name.id.as_str())),
            ),
        _ => false,
    };
    let gradients = on_tape("gradient");
    !watched.is_empty()
        && !gradients.is_empty()
        && gradients
            .iter()
            .all(|call| call.args.get(1).is_some_and(sources_watched))
}

/// `with tf.GradientTape() ...:`
fn opens_gradient_tape(scope: &Scope, stmt: &Stmt) -> bool {
    let Stmt::With(with) = stmt else {
        return false;
    };
    with.items
        .iter()
        .any(|item| is_gradient_tape_call(&scope.bindings, &item.context_expr))
}

/// The pattern of a call that starts TF1 or Estimator training.
fn training_call_pattern(
    module: &ModuleFacts,
    scope: &ScopeFacts,
    call: &ast::ExprCall,
) -> Option<TrainingPattern> {
    match callee_name(module.package, module.module, scope.scope, &call.func).as_deref() {
        Some("tensorflow.Session" | "tensorflow.InteractiveSession")
            if module.builds_a_train_op =>
        {
            Some(TrainingPattern::Session)
        }
        Some("tensorflow.train.MonitoredTrainingSession") => {
            Some(TrainingPattern::MonitoredSession)
        }
        Some("tensorflow.estimator.train_and_evaluate") => Some(TrainingPattern::Estimator),
        _ if trains_an_estimator(scope, call) => Some(TrainingPattern::Estimator),
        _ => None,
    }
}

/// `estimator.train(...)` on a name bound to an Estimator.
fn trains_an_estimator(scope: &ScopeFacts, call: &ast::ExprCall) -> bool {
    match call.func.as_ref() {
        Expr::Attribute(attribute) => {
            attribute.attr.as_str() == "train"
                && dotted_name(&attribute.value)
                    .is_some_and(|receiver| scope.estimators.contains(&receiver))
        }
        _ => false,
    }
}

/// What the receiver of a `fit` call is.
enum FitReceiver {
    /// Not a `fit` call, or not on a Keras model.
    NotAModel,
    Model,
    /// A parameter taken for a model because the module imports TensorFlow
    /// and the call passes keywords only Keras's `fit` takes.
    AssumedModel(String),
}

fn fit_receiver(module: &ModuleFacts, scope: &ScopeFacts, call: &ast::ExprCall) -> FitReceiver {
    let Expr::Attribute(attribute) = call.func.as_ref() else {
        return FitReceiver::NotAModel;
    };
    let method = attribute.attr.as_str();
    if method == library::KERAS_BATCH_STEP {
        // A batch step needs a model known to be one: a parameter is not assumed.
        let known =
            dotted_name(&attribute.value).is_some_and(|receiver| scope.models.contains(&receiver));
        return if known {
            FitReceiver::Model
        } else {
            FitReceiver::NotAModel
        };
    }
    if !library::is_keras_fit_method(method) {
        return FitReceiver::NotAModel;
    }
    let is_model = match attribute.value.as_ref() {
        Expr::Attribute(_) => {
            dotted_name(&attribute.value).is_some_and(|receiver| scope.models.contains(&receiver))
        }
        Expr::Name(receiver) => {
            let name = receiver.id.as_str();
            if scope.models.contains(name) {
                !holds_another_librarys_value(module, scope, name, call)
            } else if scope.scope.parameters.iter().any(|p| p == name)
                && module.imports_tensorflow
                && has_keras_fit_keyword(call)
            {
                return FitReceiver::AssumedModel(name.to_string());
            } else {
                false
            }
        }
        Expr::Call(inner) => creates_model(
            module.package,
            module.module,
            scope.scope,
            inner,
            &HashSet::new(),
        ),
        _ => false,
    };
    if is_model {
        FitReceiver::Model
    } else {
        FitReceiver::NotAModel
    }
}

/// Whether `name`, where `call` runs, holds what a call into a library other
/// than TensorFlow, Keras or the package returned (`model = ARIMA(series)`,
/// then statsmodels' own `model.fit()`): no Keras model, whatever the name
/// holds elsewhere in the module (a notebook rebinds `model` cell after cell).
fn holds_another_librarys_value(
    module: &ModuleFacts,
    scope: &ScopeFacts,
    name: &str,
    call: &ast::ExprCall,
) -> bool {
    let at = crate::python::parse::span(call).start;
    let Some(assignment) = scope.scope.facts.assignment_before(name, at) else {
        return false;
    };
    let Expr::Call(value) = assignment.value else {
        return false;
    };
    let Some(callee) = callee_name(module.package, module.module, scope.scope, &value.func) else {
        return false;
    };
    let deep_learning =
        library::is_tensorflow(&library::canonical_name(&callee)) || library::is_horovod(&callee);
    !deep_learning
        && matches!(module.package.resolve_symbol(&callee), Symbol::External)
        && !creates_model(
            module.package,
            module.module,
            scope.scope,
            value,
            &HashSet::new(),
        )
}

/// A call of a function of another package module that builds a train op
/// (`train_op = model.training(loss, rate)`, whose body calls `minimize`).
#[derive(Debug, Clone)]
pub struct TrainOpElsewhere {
    /// The call in this module.
    pub call: std::ops::Range<usize>,
    /// `model.training`, as the function is defined.
    pub function: String,
    /// The path of the module that defines it.
    pub path: String,
}

/// The first call in the module of another package module's function that
/// runs an optimizer step builder (`minimize`, `apply_gradients`) itself.
pub fn train_op_built_elsewhere(
    package: &Package,
    module: &Module,
    scopes: &[Scope],
) -> Option<TrainOpElsewhere> {
    scopes.iter().find_map(|scope| {
        scope.facts.calls.iter().find_map(|site| {
            let callee = callee_name(package, module, scope, &site.call.func)?;
            // A function that builds the step, or a class one of whose
            // methods does (`model = Seq2Seq(...)`, whose `__init__` calls
            // `minimize`, then `sess.run(model.train_op)`).
            let (defining, name) = match package.resolve_symbol(&callee) {
                Symbol::Function(defining, Stmt::FunctionDef(function))
                    if builds_step(&function.body) =>
                {
                    (defining, function.name.as_str())
                }
                Symbol::Class(defining, class)
                    if builds_step(&class.body) && runs_steps_of(scopes, class) =>
                {
                    (defining, class.name.as_str())
                }
                _ => return None,
            };
            if defining.name == module.name {
                return None;
            }
            Some(TrainOpElsewhere {
                call: span(site.call),
                function: format!(
                    "{}.{name}",
                    defining.name.rsplit('.').next().unwrap_or(&defining.name),
                ),
                path: defining.source.relative_path.clone(),
            })
        })
    })
}

/// Whether the module runs a step an instance of `class` builds: a
/// session's `run` of one of its step attributes (`sess.run(model.train_op)`)
/// or a call of one of its methods that runs one (`model.train(sess, ...)`).
/// An inference script that builds the same model and only predicts does not.
fn runs_steps_of(scopes: &[Scope], class: &ast::StmtClassDef) -> bool {
    let steps = step_attributes(&class.body);
    if steps.is_empty() {
        return false;
    }
    let methods: HashSet<&str> = class
        .body
        .iter()
        .filter_map(|statement| match statement {
            Stmt::FunctionDef(method) if runs_any(&method.body, &steps) => {
                Some(method.name.as_str())
            }
            _ => None,
        })
        .collect();
    scopes.iter().any(|scope| {
        // A fetch list built first (`output_feed = [model.train_ops[i], ...]`).
        let fetches_step = |fetches: &Expr| {
            mentions_attribute(fetches, &steps)
                || matches!(fetches, Expr::Name(name) if scope.facts.assignments.iter().any(|assignment| {
                    assignment.name == name.id.as_str() && mentions_attribute(assignment.value, &steps)
                }))
        };
        scope.facts.calls.iter().any(|site| {
            let Expr::Attribute(attribute) = site.call.func.as_ref() else {
                return false;
            };
            methods.contains(attribute.attr.as_str())
                || (attribute.attr.as_str() == "run"
                    && site.call.args.first().is_some_and(fetches_step))
        })
    })
}

/// Names a class gives its optimizer steps: targets of assignments (and
/// lists appended to) whose value calls `minimize` or `apply_gradients`,
/// in any of its methods.
fn step_attributes(body: &[Stmt]) -> HashSet<String> {
    let is_step = |expr: &Expr| {
        let mut found = false;
        crate::analysis::walk::walk_expression(expr, &mut |inner| {
            found |= matches!(inner, Expr::Call(call) if matches!(call.func.as_ref(),
                Expr::Attribute(attribute) if matches!(attribute.attr.as_str(), "minimize" | "apply_gradients")));
        });
        found
    };
    let mut names = HashSet::new();
    crate::analysis::walk::for_each_statement(body, true, &mut |statement| match statement {
        Stmt::Assign(assign) if is_step(&assign.value) => {
            for target in &assign.targets {
                names.extend(target_names(target));
            }
        }
        Stmt::Expr(expression) => {
            if let Expr::Call(call) = expression.value.as_ref()
                && let Expr::Attribute(attribute) = call.func.as_ref()
                && attribute.attr.as_str() == "append"
                && call.args.iter().any(is_step)
            {
                names.extend(target_names(&attribute.value));
            }
        }
        _ => {}
    });
    names
}

/// The last part of each name an assignment target binds (`train_op`,
/// `self.train_op`, the elements of a tuple).
fn target_names(target: &Expr) -> Vec<String> {
    match target {
        Expr::Name(name) => vec![name.id.to_string()],
        Expr::Attribute(attribute) => vec![attribute.attr.to_string()],
        Expr::Tuple(tuple) => tuple.elts.iter().flat_map(target_names).collect(),
        _ => Vec::new(),
    }
}

/// Whether statements call `run` with a fetch naming one of `steps`.
fn runs_any(body: &[Stmt], steps: &HashSet<String>) -> bool {
    let mut found = false;
    crate::analysis::walk::for_each_statement(body, false, &mut |statement| {
        found |= crate::analysis::walk::calls_in_statement(statement)
            .iter()
            .any(|call| {
                matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "run")
                    && call.args.first().is_some_and(|fetches| mentions_attribute(fetches, steps))
            });
    });
    found
}

/// Whether an expression reads `x.<name>` for one of `names`.
fn mentions_attribute(expr: &Expr, names: &HashSet<String>) -> bool {
    let mut found = false;
    crate::analysis::walk::walk_expression(expr, &mut |inner| {
        found |=
            matches!(inner, Expr::Attribute(attribute) if names.contains(attribute.attr.as_str()));
    });
    found
}

/// Whether statements (a function's body, or a class's with its methods)
/// call `minimize` or `apply_gradients`.
fn builds_step(body: &[Stmt]) -> bool {
    let mut found = false;
    crate::analysis::walk::for_each_statement(body, true, &mut |statement| {
        found |= crate::analysis::walk::calls_in_statement(statement)
            .iter()
            .any(|call| {
                matches!(call.func.as_ref(), Expr::Attribute(attribute)
                if matches!(attribute.attr.as_str(), "minimize" | "apply_gradients"))
            });
    });
    found
}
