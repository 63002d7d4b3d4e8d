//! Training-loop summaries and the training API pattern of each module:
//! which functions run `model.fit` on a Keras model or a `tf.GradientTape`
//! loop, directly or through calls across files. The rules use these facts to
//! decide what to rewrite and where the Horovod setup goes.

pub mod effect_summaries;
mod factories;
mod linking;
pub use linking::model_function_name;
mod models;
mod scopes;
mod shown_gradients;
mod sites;
mod summaries;

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use rayon::prelude::*;
use rustpython_parser::ast::{self, Expr, Stmt};

use super::bindings::Bindings;
use super::index::{self, ScopeIndex, SemanticIndex};
use super::package::{Module, Package};
use crate::python::parse::span;

pub use models::{creates_estimator, is_library_estimator, model_function_argument};
pub use scopes::{called_functions, callee_name, calls_in_scope, find_call};
pub use sites::{TrainOpElsewhere, is_gradient_tape_call, train_op_built_elsewhere};

/// Whether a call of the scopes calls a method of one of these names.
pub fn calls_any_of(scopes: &[Scope], methods: &[&str]) -> bool {
    scopes.iter().any(|scope| {
        scope.facts.calls.iter().any(|site| {
            matches!(site.call.func.as_ref(), rustpython_parser::ast::Expr::Attribute(attribute)
                if methods.contains(&attribute.attr.as_str()))
        })
    })
}

/// The training API a module uses: the ones this engine knows how to rewrite.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
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

    /// The calls of a method chain, outermost last, followed back through
    /// the name it starts from to the chains last assigned to it in this
    /// scope before (`ds = src.map(f)`, then `ds.take(n)` gives `src`'s
    /// calls, `map`, `take`). A bounded walk: a name assigned from itself in
    /// a loop must not spin.
    pub fn chain_through_names<'e>(&'e self, expr: &'e Expr) -> Vec<(&'e str, &'e ast::ExprCall)> {
        let mut calls = Vec::new();
        let mut current = expr;
        let mut before = span(expr).start;
        for _ in 0..16 {
            let mut chain = crate::analysis::walk::method_chain(current);
            chain.append(&mut calls);
            calls = chain;
            let root = crate::analysis::walk::chain_root(current);
            let Some(name) = crate::analysis::walk::dotted_name(root) else {
                break;
            };
            // Assigned by a statement that ended before (not the one holding `expr`).
            let Some(assignment) = self.facts.assignments.iter().rfind(|assignment| {
                assignment.name == name && span(assignment.statement).end <= before
            }) else {
                break;
            };
            before = span(assignment.statement).start;
            current = assignment.value;
        }
        calls
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
    /// scope index: that module's relative path and the line of the call (`line 12`).
    pub step_callers: HashMap<usize, (String, String)>,
    /// Models fitted here (scope index, receiver) that a function of another
    /// module compiles: their optimizer is wrapped there.
    pub compiled_elsewhere: HashSet<(usize, String)>,
    /// `callbacks=` arguments of fits here that a function of another module
    /// returns as a list: its file writers are kept on rank 0 there.
    pub callbacks_made_elsewhere: HashSet<Range<usize>>,
    /// Facts that span the module's scopes.
    pub index: SemanticIndex,
    /// The module's calls by the name they call (`f(...)`: `f`; `x.m(...)`:
    /// `m`), as (scope, call) indices: built when first asked for, so that a
    /// question about one function's callers does not walk every call of a
    /// large module again.
    calls_by_name: std::sync::OnceLock<HashMap<String, Vec<(usize, usize)>>>,
    /// The indices of the module's scopes by qualified name, in order (a
    /// name defined twice has two): built when first asked for, so that
    /// finding a callee's scope does not walk every scope of the package.
    scopes_by_name: std::sync::OnceLock<HashMap<String, Vec<usize>>>,
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

    /// The scope of a module-level function (not a method) by its name.
    pub fn function_scope(&self, name: &str) -> Option<usize> {
        self.scopes.iter().position(|scope| {
            scope.parent == Some(0) && scope.class.is_none() && scope.name() == name
        })
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
    /// The Keras generation the project's requirement files pin, if any.
    pub keras_pin: Option<super::keras_version::KerasGeneration>,
    /// What library calls do: the shipped catalogue and the user's entries.
    pub catalogue: std::sync::Arc<super::catalogue::Catalogue>,
    /// What each package function and class writes, removes, creates or
    /// downloads on every rank, through the functions it calls.
    pub effects: effect_summaries::EffectSummaries,
}

