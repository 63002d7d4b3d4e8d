//! Training-loop summaries (seed 000 §3) and the training API pattern of each
//! module (seed 002): which functions run `model.fit` on a Keras model or a
//! `tf.GradientTape` loop, directly or through calls across files.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use rustpython_parser::ast::{self, Expr, Stmt};

use super::bindings::{Bindings, collect_bindings};
use super::index::{self, ScopeIndex, SemanticIndex};
use super::library::{self, KERAS_MODEL};
use super::package::{Module, Package};
use super::walk::{calls_in_statement, dotted_name, for_each_statement, is_scope, nested_bodies};
use crate::python::parse::span;

/// The training API a module uses (seed 002's categories that this engine rewrites).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum TrainingPattern {
    /// `model.compile(...)` + `model.fit(...)`.
    Keras,
    /// A custom loop with `tf.GradientTape` and `optimizer.apply_gradients`.
    GradientTape,
    /// TF1: a `tf.Session` that runs a train op.
    Session,
    /// TF1: `tf.train.MonitoredTrainingSession`.
    MonitoredSession,
    /// TF1: `tf.estimator.Estimator` trained with `train` or `train_and_evaluate`.
    Estimator,
}

impl TrainingPattern {
    pub fn name(self) -> &'static str {
        match self {
            TrainingPattern::Keras => "keras",
            TrainingPattern::GradientTape => "gradient_tape",
            TrainingPattern::Session => "session",
            TrainingPattern::MonitoredSession => "monitored_session",
            TrainingPattern::Estimator => "estimator",
        }
    }
}

/// A function body or the module's top level.
#[derive(Debug)]
pub struct Scope<'a> {
    /// `module`, `module.function` or `module.Class.method`.
    pub qualified_name: String,
    /// The `def` statement, or `None` for the module's top level.
    pub function: Option<&'a Stmt>,
    pub body: &'a [Stmt],
    pub bindings: Bindings,
    pub parameters: Vec<String>,
    /// Decorated with `@tf.function`: Python in it runs only while tracing.
    pub is_tf_function: bool,
    /// The class the function is a method of.
    pub class: Option<&'a ast::StmtClassDef>,
    /// Index of the enclosing scope.
    pub parent: Option<usize>,
    /// Defined inside an `if`/`try`/loop rather than unconditionally.
    pub defined_conditionally: bool,
    /// The scope's statements, calls and assignments, collected once.
    pub facts: ScopeIndex<'a>,
}

impl Scope<'_> {
    pub fn name(&self) -> &str {
        self.qualified_name.rsplit('.').next().unwrap_or_default()
    }

    pub fn range(&self) -> Option<Range<usize>> {
        self.function.map(span)
    }
}

/// Where a training loop shows itself.
#[derive(Debug, Clone)]
pub struct TrainingSite {
    pub pattern: TrainingPattern,
    /// The `fit` call or the `with tf.GradientTape()` statement.
    pub range: Range<usize>,
    pub scope: usize,
    /// Code that the training loop runs but that is not the loop: an
    /// Estimator's `model_fn`, the tape of a Keras model's `train_step` (the
    /// `fit` may be in another module), or a GradientTape step function
    /// called by a loop in another module.
    pub is_model_function: bool,
}

/// Facts about one module.
#[derive(Debug)]
pub struct ModuleAnalysis<'a> {
    pub module: &'a Module,
    pub scopes: Vec<Scope<'a>>,
    pub sites: Vec<TrainingSite>,
    /// Names bound to Keras model instances, per scope.
    pub models: Vec<HashSet<String>>,
    /// Model receivers of `fit` that are only parameters: assumed models.
    pub assumed_models: Vec<(usize, String, Range<usize>)>,
    /// Step functions of this module called by a loop in another module, by
    /// scope index: that module's relative path and the line of the call.
    pub step_callers: HashMap<usize, (String, usize)>,
    /// Facts that span the module's scopes.
    pub index: SemanticIndex,
}

