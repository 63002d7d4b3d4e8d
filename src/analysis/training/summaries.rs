//! What each package function does, directly or through the package
//! functions it calls.

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;

use super::scopes::called_functions;
use super::{FunctionSummary, ModuleAnalysis, TrainingPattern};
use crate::analysis::package::Package;
use crate::python::parse::span;

/// One summary per function of every module, keyed by qualified name, with
/// the patterns of the function's own sites.
pub(super) fn function_summaries(
    package: &Package,
    modules: &[ModuleAnalysis],
    factories: &HashSet<String>,
) -> HashMap<String, FunctionSummary> {
    // Modules in parallel (resolving every call is the cost), then merged in
    // module order, as before (a name defined twice keeps the later one).
    let per_module: Vec<Vec<(String, FunctionSummary)>> = modules
        .par_iter()
        .map(|analysis| module_function_summaries(package, analysis, factories))
        .collect();
    let mut functions = HashMap::new();
    for (name, summary) in per_module.into_iter().flatten() {
        functions.insert(name, summary);
    }
    functions
}

/// The summaries of one module's functions.
fn module_function_summaries(
    package: &Package,
    analysis: &ModuleAnalysis,
    factories: &HashSet<String>,
) -> Vec<(String, FunctionSummary)> {
    // Scopes in parallel too: one large module is one task of the package's.
    let scopes = analysis.scopes.par_iter().enumerate();
    scopes
        .filter_map(|(index, scope)| {
            let function = scope.function?;
            let direct = analysis
                .sites
                .iter()
                .filter(|site| site.scope == index)
                .map(|site| site.pattern)
                .collect::<HashSet<_>>();
            Some((
                scope.qualified_name.clone(),
                FunctionSummary {
                    module: analysis.module.name.clone(),
                    reaches: direct.clone(),
                    direct,
                    calls: called_functions(package, analysis.module, scope),
                    returns_model: factories.contains(&scope.qualified_name),
                    defined_conditionally: scope.defined_conditionally,
                    range: span(function),
                },
            ))
        })
        .collect()
}

/// Adds to each function the patterns its callees reach, until nothing
/// changes (the call graph may have cycles).
pub(super) fn propagate_reached_patterns(functions: &mut HashMap<String, FunctionSummary>) {
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
}
