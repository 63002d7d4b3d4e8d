//! What a TF1 `sess.run(fetches)` does besides computing: a fetch that is
//! a train op, an assignment or an update changes variables, and a graph
//! that reads an input pipeline (an iterator's `get_next`, an input queue)
//! takes the next batch at each run. A run of neither only computes: it
//! may run on rank 0 alone (inside a print guarded there) and change
//! nothing the workers share.

use rustpython_parser::ast::{self, Expr};

use super::training::{ModuleAnalysis, Scope};
use super::walk::{dotted_name, keyword, walk_expression};

/// Calls whose result changes state when run.
const STATEFUL: &[&str] = &[
    "minimize",
    "apply_gradients",
    "assign",
    "assign_add",
    "assign_sub",
    "scatter_update",
    "scatter_add",
    "group",
    "count_up_to",
];

/// Calls that show the graph reads an input pipeline.
const INPUT_PIPELINES: &[&str] = &[
    "get_next",
    "make_one_shot_iterator",
    "make_initializable_iterator",
    "start_queue_runners",
    "shuffle_batch",
    "batch_join",
    "string_input_producer",
    "slice_input_producer",
    "range_input_producer",
    "input_producer",
];

/// Whether `run` (a `.run(...)` call of `scope`) only computes: every fetch
/// is a name the module assigns from computation alone, and nothing in the
/// module reads an input pipeline a run would advance.
pub fn run_only_computes(module: &ModuleAnalysis, scope: &Scope, run: &ast::ExprCall) -> bool {
    let is_run =
        matches!(run.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "run");
    let fetches = run
        .args
        .first()
        .or_else(|| keyword(run, "fetches").map(|keyword| &keyword.value));
    let Some(fetches) = fetches.filter(|_| is_run) else {
        return false;
    };
    if reads_input_pipeline(module) {
        return false;
    }
    let names: Vec<&Expr> = match fetches {
        Expr::List(list) => list.elts.iter().collect(),
        Expr::Tuple(tuple) => tuple.elts.iter().collect(),
        other => vec![other],
    };
    names.iter().all(|fetch| {
        let Some(name) = dotted_name(fetch).filter(|_| matches!(fetch, Expr::Name(_))) else {
            return false;
        };
        let assigned: Vec<&Expr> = [scope, &module.scopes[0]]
            .into_iter()
            .flat_map(|candidate| candidate.facts.assignments.iter())
            .filter(|assignment| assignment.name == name)
            .map(|assignment| assignment.value)
            .collect();
        !assigned.is_empty() && assigned.iter().all(|value| !changes_state(value))
    })
}

fn changes_state(expr: &Expr) -> bool {
    let mut found = false;
    walk_expression(expr, &mut |inner| {
        if let Expr::Call(call) = inner {
            let name = match call.func.as_ref() {
                Expr::Attribute(attribute) => attribute.attr.as_str(),
                Expr::Name(name) => name.id.as_str(),
                _ => "",
            };
            found |= STATEFUL.contains(&name) || name.contains("update");
        }
    });
    found
}

fn reads_input_pipeline(module: &ModuleAnalysis) -> bool {
    module
        .scopes
        .iter()
        .flat_map(|scope| scope.facts.calls.iter())
        .any(|site| {
            let name = match site.call.func.as_ref() {
                Expr::Attribute(attribute) => attribute.attr.as_str(),
                Expr::Name(name) => name.id.as_str(),
                _ => "",
            };
            INPUT_PIPELINES.contains(&name)
        })
}