impl ModuleAnalysis<'_> {
    /// The distinct patterns whose loops appear directly in this module.
    pub fn patterns(&self) -> Vec<TrainingPattern> {
        let mut patterns: Vec<TrainingPattern> =
            self.sites.iter().map(|site| site.pattern).collect();
        patterns.sort();
        patterns.dedup();
        patterns
    }

    /// The innermost scope containing a byte offset.
    pub fn scope_at(&self, offset: usize) -> usize {
        let mut best = 0;
        let mut best_length = usize::MAX;
        for (index, scope) in self.scopes.iter().enumerate() {
            if let Some(range) = scope.range()
                && range.contains(&offset)
                && range.len() < best_length
            {
                best = index;
                best_length = range.len();
            }
        }
        best
    }
}

/// What a package function does, directly or through the package functions it calls.
#[derive(Debug, Clone, Default)]
pub struct FunctionSummary {
    pub module: String,
    pub direct: HashSet<TrainingPattern>,
    pub calls: HashSet<String>,
    pub reaches: HashSet<TrainingPattern>,
    /// The function returns a Keras model.
    pub returns_model: bool,
    pub defined_conditionally: bool,
    pub range: Range<usize>,
}

/// The whole package analysed once.
#[derive(Debug)]
pub struct Analysis<'a> {
    pub package: &'a Package,
    pub modules: Vec<ModuleAnalysis<'a>>,
    /// Keyed by qualified function name.
    pub functions: HashMap<String, FunctionSummary>,
}

impl<'a> Analysis<'a> {
    pub fn new(package: &'a Package) -> Analysis<'a> {
        let mut scopes_per_module: Vec<Vec<Scope<'a>>> = package
            .modules
            .iter()
            .map(|module| collect_scopes(module, package))
            .collect();
        // Model factories first: a model built by `build_model()` in another file is a model.
        let mut factories: HashSet<String> = HashSet::new();
        for _ in 0..4 {
            let mut found = factories.clone();
            for (module, scopes) in package.modules.iter().zip(&scopes_per_module) {
                for scope in scopes.iter().filter(|scope| scope.function.is_some()) {
                    let models = model_names(package, module, scope, &factories, &HashSet::new());
                    if returns_model(package, module, scope, &models, &factories) {
                        found.insert(scope.qualified_name.clone());
                    }
                }
            }
            if found == factories {
                break;
            }
            factories = found;
        }
        let mut modules = Vec::new();
        let mut functions = HashMap::new();
        for (module, scopes) in package.modules.iter().zip(scopes_per_module.drain(..)) {
            let mut models: Vec<HashSet<String>> = Vec::new();
            let top_level_models =
                model_names(package, module, &scopes[0], &factories, &HashSet::new());
            for scope in &scopes {
                if scope.function.is_none() {
                    models.push(top_level_models.clone());
                } else {
                    models.push(model_names(
                        package,
                        module,
                        scope,
                        &factories,
                        &top_level_models,
                    ));
                }
            }
            // `self.model` assigned in one method is a model in every method of the class.
            let class_attributes: Vec<HashSet<String>> = scopes
                .iter()
                .map(|scope| {
                    let Some(class) = scope.class else {
                        return HashSet::new();
                    };
                    scopes
                        .iter()
                        .zip(&models)
                        .filter(|(other, _)| {
                            other
                                .class
                                .is_some_and(|other_class| std::ptr::eq(other_class, class))
                        })
                        .flat_map(|(_, names)| {
                            names
                                .iter()
                                .filter(|name| name.starts_with("self."))
                                .cloned()
                        })
                        .collect()
                })
                .collect();
            for (names, attributes) in models.iter_mut().zip(class_attributes) {
                names.extend(attributes);
            }
            let mut analysis = ModuleAnalysis {
                module,
                scopes,
                sites: Vec::new(),
                models,
                assumed_models: Vec::new(),
                step_callers: HashMap::new(),
                index: SemanticIndex::default(),
            };
            find_sites(package, &mut analysis);
            for (index, scope) in analysis.scopes.iter().enumerate() {
                let Some(function) = scope.function else {
                    continue;
                };
                let direct = analysis
                    .sites
                    .iter()
                    .filter(|site| site.scope == index)
                    .map(|site| site.pattern)
                    .collect::<HashSet<_>>();
                functions.insert(
                    scope.qualified_name.clone(),
                    FunctionSummary {
                        module: module.name.clone(),
                        reaches: direct.clone(),
                        direct,
                        calls: called_functions(package, module, scope),
                        returns_model: factories.contains(&scope.qualified_name),
                        defined_conditionally: scope.defined_conditionally,
                        range: span(function),
                    },
                );
            }
            modules.push(analysis);
        }
        attach_estimator_model_functions(package, &mut modules);
        attach_step_callers(package, &mut modules);
        attach_delegated_fits(package, &mut modules);
        for analysis in &mut modules {
            // Values are resolved where rules will ask: in modules that train.
            if !analysis.sites.is_empty() {
                for scope in &mut analysis.scopes {
                    index::resolve_values(package, analysis.module, scope);
                }
            }
            analysis.index = index::module_facts(&analysis.scopes);
        }
        // Propagate through calls until nothing changes (the call graph may have cycles).
        loop {
            let mut changed = false;
            let snapshot: HashMap<String, HashSet<TrainingPattern>> = functions
                .iter()
                .map(|(name, summary)| (name.clone(), summary.reaches.clone()))
                .collect();
            for summary in functions.values_mut() {
                for callee in &summary.calls {
                    if let Some(reached) = snapshot.get(callee) {
                        for pattern in reached {
                            changed |= summary.reaches.insert(*pattern);
                        }
                    }
                }
            }
            if !changed {
                break;
            }
        }
        Analysis {
            package,
            modules,
            functions,
        }
    }
}

fn is_tf_function_decorator(bindings: &Bindings, decorator: &Expr) -> bool {
    let target = match decorator {
        Expr::Call(call) => call.func.as_ref(),
        other => other,
    };
    bindings
        .resolve(target)
        .is_some_and(|name| library::is_tf_function(&name))
}

/// Every scope of a module: its top level first, then each function and method.
fn collect_scopes<'a>(module: &'a Module, package: &Package) -> Vec<Scope<'a>> {
    let mut scopes = vec![Scope {
        qualified_name: module.name.clone(),
        function: None,
        body: &module.body,
        bindings: module.bindings.clone(),
        parameters: Vec::new(),
        is_tf_function: false,
        class: None,
        parent: None,
        defined_conditionally: false,
        facts: index::scope_facts(&module.body),
    }];
    collect_nested_scopes(
        module,
        package,
        &module.body,
        0,
        &module.name,
        None,
        false,
        &mut scopes,
    );
    scopes
}