impl<'a> Analysis<'a> {
    /// The analysis with the shipped catalogue of library behaviour.
    pub fn new(package: &'a Package) -> Analysis<'a> {
        Analysis::with_catalogue(package, super::catalogue::Catalogue::builtin())
    }

    pub fn with_catalogue(
        package: &'a Package,
        catalogue: std::sync::Arc<super::catalogue::Catalogue>,
    ) -> Analysis<'a> {
        // Per-module steps run in parallel; the package-wide ones between them.
        let scopes_per_module: Vec<Vec<Scope<'a>>> = package
            .modules
            .par_iter()
            .map(|module| scopes::collect_scopes(module, package))
            .collect();
        // Model factories first: a model built by `build_model()` in another file is a model.
        let factories = models::model_factories(package, &scopes_per_module);
        let mut modules: Vec<ModuleAnalysis<'a>> = package
            .modules
            .par_iter()
            .zip(scopes_per_module)
            .map(|(module, scopes)| ModuleAnalysis::new(package, module, scopes, &factories))
            .collect();
        // Summaries record each function's own sites, before linking across modules adds more.
        let mut functions = summaries::function_summaries(package, &modules, &factories);
        linking::attach_estimator_model_functions(package, &mut modules);
        linking::attach_step_callers(package, &mut modules);
        linking::attach_delegated_fits(package, &mut modules);
        factories::attach_parts_made_elsewhere(package, &mut modules);
        modules
            .par_iter_mut()
            .for_each(|analysis| analysis.index_facts(package));
        summaries::propagate_reached_patterns(&mut functions);
        let mut analysis = Analysis {
            package,
            modules,
            functions,
            keras_pin: super::keras_version::pinned_generation(&package.root),
            catalogue,
            effects: effect_summaries::EffectSummaries::default(),
        };
        analysis.effects = effect_summaries::effect_summaries(&analysis);
        analysis
    }

    /// The scopes of the package functions a module's code may run, in any
    /// module, through the calls the summaries resolve (the module's own
    /// scopes not included).
    pub fn functions_reached_from(&self, module: &ModuleAnalysis) -> Vec<&Scope<'a>> {
        let mut pending: Vec<String> = module
            .scopes
            .iter()
            .flat_map(|scope| called_functions(self.package, module.module, scope))
            .collect();
        let mut seen = HashSet::new();
        let mut reached = Vec::new();
        while let Some(function) = pending.pop() {
            let Some(summary) = self.functions.get(&function) else {
                continue;
            };
            if !seen.insert(function.clone()) {
                continue;
            }
            pending.extend(summary.calls.iter().cloned());
            if let Some((module, scope_index)) = self.scope_of_function(&function) {
                reached.push(&module.scopes[scope_index]);
            }
        }
        reached
    }

    /// What a package function returns when `call` (made in `scope` of
    /// `module`) calls one: the function's module, its scope's index there,
    /// and the expression of its first `return` with a value.
    pub fn returned_by_call(
        &self,
        module: &ModuleAnalysis<'a>,
        scope: &Scope,
        call: &ast::ExprCall,
    ) -> Option<(&ModuleAnalysis<'a>, usize, &'a Expr)> {
        let callee = callee_name(self.package, module.module, scope, &call.func)?;
        let (defining, index) = self.scope_of_function(&callee)?;
        let returned =
            defining.scopes[index].facts.statements.iter().find_map(
                |statement| match statement {
                    Stmt::Return(ast::StmtReturn {
                        value: Some(value), ..
                    }) => Some(value.as_ref()),
                    _ => None,
                },
            )?;
        Some((defining, index, returned))
    }

    /// The module that defines a package function (by qualified name) and
    /// the index of the function's scope in it.
    pub fn scope_of_function(&self, function: &str) -> Option<(&ModuleAnalysis<'a>, usize)> {
        let summary = self.functions.get(function)?;
        self.modules
            .iter()
            .filter(|module| module.module.name == summary.module)
            .find_map(|module| {
                let index = *module.scopes_named(function).first()?;
                Some((module, index))
            })
    }
}

