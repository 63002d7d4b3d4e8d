//! How a module's training steps travel: train ops handed back by the
//! functions that build them (a builder returning its `train_op`, alone or
//! at its place in a tuple, makes a train op of what its caller binds there:
//! `q, loss, self.train = self._build()`), and step functions handed to
//! another call as values (`animate(training_step, 10001)`), which run them
//! where the module does not show how often. The rules that rewrite a
//! session and the checker that judges it both ask; these answers they share.

use rustpython_parser::ast::{self, Expr, Stmt};

use super::index::CallSite;
use super::training::{Analysis, ModuleAnalysis};
use super::walk::{dotted_name, for_each_statement};

/// Adds to `names` (train ops found so far) every name the module binds to a
/// train op that a function of the module returns, following builders that
/// return what other builders returned until nothing new is found.
pub fn follow_returns(module: &ModuleAnalysis, names: &mut Vec<String>) {
    loop {
        let returning = functions_returning(module, names);
        let before = names.len();
        let mut bound = Vec::new();
        for scope in &module.scopes {
            for_each_statement(scope.body, false, &mut |statement| {
                bound.extend(bound_from_returned(statement, &returning));
            });
        }
        for name in bound {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        if names.len() == before {
            return;
        }
    }
}

/// The functions of the module that return a train op: their name, and the
/// place of the train op in the returned tuple or list (`None`: returned alone).
fn functions_returning(
    module: &ModuleAnalysis,
    train_ops: &[String],
) -> Vec<(String, Option<usize>)> {
    let is_train_op = |expr: &Expr| dotted_name(expr).is_some_and(|name| train_ops.contains(&name));
    let mut returning = Vec::new();
    for scope in module.scopes.iter().skip(1) {
        for_each_statement(scope.body, false, &mut |statement| {
            let Stmt::Return(ast::StmtReturn {
                value: Some(value), ..
            }) = statement
            else {
                return;
            };
            let places: Vec<Option<usize>> = match value.as_ref() {
                Expr::Tuple(ast::ExprTuple { elts, .. })
                | Expr::List(ast::ExprList { elts, .. }) => elts
                    .iter()
                    .enumerate()
                    .filter(|(_, element)| is_train_op(element))
                    .map(|(place, _)| Some(place))
                    .collect(),
                other if is_train_op(other) => vec![None],
                _ => Vec::new(),
            };
            for place in places {
                let entry = (scope.name().to_string(), place);
                if !returning.contains(&entry) {
                    returning.push(entry);
                }
            }
        });
    }
    returning
}

/// The names an assignment binds to a train op that a call of one of the
/// `returning` functions (by name, or as a method) gives back.
fn bound_from_returned(statement: &Stmt, returning: &[(String, Option<usize>)]) -> Vec<String> {
    let Stmt::Assign(assign) = statement else {
        return Vec::new();
    };
    let Expr::Call(call) = assign.value.as_ref() else {
        return Vec::new();
    };
    let called = match call.func.as_ref() {
        Expr::Attribute(attribute) => attribute.attr.as_str(),
        Expr::Name(name) => name.id.as_str(),
        _ => return Vec::new(),
    };
    let mut bound = Vec::new();
    for (_, place) in returning.iter().filter(|(function, _)| function == called) {
        for target in &assign.targets {
            let element = match (target, place) {
                (
                    Expr::Tuple(ast::ExprTuple { elts, .. })
                    | Expr::List(ast::ExprList { elts, .. }),
                    Some(place),
                ) => elts.get(*place),
                (Expr::Tuple(_) | Expr::List(_), None) | (_, Some(_)) => None,
                (single, None) => Some(single),
            };
            if let Some(name) = element.and_then(dotted_name) {
                bound.push(name);
            }
        }
    }
    bound
}

/// The calls of the module that take the function `name` as an argument
/// (positional or keyword; a method as `agent.update`), with the index of
/// their scope.
pub fn calls_handed<'m, 'a>(
    module: &'m ModuleAnalysis<'a>,
    name: &str,
) -> Vec<(usize, &'m CallSite<'a>)> {
    let is_the_function = |argument: &Expr| match argument {
        Expr::Name(given) => given.id.as_str() == name,
        Expr::Attribute(given) => given.attr.as_str() == name,
        _ => false,
    };
    module
        .scopes
        .iter()
        .enumerate()
        .flat_map(|(index, scope)| scope.facts.calls.iter().map(move |site| (index, site)))
        .filter(|(_, site)| {
            site.call
                .args
                .iter()
                .chain(site.call.keywords.iter().map(|keyword| &keyword.value))
                .any(is_the_function)
        })
        .collect()
}

/// The calls of `name` (a function or method of `module`, called by name or
/// as an attribute) made by the other modules of the package that import it:
/// each with its module and the index of its scope there.
pub fn calls_from_importers<'x, 'a>(
    analysis: &'x Analysis<'a>,
    module: &ModuleAnalysis,
    name: &str,
) -> Vec<(&'x ModuleAnalysis<'a>, usize, &'x CallSite<'a>)> {
    analysis
        .modules
        .iter()
        .filter(|other| {
            !std::ptr::eq(*other, module) && other.module.imports.contains(&module.module.name)
        })
        .flat_map(|other| {
            other
                .calls_named(name)
                .into_iter()
                .map(move |(index, site)| (other, index, site))
        })
        .collect()
}

/// Library calls that run what they are handed concurrently, as many times
/// as the program's own timing decides (a thread, a process, a pool).
const CONCURRENT_RUNNERS: &[&str] = &[
    "threading.Thread",
    "multiprocessing.Process",
    "multiprocessing.Pool.map",
    "concurrent.futures.ThreadPoolExecutor.submit",
    "concurrent.futures.ProcessPoolExecutor.submit",
];

/// Whether a call handed a step function decides, where the module does not
/// show it, how often that function runs: a function of the package (an
/// animation helper driving it), or a library call that runs it
/// concurrently. A library call that runs it once to build a graph (an
/// Estimator's `model_fn`, `tf.app.run(main)`) does not.
pub fn runs_it_unseen(
    analysis: &Analysis,
    module: &ModuleAnalysis,
    scope_index: usize,
    call: &ast::ExprCall,
) -> bool {
    // A callee the index cannot name (a helper object's method) may be anything.
    let Some(callee) = super::effects::resolved_callee(analysis, module, scope_index, &call.func)
    else {
        return true;
    };
    super::effects::is_package_function(analysis.package, &callee)
        || CONCURRENT_RUNNERS.contains(&super::library::canonical_name(&callee).as_str())
}