#[allow(clippy::too_many_arguments)]
fn collect_nested_scopes<'a>(
    module: &'a Module,
    package: &Package,
    body: &'a [Stmt],
    parent: usize,
    prefix: &str,
    class: Option<&'a ast::StmtClassDef>,
    conditional: bool,
    scopes: &mut Vec<Scope<'a>>,
) {
    for stmt in body {
        match stmt {
            Stmt::FunctionDef(ast::StmtFunctionDef {
                name,
                args,
                body: function_body,
                decorator_list,
                ..
            })
            | Stmt::AsyncFunctionDef(ast::StmtAsyncFunctionDef {
                name,
                args,
                body: function_body,
                decorator_list,
                ..
            }) => {
                let inherited = &scopes[parent].bindings;
                let context = module.context(&package.module_names);
                let bindings = collect_bindings(function_body, &context, inherited);
                let parameters = args
                    .posonlyargs
                    .iter()
                    .chain(args.args.iter())
                    .chain(args.kwonlyargs.iter())
                    .map(|argument| argument.def.arg.to_string())
                    .collect();
                let is_tf_function = decorator_list
                    .iter()
                    .any(|decorator| is_tf_function_decorator(&bindings, decorator));
                let qualified_name = format!("{prefix}.{name}");
                scopes.push(Scope {
                    qualified_name: qualified_name.clone(),
                    function: Some(stmt),
                    body: function_body,
                    bindings,
                    parameters,
                    is_tf_function,
                    class,
                    parent: Some(parent),
                    defined_conditionally: conditional,
                    facts: index::scope_facts(function_body),
                });
                let index = scopes.len() - 1;
                collect_nested_scopes(
                    module,
                    package,
                    function_body,
                    index,
                    &qualified_name,
                    None,
                    false,
                    scopes,
                );
            }
            Stmt::ClassDef(class_def) => {
                let qualified_name = format!("{prefix}.{}", class_def.name);
                collect_nested_scopes(
                    module,
                    package,
                    &class_def.body,
                    parent,
                    &qualified_name,
                    Some(class_def),
                    conditional,
                    scopes,
                );
            }
            other => {
                for nested in nested_bodies(other) {
                    collect_nested_scopes(
                        module, package, nested, parent, prefix, class, true, scopes,
                    );
                }
            }
        }
    }
}

