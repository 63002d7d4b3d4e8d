//! Which names hold Keras models and Estimators, and which package functions
//! build models.

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;
use rustpython_parser::ast::{self, Expr, Stmt};

use super::Scope;
use super::scopes::callee_name;
use crate::analysis::library::{self, KERAS_MODEL};
use crate::analysis::package::{Module, Package};
use crate::analysis::walk::{dotted_name, for_each_statement};

/// Keyword arguments only Keras's `fit` takes: evidence that a receiver we
/// cannot resolve (a parameter) is a Keras model rather than, say, scikit-learn.
const KERAS_FIT_KEYWORDS: &[&str] = &[
    "epochs",
    "callbacks",
    "steps_per_epoch",
    "validation_data",
    "validation_steps",
    "initial_epoch",
];

/// Whether a call passes a keyword argument only Keras's `fit` takes.
pub(super) fn has_keras_fit_keyword(call: &ast::ExprCall) -> bool {
    call.keywords.iter().any(|keyword| {
        keyword
            .arg
            .as_ref()
            .is_some_and(|name| KERAS_FIT_KEYWORDS.contains(&name.as_str()))
    })
}

/// Package functions that return a Keras model, found across modules so that
/// a model built by `build_model()` in another file is a model.
pub(super) fn model_factories(
    package: &Package,
    scopes_per_module: &[Vec<Scope>],
) -> HashSet<String> {
    let mut factories: HashSet<String> = HashSet::new();
    let mut found_functions: HashSet<String> = HashSet::new();
    // The factories the last round found: a function that is not a factory
    // yet can only become one by calling one of them.
    let mut newly_found: Option<HashSet<String>> = None;
    // Each round finds factories returning models from the previous round's
    // factories; a few rounds cover any realistic chain.
    for _ in 0..4 {
        // Modules in parallel: each reads only the previous round's factories.
        let found_in_modules: HashSet<String> = package
            .modules
            .par_iter()
            .zip(scopes_per_module)
            .flat_map(|(module, scopes)| {
                let factories = &factories;
                let found_functions = &found_functions;
                let newly_found = newly_found.as_ref();
                scopes
                    .par_iter()
                    .filter(|scope| {
                        scope.function.is_some() && !found_functions.contains(&scope.qualified_name)
                    })
                    .filter(move |scope| {
                        newly_found.is_none_or(|newly_found| {
                            calls_any(package, module, scope, newly_found)
                        })
                    })
                    .flat_map_iter(move |scope| returned_models(package, module, scope, factories))
            })
            .collect();
        if found_in_modules.is_empty() {
            break;
        }
        factories.extend(found_in_modules.iter().cloned());
        found_functions.extend(
            found_in_modules
                .iter()
                .map(|entry| factory_function(entry).to_string()),
        );
        newly_found = Some(found_in_modules);
    }
    factories
}

/// Whether a scope calls one of the given package functions.
fn calls_any(
    package: &Package,
    module: &Module,
    scope: &Scope,
    functions: &HashSet<String>,
) -> bool {
    scope.facts.calls.iter().any(|site| {
        callee_name(package, module, scope, &site.call.func).is_some_and(|callee| {
            functions
                .iter()
                .any(|function| factory_function(function) == callee)
        })
    })
}

/// Names bound to Keras models in each scope of a module, by scope index.
pub(super) fn models_per_scope(
    package: &Package,
    module: &Module,
    scopes: &[Scope],
    factories: &HashSet<String>,
) -> Vec<HashSet<String>> {
    let top_level_models = model_names(package, module, &scopes[0], factories, &HashSet::new());
    let mut models: Vec<HashSet<String>> = scopes
        .par_iter()
        .map(|scope| {
            if scope.function.is_none() {
                top_level_models.clone()
            } else {
                model_names(package, module, scope, factories, &top_level_models)
            }
        })
        .collect();
    let class_attributes = model_attributes_of_classes(scopes, &models);
    for (names, attributes) in models.iter_mut().zip(class_attributes) {
        names.extend(attributes);
    }
    let instance_attributes = model_attributes_of_instances(package, module, scopes, &models);
    for (names, attributes) in models.iter_mut().zip(instance_attributes) {
        names.extend(attributes);
    }
    for (index, parameter) in model_parameters(package, module, scopes, &models) {
        models[index].insert(parameter);
    }
    for (index, name) in models_unpacked_from_parameters(package, module, scopes, &models) {
        models[index].insert(name);
    }
    models
}