impl<'a> ModuleAnalysis<'a> {
    /// The indices of the scopes whose qualified name is `name`, in order.
    pub fn scopes_named(&self, name: &str) -> &[usize] {
        let by_name = self.scopes_by_name.get_or_init(|| {
            let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
            for (index, scope) in self.scopes.iter().enumerate() {
                by_name
                    .entry(scope.qualified_name.clone())
                    .or_default()
                    .push(index);
            }
            by_name
        });
        by_name.get(name).map_or(&[], Vec::as_slice)
    }

    /// The calls of the module whose callee is named `name` (a plain name
    /// or the attribute called), with the index of the scope making each.
    pub fn calls_named(&self, name: &str) -> Vec<(usize, &index::CallSite<'a>)> {
        let by_name = self.calls_by_name.get_or_init(|| {
            let mut by_name: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
            for (scope_index, scope) in self.scopes.iter().enumerate() {
                for (call_index, site) in scope.facts.calls.iter().enumerate() {
                    let called = match site.call.func.as_ref() {
                        Expr::Name(called) => called.id.as_str(),
                        Expr::Attribute(called) => called.attr.as_str(),
                        _ => continue,
                    };
                    by_name
                        .entry(called.to_string())
                        .or_default()
                        .push((scope_index, call_index));
                }
            }
            by_name
        });
        by_name
            .get(name)
            .into_iter()
            .flatten()
            .map(|&(scope_index, call_index)| {
                (
                    scope_index,
                    &self.scopes[scope_index].facts.calls[call_index],
                )
            })
            .collect()
    }

    /// The module's top level, or a function holding a training loop: code
    /// that runs once per process, on every rank.
    pub fn is_top_level_or_trains(&self, scope_index: usize) -> bool {
        scope_index == 0 || self.sites.iter().any(|site| site.scope == scope_index)
    }

    /// The first call, in scope order, of an API only TensorFlow 1 has
    /// (`tf.contrib`, `tf.logging`, `tf.Session`): the program runs TF1.
    pub fn tensorflow_1_only_call(&self) -> Option<&ast::ExprCall> {
        self.scopes.iter().find_map(|scope| {
            scope.facts.calls.iter().find_map(|site| {
                let raw = scope.bindings.resolve_raw(&site.call.func)?;
                crate::analysis::library::is_tf1_only(&raw).then_some(site.call)
            })
        })
    }

    /// A module's models and its own training sites, not yet linked to other modules.
    fn new(
        package: &Package,
        module: &'a Module,
        scopes: Vec<Scope<'a>>,
        factories: &HashSet<String>,
    ) -> ModuleAnalysis<'a> {
        let models = models::models_per_scope(package, module, &scopes, factories);
        let mut analysis = ModuleAnalysis {
            module,
            scopes,
            sites: Vec::new(),
            models,
            assumed_models: Vec::new(),
            step_callers: HashMap::new(),
            compiled_elsewhere: HashSet::new(),
            callbacks_made_elsewhere: HashSet::new(),
            index: SemanticIndex::default(),
            calls_by_name: std::sync::OnceLock::new(),
            scopes_by_name: std::sync::OnceLock::new(),
        };
        sites::find_sites(package, &mut analysis);
        analysis
    }

    /// Resolves values and collects the facts spanning scopes, once sites are final.
    fn index_facts(&mut self, package: &Package) {
        // Values are resolved where rules will ask: in modules that train.
        if !self.sites.is_empty() {
            let module = self.module;
            self.scopes
                .par_iter_mut()
                .for_each(|scope| index::resolve_values(package, module, scope));
        }
        self.index = index::module_facts(&self.scopes);
    }
}