/// The final name of the function or class a call invokes, if the package or library defines it.
pub fn callee_name(
    package: &Package,
    module: &Module,
    scope: &Scope,
    func: &Expr,
) -> Option<String> {
    if let Some(raw) = scope.bindings.resolve_raw(func) {
        return Some(package.final_name(&raw));
    }
    // A function or class defined in the same module.
    let name = dotted_name(func)?;
    let first = name.split('.').next()?;
    module
        .definition(first)
        .map(|_| package.final_name(&format!("{}.{name}", module.name)))
}

/// Whether a call creates a Keras model: a model class (package or library),
/// a library loader, or a package model factory.
fn creates_model(
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
    for_each_statement(scope.body, false, &mut |stmt| {
        if let Stmt::Assign(assign) = stmt {
            for target in &assign.targets {
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
        for call in calls_in_statement(stmt) {
            // `x.compile(...)` marks `x` as a Keras model (duck typing, as Keras does).
            if let Expr::Attribute(attribute) = call.func.as_ref()
                && attribute.attr.as_str() == "compile"
                && let Some(receiver) = dotted_name(&attribute.value)
                && !call.keywords.is_empty() | !call.args.is_empty()
            {
                models.insert(receiver);
            }
        }
    });
    for global in globals {
        if !assigned_other.contains(global) && !scope.parameters.contains(global) {
            models.insert(global.clone());
        }
    }
    models
}

fn returns_model(
    package: &Package,
    module: &Module,
    scope: &Scope,
    models: &HashSet<String>,
    factories: &HashSet<String>,
) -> bool {
    let mut found = false;
    for_each_statement(scope.body, false, &mut |stmt| {
        if let Stmt::Return(ast::StmtReturn {
            value: Some(value), ..
        }) = stmt
        {
            found |= match value.as_ref() {
                Expr::Name(name) => models.contains(name.id.as_str()),
                Expr::Call(call) => creates_model(package, module, scope, call, factories),
                _ => false,
            };
        }
    });
    found
}

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
    })
}