/// Parameters of the module's functions that step or fit a model
/// (`def update_network(network, ...)`: `network.train_on_batch(...)`)
/// and that every call of the function in the module binds to a model of
/// the caller (`update_network(network, rewards, states)`), as (scope
/// index, parameter).
fn model_parameters(
    package: &Package,
    module: &Module,
    scopes: &[Scope],
    models: &[HashSet<String>],
) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (index, scope, stepped) in functions_stepping(scopes, models) {
        for (position, parameter) in scope.parameters.iter().enumerate() {
            if !stepped.contains(parameter.as_str()) {
                continue;
            }
            let bound = arguments_bound_to(package, module, scopes, scope, position, parameter);
            if !bound.is_empty()
                && bound.iter().all(|(caller, argument)| {
                    argument
                        .and_then(dotted_name)
                        .is_some_and(|name| models[*caller].contains(&name))
                })
            {
                found.push((index, parameter.clone()));
            }
        }
    }
    found
}

/// The module's functions that step or fit names not known as models
/// there: (scope index, scope, those names).
fn functions_stepping<'s>(
    scopes: &'s [Scope],
    models: &'s [HashSet<String>],
) -> impl Iterator<Item = (usize, &'s Scope<'s>, HashSet<&'s str>)> {
    scopes
        .iter()
        .enumerate()
        .filter(|(_, scope)| scope.function.is_some())
        .map(|(index, scope)| (index, scope, stepped_receivers(scope, &models[index])))
        .filter(|(_, _, stepped)| !stepped.is_empty())
}

/// Names stepped or fitted in a scope (`receiver.train_on_batch(...)`,
/// `receiver.fit(...)`) that are not known models there.
fn stepped_receivers<'s>(scope: &'s Scope, models: &HashSet<String>) -> HashSet<&'s str> {
    scope
        .facts
        .calls
        .iter()
        .filter_map(|site| match site.call.func.as_ref() {
            Expr::Attribute(attribute)
                if attribute.attr.as_str() == library::KERAS_BATCH_STEP
                    || library::is_keras_fit_method(attribute.attr.as_str()) =>
            {
                match attribute.value.as_ref() {
                    Expr::Name(receiver) => Some(receiver.id.as_str()),
                    _ => None,
                }
            }
            _ => None,
        })
        .filter(|receiver| !models.contains(*receiver))
        .collect()
}

/// Names a function unpacks from a parameter and steps or fits
/// (`generator, discriminator, adversarial = models`, then
/// `discriminator.train_on_batch(...)`), when every call of the function in
/// the module passes a tuple holding a model of the caller at that place
/// (`models = (generator, discriminator, adversarial)`, `train(models, ...)`),
/// as (scope index, name).
fn models_unpacked_from_parameters(
    package: &Package,
    module: &Module,
    scopes: &[Scope],
    models: &[HashSet<String>],
) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (index, scope, stepped) in functions_stepping(scopes, models) {
        for stmt in scope.facts.statements.iter().copied() {
            let Some((targets, parameter)) = unpacked_parameter(stmt) else {
                continue;
            };
            let Some(position) = scope.parameters.iter().position(|name| name == parameter) else {
                continue;
            };
            let bound = arguments_bound_to(package, module, scopes, scope, position, parameter);
            for (place, target) in targets.iter().enumerate() {
                let Expr::Name(name) = target else { continue };
                if !stepped.contains(name.id.as_str()) || bound.is_empty() {
                    continue;
                }
                let every_call_passes_a_model = bound.iter().all(|(caller, argument)| {
                    argument.is_some_and(|argument| {
                        tuple_element_is_model(
                            &scopes[*caller],
                            argument,
                            place,
                            targets.len(),
                            &models[*caller],
                        )
                    })
                });
                if every_call_passes_a_model {
                    found.push((index, name.id.to_string()));
                }
            }
        }
    }
    found
}

