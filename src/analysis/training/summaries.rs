//! What each package function does, directly or through the package
//! functions it calls.

use std::collections::{HashMap, HashSet};

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
    let mut functions = HashMap::new();
    for analysis in modules {
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
                    module: analysis.module.name.clone(),
                    reaches: direct.clone(),
                    direct,
                    calls: called_functions(package, analysis.module, scope),
                    returns_model: factories.contains(&scope.qualified_name),
                    defined_conditionally: scope.defined_conditionally,
                    range: span(function),
                },
            );
        }
    }
    functions
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