/// Names (or `self.x` attributes) bound to Estimator instances in one scope.
fn estimator_names(package: &Package, module: &Module, scope: &Scope) -> HashSet<String> {
    let mut names = HashSet::new();
    for_each_statement(scope.body, false, &mut |stmt| {
        if let Stmt::Assign(assign) = stmt
            && let Expr::Call(call) = assign.value.as_ref()
            && creates_estimator(package, module, scope, call)
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

/// A GradientTape step function (`train_step(model, optimizer, ...)`) called
/// from a loop in another module: that loop is where the broadcast and the
/// step count belong, so the calling module gets a GradientTape site at the
/// call (it is a training module too).
fn attach_step_callers(package: &Package, modules: &mut [ModuleAnalysis]) {
    let mut steps: HashSet<String> = HashSet::new();
    for analysis in modules.iter() {
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
    if steps.is_empty() {
        return;
    }
    // Step function -> (module path, line) of the first loop elsewhere calling it.
    let mut called_elsewhere: HashMap<String, (String, usize)> = HashMap::new();
    for analysis in modules.iter_mut() {
        let mut found = Vec::new();
        for (index, scope) in analysis.scopes.iter().enumerate() {
            for_each_statement(scope.body, false, &mut |stmt| {
                for call in calls_in_statement(stmt) {
                    let Some(callee) = callee_name(package, analysis.module, scope, &call.func)
                    else {
                        continue;
                    };
                    let calls_a_step = steps.contains(&callee)
                        && !callee.starts_with(&format!("{}.", analysis.module.name));
                    let in_loop = crate::analysis::walk::path_to(scope.body, &span(stmt))
                        .is_some_and(|path| {
                            path.iter().any(|stmt| crate::analysis::walk::is_loop(stmt))
                        });
                    if calls_a_step && in_loop {
                        found.push((index, span(call)));
                        called_elsewhere.entry(callee).or_insert_with(|| {
                            (
                                analysis.module.source.relative_path.clone(),
                                analysis.module.source.location(span(call).start).line,
                            )
                        });
                    }
                }
            });
        }
        for (scope, range) in found {
            if !analysis.sites.iter().any(|site| site.range == range) {
                analysis.sites.push(TrainingSite {
                    pattern: TrainingPattern::GradientTape,
                    range,
                    scope,
                    is_model_function: false,
                });
            }
        }
        analysis.sites.sort_by_key(|site| site.range.start);
    }
    // The step's own module is run by that loop: no init block of its own,
    // and its rewrite says where the loop is.
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

/// `def train(model, ...): model.fit(...)` in a module that never imports
/// TensorFlow, called from another module with a Keras model: the `fit` is
/// training (its module gets a Keras site, run by the caller), and the call
/// is where the model was compiled (the caller gets a Keras site there).
fn attach_delegated_fits(package: &Package, modules: &mut [ModuleAnalysis]) {
    // (function, parameter index, parameter, module index, scope index, fit range)
    let mut candidates = Vec::new();
    for (module_index, analysis) in modules.iter().enumerate() {
        for (index, scope) in analysis.scopes.iter().enumerate() {
            if scope.function.is_none() || scope.class.is_some() {
                continue;
            }
            for (_, call) in calls_in_scope(scope) {
                if let Expr::Attribute(attribute) = call.func.as_ref()
                    && attribute.attr.as_str() == "fit"
                    && let Expr::Name(receiver) = attribute.value.as_ref()
                    && let Some(position) = scope
                        .parameters
                        .iter()
                        .position(|parameter| parameter == receiver.id.as_str())
                    && call.keywords.iter().any(|keyword| {
                        keyword
                            .arg
                            .as_ref()
                            .is_some_and(|name| KERAS_FIT_KEYWORDS.contains(&name.as_str()))
                    })
                {
                    candidates.push((
                        scope.qualified_name.clone(),
                        position,
                        receiver.id.to_string(),
                        module_index,
                        index,
                        span(call),
                    ));
                }
            }
        }
    }
    let mut confirmed = Vec::new();
    for (caller_module, analysis) in modules.iter().enumerate() {
        for (index, scope) in analysis.scopes.iter().enumerate() {
            for (_, call) in calls_in_scope(scope) {
                let Some(callee) = callee_name(package, analysis.module, scope, &call.func) else {
                    continue;
                };
                for candidate in candidates
                    .iter()
                    .filter(|candidate| candidate.0 == callee && candidate.3 != caller_module)
                {
                    let argument = crate::analysis::walk::keyword(call, &candidate.2)
                        .map(|keyword| &keyword.value)
                        .or_else(|| call.args.get(candidate.1));
                    let passes_a_model = argument
                        .and_then(dotted_name)
                        .is_some_and(|name| analysis.models[index].contains(&name));
                    if passes_a_model {
                        confirmed.push((candidate.clone(), caller_module, index, span(call)));
                    }
                }
            }
        }
    }
    for ((_, _, parameter, module_index, scope, fit), caller_module, caller_scope, call) in
        confirmed
    {
        let fitting = &mut modules[module_index];
        if !fitting.sites.iter().any(|site| site.range == fit) {
            fitting.sites.push(TrainingSite {
                pattern: TrainingPattern::Keras,
                range: fit,
                scope,
                is_model_function: true,
            });
            fitting.models[scope].insert(parameter);
            fitting.sites.sort_by_key(|site| site.range.start);
        }
        let caller = &mut modules[caller_module];
        if !caller.sites.iter().any(|site| site.range == call) {
            caller.sites.push(TrainingSite {
                pattern: TrainingPattern::Keras,
                range: call,
                scope: caller_scope,
                is_model_function: false,
            });
            caller.sites.sort_by_key(|site| site.range.start);
        }
    }
}

/// Every call of a scope's own statements, with its statement.
pub fn calls_in_scope<'a>(scope: &Scope<'a>) -> Vec<(&'a Stmt, &'a ast::ExprCall)> {
    let calls = scope.facts.calls.iter();
    calls.map(|site| (site.statement, site.call)).collect()
}

/// Marks the modules defining an Estimator's `model_fn` (its optimizer is rewritten there).
fn attach_estimator_model_functions(package: &Package, modules: &mut [ModuleAnalysis]) {
    let mut found: Vec<(String, Range<usize>)> = Vec::new();
    for analysis in modules.iter() {
        for scope in &analysis.scopes {
            for_each_statement(scope.body, false, &mut |stmt| {
                for call in calls_in_statement(stmt) {
                    if !creates_estimator(package, analysis.module, scope, call) {
                        continue;
                    }
                    let Some(function) = model_function_argument(call) else {
                        continue;
                    };
                    // `functools.partial(model_fn, ...)` names the function first.
                    let function = match function {
                        Expr::Call(partial)
                            if dotted_name(&partial.func)
                                .is_some_and(|name| name.ends_with("partial")) =>
                        {
                            partial.args.first()
                        }
                        other => Some(other),
                    };
                    if let Some(function) = function
                        && let Some(name) = callee_name(package, analysis.module, scope, function)
                    {
                        found.push((name, span(call)));
                    }
                }
            });
        }
    }
    for (name, _) in found {
        for analysis in modules.iter_mut() {
            if let Some(index) = analysis
                .scopes
                .iter()
                .position(|scope| scope.qualified_name == name)
                && let Some(range) = analysis.scopes[index].range()
                && !analysis.sites.iter().any(|site| site.range == range)
            {
                analysis.sites.push(TrainingSite {
                    pattern: TrainingPattern::Estimator,
                    range,
                    scope: index,
                    is_model_function: true,
                });
                analysis.sites.sort_by_key(|site| site.range.start);
            }
        }
    }
}

fn find_sites(package: &Package, analysis: &mut ModuleAnalysis) {
    let text = &analysis.module.source.text;
    // A Session that never runs an optimizer step is inference, not training.
    let builds_a_train_op = text.contains(".minimize(") || text.contains("apply_gradients(");
    let imports_tensorflow =
        analysis.module.bindings.iter().any(|(_, binding)| {
            library::is_tensorflow(&library::canonical_name(&binding.qualified))
        });
    let mut sites = Vec::new();
    let mut assumed = Vec::new();
    // Computed once: scanning the top level for every scope is quadratic on large modules.
    let top_level_estimators = estimator_names(package, analysis.module, &analysis.scopes[0]);
    for (index, scope) in analysis.scopes.iter().enumerate() {
        let mut estimators = estimator_names(package, analysis.module, scope);
        estimators.extend(top_level_estimators.iter().cloned());
        let in_model_step = scope.class.is_some_and(|class| {
            matches!(scope.name(), "train_step" | "test_step")
                && package.is_subclass(
                    &format!("{}.{}", analysis.module.name, class.name),
                    KERAS_MODEL,
                )
        });
        for_each_statement(scope.body, false, &mut |stmt| {
            if let Stmt::With(with) = stmt
                && with
                    .items
                    .iter()
                    .any(|item| is_gradient_tape_call(&scope.bindings, &item.context_expr))
            {
                // A tape in a Keras model's own `train_step` is part of `fit`: its
                // gradients skip the DistributedOptimizer's averaging, so the Keras
                // rule wraps that tape too.
                sites.push(TrainingSite {
                    pattern: if in_model_step {
                        TrainingPattern::Keras
                    } else {
                        TrainingPattern::GradientTape
                    },
                    range: span(stmt),
                    scope: index,
                    is_model_function: in_model_step,
                });
            }
            for call in calls_in_statement(stmt) {
                let pattern =
                    match callee_name(package, analysis.module, scope, &call.func).as_deref() {
                        Some("tensorflow.Session" | "tensorflow.InteractiveSession")
                            if builds_a_train_op =>
                        {
                            Some(TrainingPattern::Session)
                        }
                        Some("tensorflow.train.MonitoredTrainingSession") => {
                            Some(TrainingPattern::MonitoredSession)
                        }
                        Some("tensorflow.estimator.train_and_evaluate") => {
                            Some(TrainingPattern::Estimator)
                        }
                        _ => match call.func.as_ref() {
                            Expr::Attribute(attribute)
                                if attribute.attr.as_str() == "train"
                                    && dotted_name(&attribute.value)
                                        .is_some_and(|receiver| estimators.contains(&receiver)) =>
                            {
                                Some(TrainingPattern::Estimator)
                            }
                            _ => None,
                        },
                    };
                if let Some(pattern) = pattern {
                    sites.push(TrainingSite {
                        pattern,
                        range: span(call),
                        scope: index,
                        is_model_function: false,
                    });
                }
            }
            for call in calls_in_statement(stmt) {
                let Expr::Attribute(attribute) = call.func.as_ref() else {
                    continue;
                };
                if attribute.attr.as_str() != "fit" {
                    continue;
                }
                let dotted_receiver = dotted_name(&attribute.value);
                let is_model = match attribute.value.as_ref() {
                    Expr::Attribute(_) => dotted_receiver
                        .is_some_and(|receiver| analysis.models[index].contains(&receiver)),
                    Expr::Name(receiver) => {
                        let name = receiver.id.as_str();
                        if analysis.models[index].contains(name) {
                            true
                        } else if scope.parameters.iter().any(|p| p == name)
                            && imports_tensorflow
                            && call.keywords.iter().any(|k| {
                                k.arg
                                    .as_ref()
                                    .is_some_and(|a| KERAS_FIT_KEYWORDS.contains(&a.as_str()))
                            })
                        {
                            assumed.push((index, name.to_string(), span(call)));
                            true
                        } else {
                            false
                        }
                    }
                    Expr::Call(inner) => {
                        creates_model(package, analysis.module, scope, inner, &HashSet::new())
                    }
                    _ => false,
                };
                if is_model {
                    sites.push(TrainingSite {
                        pattern: TrainingPattern::Keras,
                        range: span(call),
                        scope: index,
                        is_model_function: false,
                    });
                }
            }
        });
    }
    sites.sort_by_key(|site| site.range.start);
    analysis.sites = sites;
    analysis.assumed_models = assumed;
}

pub fn is_gradient_tape_call(bindings: &Bindings, expr: &Expr) -> bool {
    let Expr::Call(call) = expr else { return false };
    bindings
        .resolve(&call.func)
        .is_some_and(|name| library::is_gradient_tape(&name))
}

/// Package functions a scope calls (not counting nested scopes).
pub fn called_functions(package: &Package, module: &Module, scope: &Scope) -> HashSet<String> {
    let mut called = HashSet::new();
    for_each_statement(scope.body, false, &mut |stmt| {
        if is_scope(stmt) {
            return;
        }
        for call in calls_in_statement(stmt) {
            if let Some(name) = callee_name(package, module, scope, &call.func)
                && !library::is_tensorflow(&name)
            {
                called.insert(name);
            }
        }
    });
    called
}

/// The call of a scope at exactly this range, with its statement.
pub fn find_call<'a>(
    scope: &Scope<'a>,
    range: &Range<usize>,
) -> Option<(&'a Stmt, &'a ast::ExprCall)> {
    scope
        .facts
        .call_at(range)
        .map(|site| (site.statement, site.call))
}