/// `a, b, c = parameter`: the targets and the name unpacked.
fn unpacked_parameter(stmt: &Stmt) -> Option<(&[Expr], &str)> {
    let Stmt::Assign(assign) = stmt else {
        return None;
    };
    let [target] = assign.targets.as_slice() else {
        return None;
    };
    let targets = tuple_elements(target)?;
    match assign.value.as_ref() {
        Expr::Name(source) => Some((targets, source.id.as_str())),
        _ => None,
    }
}

/// The elements of a tuple or list display.
fn tuple_elements(expr: &Expr) -> Option<&[Expr]> {
    match expr {
        Expr::Tuple(tuple) => Some(&tuple.elts),
        Expr::List(list) => Some(&list.elts),
        _ => None,
    }
}

/// Whether an argument is a tuple of `length` whose element at `place` is a
/// model of the caller: a display, or a name every assignment of the
/// caller binds to such a display.
fn tuple_element_is_model(
    caller: &Scope,
    argument: &Expr,
    place: usize,
    length: usize,
    models: &HashSet<String>,
) -> bool {
    let holds_model = |elements: &[Expr]| {
        elements.len() == length
            && elements
                .get(place)
                .and_then(dotted_name)
                .is_some_and(|name| models.contains(&name))
    };
    if let Some(elements) = tuple_elements(argument) {
        return holds_model(elements);
    }
    let Expr::Name(name) = argument else {
        return false;
    };
    let mut values = caller
        .facts
        .statements
        .iter()
        .filter_map(|stmt| match stmt {
            Stmt::Assign(assign) => Some(assign),
            _ => None,
        })
        .filter(|assign| {
            assign
                .targets
                .iter()
                .any(|target| matches!(target, Expr::Name(target) if target.id == name.id))
        })
        .map(|assign| assign.value.as_ref())
        .peekable();
    values.peek().is_some() && values.all(|value| tuple_elements(value).is_some_and(holds_model))
}

/// At each call of `function` by its name in the module: the caller's scope
/// index and the argument passed for the parameter at `position` (or by
/// keyword).
fn arguments_bound_to<'s>(
    package: &Package,
    module: &Module,
    scopes: &'s [Scope],
    function: &Scope,
    position: usize,
    parameter: &str,
) -> Vec<(usize, Option<&'s Expr>)> {
    let mut bound = Vec::new();
    for (caller_index, caller) in scopes.iter().enumerate() {
        for site in &caller.facts.calls {
            let Expr::Name(called) = site.call.func.as_ref() else {
                continue;
            };
            if called.id.as_str() != function.name()
                || callee_name(package, module, caller, &site.call.func).as_deref()
                    != Some(function.qualified_name.as_str())
            {
                continue;
            }
            let argument = site
                .call
                .keywords
                .iter()
                .find(|keyword| keyword.arg.as_deref() == Some(parameter))
                .map(|keyword| &keyword.value)
                .or(site.call.args.get(position));
            bound.push((caller_index, argument));
        }
    }
    bound
}

/// Per scope, `agent.model` for `agent = Agent(...)` when a method of this
/// module's class `Agent` binds `self.model` to a model.
fn model_attributes_of_instances(
    package: &Package,
    module: &Module,
    scopes: &[Scope],
    models: &[HashSet<String>],
) -> Vec<HashSet<String>> {
    let mut attributes_of_class: HashMap<String, HashSet<String>> = HashMap::new();
    for (scope, names) in scopes.iter().zip(models) {
        if let Some(class) = scope.class {
            let attributes = names.iter().filter_map(|name| name.strip_prefix("self."));
            attributes_of_class
                .entry(format!("{}.{}", module.name, class.name))
                .or_default()
                .extend(attributes.map(String::from));
        }
    }
    if attributes_of_class.values().all(HashSet::is_empty) {
        return vec![HashSet::new(); scopes.len()];
    }
    scopes
        .iter()
        .map(|scope| {
            let mut found = HashSet::new();
            for stmt in scope.facts.statements.iter().copied() {
                let Stmt::Assign(assign) = stmt else { continue };
                let Expr::Call(call) = assign.value.as_ref() else {
                    continue;
                };
                let Some(class) = callee_name(package, module, scope, &call.func) else {
                    continue;
                };
                let Some(attributes) = attributes_of_class.get(&class) else {
                    continue;
                };
                for target in assign.targets.iter().filter_map(dotted_name) {
                    found.extend(
                        attributes
                            .iter()
                            .map(|attribute| format!("{target}.{attribute}")),
                    );
                }
            }
            found
        })
        .collect()
}

/// Per scope, the `self.` model attributes assigned in any method of its
/// class: `self.model` assigned in one method is a model in every method.
fn model_attributes_of_classes(
    scopes: &[Scope],
    models: &[HashSet<String>],
) -> Vec<HashSet<String>> {
    // Grouped by class first: comparing every method with every other is
    // quadratic in a large module.
    let mut attributes_of_class: HashMap<*const ast::StmtClassDef, HashSet<String>> =
        HashMap::new();
    for (scope, names) in scopes.iter().zip(models) {
        if let Some(class) = scope.class {
            let attributes = names.iter().filter(|name| name.starts_with("self."));
            attributes_of_class
                .entry(std::ptr::from_ref(class))
                .or_default()
                .extend(attributes.cloned());
        }
    }
    scopes
        .iter()
        .map(|scope| {
            scope
                .class
                .and_then(|class| attributes_of_class.get(&std::ptr::from_ref(class)))
                .cloned()
                .unwrap_or_default()
        })
        .collect()
}

/// Whether a call creates a Keras model: a model class (package or library),
/// a library loader, or a package model factory.
pub(super) fn creates_model(
    package: &Package,
    module: &Module,
    scope: &Scope,
    call: &ast::ExprCall,
    factories: &HashSet<String>,
) -> bool {
    let Some(callee) = callee_name(package, module, scope, &call.func) else {
        return false;
    };
    library::returns_model(&callee)
        || factories.contains(&callee)
        || package.is_subclass(&callee, KERAS_MODEL)
}

/// Names bound to Keras model instances in a scope.
fn model_names(
    package: &Package,
    module: &Module,
    scope: &Scope,
    factories: &HashSet<String>,
    globals: &HashSet<String>,
) -> HashSet<String> {
    let mut models = HashSet::new();
    let mut assigned_other = HashSet::new();
    for (stmt, calls) in scope.facts.statements_with_calls() {
        if let Stmt::Assign(assign) = stmt {
            for target in &assign.targets {
                // `model, encoder = build()`: the places the factory returns models at.
                if let Expr::Call(call) = assign.value.as_ref()
                    && tuple_elements(target).is_some()
                {
                    models.extend(unpacked_models(
                        package, module, scope, call, target, factories,
                    ));
                    continue;
                }
                // `model = ...` and `self.model = ...` alike.
                let Some(name) = dotted_name(target) else {
                    continue;
                };
                match assign.value.as_ref() {
                    Expr::Call(call) if creates_model(package, module, scope, call, factories) => {
                        models.insert(name);
                    }

                    _ => {
                        assigned_other.insert(name);
                    }
                }
            }
        }
        for call in calls.iter().map(|site| site.call) {
            // `x.compile(...)` marks `x` as a Keras model (duck typing, as Keras does).
            if let Expr::Attribute(attribute) = call.func.as_ref()
                && attribute.attr.as_str() == "compile"
                && let Some(receiver) = dotted_name(&attribute.value)
                && !call.keywords.is_empty() | !call.args.is_empty()
            {
                models.insert(receiver);
            }
        }
    }
    for global in globals {
        if !assigned_other.contains(global) && !scope.parameters.contains(global) {
            models.insert(global.clone());
        }
    }
    models
}

/// What a factory returns models at, as entries of the factory set: its
/// qualified name when it returns a model, and `name[i]` for each place `i`
/// of a returned tuple that holds one (`return autoencoder, encoder`).
fn returned_models(
    package: &Package,
    module: &Module,
    scope: &Scope,
    factories: &HashSet<String>,
) -> Vec<String> {
    if returns_model(package, module, scope, factories) {
        return vec![scope.qualified_name.clone()];
    }
    let mut places = std::collections::BTreeSet::new();
    let mut models: Option<HashSet<String>> = None;
    for_each_statement(scope.body, false, &mut |stmt| {
        let Stmt::Return(ast::StmtReturn {
            value: Some(value), ..
        }) = stmt
        else {
            return;
        };
        let Expr::Tuple(tuple) = value.as_ref() else {
            return;
        };
        for (place, element) in tuple.elts.iter().enumerate() {
            let is_model = match element {
                Expr::Name(name) => models
                    .get_or_insert_with(|| {
                        model_names(package, module, scope, factories, &HashSet::new())
                    })
                    .contains(name.id.as_str()),
                Expr::Call(call) => creates_model(package, module, scope, call, factories),
                _ => false,
            };
            if is_model {
                places.insert(place);
            }
        }
    });
    places
        .into_iter()
        .map(|place| format!("{}[{place}]", scope.qualified_name))
        .collect()
}

/// The function an entry of the factory set names (`f` of `f[1]`).
fn factory_function(entry: &str) -> &str {
    entry
        .split_once('[')
        .map_or(entry, |(function, _)| function)
}

/// The names of `a, b, c = factory(...)` that the factory returns models at.
fn unpacked_models(
    package: &Package,
    module: &Module,
    scope: &Scope,
    call: &ast::ExprCall,
    target: &Expr,
    factories: &HashSet<String>,
) -> Vec<String> {
    let Some(callee) = callee_name(package, module, scope, &call.func) else {
        return Vec::new();
    };
    tuple_elements(target)
        .unwrap_or_default()
        .iter()
        .enumerate()
        .filter(|(place, _)| factories.contains(&format!("{callee}[{place}]")))
        .filter_map(|(_, element)| dotted_name(element))
        .collect()
}

fn returns_model(
    package: &Package,
    module: &Module,
    scope: &Scope,
    factories: &HashSet<String>,
) -> bool {
    let mut returned = Vec::new();
    for_each_statement(scope.body, false, &mut |stmt| {
        if let Stmt::Return(ast::StmtReturn {
            value: Some(value), ..
        }) = stmt
        {
            returned.push(value.as_ref());
        }
    });
    // The scope's models are worked out only when it returns a name: most
    // functions of a large package return none, and this runs on all of them.
    let mut models: Option<HashSet<String>> = None;
    returned.into_iter().any(|value| match value {
        Expr::Name(name) => models
            .get_or_insert_with(|| model_names(package, module, scope, factories, &HashSet::new()))
            .contains(name.id.as_str()),
        Expr::Call(call) => creates_model(package, module, scope, call, factories),
        _ => false,
    })
}

/// Whether a canonical name is an Estimator class of the library.
pub fn is_library_estimator(canonical: &str) -> bool {
    canonical
        .strip_prefix("tensorflow.estimator.")
        .is_some_and(|class| {
            class.ends_with("Estimator")
                || class.ends_with("Classifier")
                || class.ends_with("Regressor")
        })
}

/// `tf.keras.estimator.model_to_estimator`: an Estimator made from a Keras model.
fn is_model_to_estimator(callee: &str) -> bool {
    crate::analysis::library::canonical_name(callee).ends_with("keras.estimator.model_to_estimator")
}

/// Whether a call constructs an Estimator (library or package subclass).
pub fn creates_estimator(
    package: &Package,
    module: &Module,
    scope: &Scope,
    call: &ast::ExprCall,
) -> bool {
    callee_name(package, module, scope, &call.func).is_some_and(|callee| {
        is_library_estimator(&callee)
            || package.is_subclass(&callee, "tensorflow.estimator.Estimator")
            || is_model_to_estimator(&callee)
    })
}

/// A package function that returns a library Estimator it constructs
/// (`return tf.estimator.DNNClassifier(...)`, or through a local name), as a
/// trainer's `model.build_estimator(config)` does.
pub fn is_estimator_factory(package: &Package, callee: &str) -> bool {
    let Some((module_name, function_name)) = callee.rsplit_once('.') else {
        return false;
    };
    let Some(module) = package.module(module_name) else {
        return false;
    };
    let Some(Stmt::FunctionDef(function)) = module.definition(function_name) else {
        return false;
    };
    let constructs = |value: &Expr| matches!(value, Expr::Call(call) if module.bindings.resolve(&call.func).is_some_and(|name| is_library_estimator(&name) || is_model_to_estimator(&name)));
    let mut constructed_names = HashSet::new();
    let mut returns_one = false;
    for_each_statement(&function.body, false, &mut |stmt| match stmt {
        Stmt::Assign(assign) if constructs(&assign.value) => {
            constructed_names.extend(assign.targets.iter().filter_map(dotted_name));
        }
        Stmt::Return(ast::StmtReturn {
            value: Some(value), ..
        }) => {
            returns_one |= constructs(value)
                || dotted_name(value).is_some_and(|name| constructed_names.contains(&name));
        }
        _ => {}
    });
    returns_one
}

/// The function a model_fn factory returns (`def get_model_fn(params): def
/// model_fn(...): ...; return model_fn`): its qualified name.
pub fn returned_inner_function(package: &Package, factory: &str) -> Option<String> {
    let (module_name, function_name) = factory.rsplit_once('.')?;
    let module = package.module(module_name)?;
    let Some(Stmt::FunctionDef(function)) = module.definition(function_name) else {
        return None;
    };
    let inner: HashSet<&str> = function
        .body
        .iter()
        .filter_map(|stmt| match stmt {
            Stmt::FunctionDef(inner) => Some(inner.name.as_str()),
            _ => None,
        })
        .collect();
    function.body.iter().find_map(|stmt| match stmt {
        Stmt::Return(ast::StmtReturn {
            value: Some(value), ..
        }) => match value.as_ref() {
            Expr::Name(name) if inner.contains(name.id.as_str()) => {
                Some(format!("{factory}.{}", name.id))
            }
            _ => None,
        },
        _ => None,
    })
}

/// Names (or `self.x` attributes) bound to Estimator instances in one scope.
pub(super) fn estimator_names(
    package: &Package,
    module: &Module,
    scope: &Scope,
) -> HashSet<String> {
    let mut names = HashSet::new();
    for_each_statement(scope.body, false, &mut |stmt| {
        if let Stmt::Assign(assign) = stmt
            && let Expr::Call(call) = assign.value.as_ref()
            && (creates_estimator(package, module, scope, call)
                || callee_name(package, module, scope, &call.func)
                    .is_some_and(|callee| is_estimator_factory(package, &callee)))
        {
            names.extend(assign.targets.iter().filter_map(dotted_name));
        }
    });
    names
}

/// The `model_fn` an Estimator construction names (keyword, or first positional argument).
pub fn model_function_argument(call: &ast::ExprCall) -> Option<&Expr> {
    crate::analysis::walk::keyword(call, "model_fn")
        .map(|keyword| &keyword.value)
        .or_else(|| call.args.first())
}

#[cfg(test)]
mod tests {
    use super::super::Analysis;
    use crate::analysis::package::Package;

    #[test]
    fn a_function_returning_another_factory_s_model_is_a_factory_however_long_the_chain() {
        let scratch = tempfile::tempdir().unwrap();
        let text = "import tensorflow as tf\n\n\
            def dense_stack(units):\n    return tf.keras.Sequential([tf.keras.layers.Dense(units)])\n\n\
            def regressor(units):\n    return dense_stack(units)\n\n\
            def compiled_regressor(units):\n    net = regressor(units)\n    net.compile(optimizer=\"adam\", loss=\"mse\")\n    return net\n\n\
            def data():\n    return [1, 2]\n";
        std::fs::write(scratch.path().join("train.py"), text).unwrap();
        let package = Package::load(scratch.path(), &["train.py".to_string()]);
        let analysis = Analysis::new(&package);
        let returns_model = |name: &str| analysis.functions[name].returns_model;
        // Found in three rounds: each link once the one it calls is known.
        assert!(returns_model("train.dense_stack"));
        assert!(returns_model("train.regressor"));
        assert!(returns_model("train.compiled_regressor"));
        assert!(!returns_model("train.data"));
    }
}
