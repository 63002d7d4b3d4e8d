//! Train/test splits drawn from a process's global random state: the rows
//! held out are decided at random and then cut off, so processes that draw
//! them independently hold out different rows.

use rustpython_parser::ast::{Expr, Stmt};

use crate::analysis::index::CallSite;
use crate::analysis::training::Scope;
use crate::analysis::walk::{walk_expression, walk_statement_expressions};
use crate::python::parse::span;

/// A call that may draw a split from the global random state:
/// scikit-learn's `train_test_split` without `random_state`, a permutation
/// or choice of indices outside any loop, or a list shuffled outside any
/// loop and sliced later.
pub fn draws_split(callee: &str, site: &CallSite, scope: &Scope) -> bool {
    let split = callee.ends_with("train_test_split")
        && crate::analysis::walk::keyword(site.call, "random_state").is_none();
    let outside_loops = site.enclosing_loops.is_empty();
    // `df = df.sample(frac=1)`, then `train = df[:cut]`.
    let frame_shuffled_then_sliced = is_frame_sample(site.call)
        && outside_loops
        && match site.statement {
            Stmt::Assign(assign) => assign
                .targets
                .first()
                .is_some_and(|target| sliced_later(site, scope, target)),
            _ => false,
        };
    let indices =
        matches!(callee, "numpy.random.permutation" | "numpy.random.choice") && outside_loops;
    let shuffled_then_sliced = matches!(callee, "numpy.random.shuffle" | "random.shuffle")
        && outside_loops
        && site
            .call
            .args
            .first()
            .is_some_and(|list| sliced_later(site, scope, list));
    split || indices || shuffled_then_sliced || frame_shuffled_then_sliced
}

/// What a pandas table's unseeded `sample` is named as a drawer.
pub const FRAME_SAMPLE: &str = "pandas.DataFrame.sample";

/// `df.sample(frac=...)` or `df.sample(n=...)` with no `random_state`: rows
/// drawn from NumPy's global random state (the keywords are pandas' own).
pub fn is_frame_sample(call: &rustpython_parser::ast::ExprCall) -> bool {
    let keyword = |name: &str| crate::analysis::walk::keyword(call, name).is_some();
    matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "sample")
        && (keyword("frac") || keyword("n"))
        && !keyword("random_state")
}

/// Of the draws `draws_split` finds, those that cut rows in two:
/// `train_test_split`, a shuffle then slice, or indices drawn by a
/// permutation or choice and then sliced (`train_idx = idx[:n]`) or naming a
/// training set. Drawing a sample to show is not a split.
pub fn cuts_rows(callee: &str, site: &CallSite, scope: &Scope) -> bool {
    if !matches!(callee, "numpy.random.permutation" | "numpy.random.choice") {
        return true;
    }
    match site.statement {
        Stmt::Assign(assign) => assign.targets.first().is_some_and(|target| {
            sliced_later(site, scope, target) || feeds_a_training_set(site, scope, target)
        }),
        _ => false,
    }
}

/// The drawn indices name a training set, or reach one within two
/// assignments (`train_idx = np.random.choice(...)`;
/// `ix = np.random.permutation(n)`, `xs = x[ix]`, `x_train = xs[:cut]`).
fn feeds_a_training_set(site: &CallSite, scope: &Scope, target: &Expr) -> bool {
    let Expr::Name(drawn) = target else {
        return false;
    };
    let names_training = |name: &str| name.to_ascii_lowercase().contains("train");
    if names_training(drawn.id.as_str()) {
        return true;
    }
    let after = span(site.statement).end;
    let mut derived = vec![drawn.id.to_string()];
    for _ in 0..3 {
        let mut next = Vec::new();
        for assignment in &scope.facts.assignments {
            if span(assignment.statement).start < after {
                continue;
            }
            let mut reads = false;
            walk_expression(assignment.value, &mut |inner| {
                reads |= matches!(inner, Expr::Name(name) if derived.iter().any(|known| known == name.id.as_str()));
            });
            if reads {
                if names_training(&assignment.name) {
                    return true;
                }
                next.push(assignment.name.clone());
            }
        }
        derived.extend(next);
    }
    false
}

/// `np.random.shuffle(samples)` then `samples[:n]`: the order decides the
/// split. So it does through a list built in that order (`for x in samples:
/// files.append(...)`, then `files[:n]`).
fn sliced_later(site: &CallSite, scope: &Scope, list: &Expr) -> bool {
    let Expr::Name(list) = list else {
        return false;
    };
    let after = span(site.statement).end;
    sliced_after(scope, list.id.as_str(), after)
        || lists_built_in_order(scope, list.id.as_str(), after)
            .iter()
            .any(|(built, at)| sliced_after(scope, built, *at))
}

fn sliced_after(scope: &Scope, list: &str, after: usize) -> bool {
    scope.facts.statements.iter().any(|statement| {
        span(*statement).start >= after && {
            let mut sliced = false;
            walk_statement_expressions(statement, &mut |expr| {
                if let Expr::Subscript(subscript) = expr
                    && matches!(subscript.slice.as_ref(), Expr::Slice(_))
                    && matches!(subscript.value.as_ref(), Expr::Name(name) if name.id.as_str() == list)
                {
                    sliced = true;
                }
            });
            sliced
        }
    })
}

/// The lists a `for` loop over `list` after `after` appends to, in its
/// order, with where each loop ends.
fn lists_built_in_order(scope: &Scope, list: &str, after: usize) -> Vec<(String, usize)> {
    let mut built = Vec::new();
    for statement in &scope.facts.statements {
        let Stmt::For(node) = statement else {
            continue;
        };
        if span(*statement).start < after
            || !matches!(node.iter.as_ref(), Expr::Name(name) if name.id.as_str() == list)
        {
            continue;
        }
        crate::analysis::walk::for_each_statement(&node.body, false, &mut |inner| {
            walk_statement_expressions(inner, &mut |expr| {
                if let Expr::Call(call) = expr
                    && let Expr::Attribute(attribute) = call.func.as_ref()
                    && attribute.attr.as_str() == "append"
                    && let Expr::Name(target) = attribute.value.as_ref()
                {
                    built.push((target.id.to_string(), span(*statement).end));
                }
            });
        });
    }
    built
}

/// The unseeded split a package function draws, followed through the
/// package functions it calls: the canonical name of the drawing call
/// (`numpy.random.permutation`), when one of them cuts rows in two.
pub fn helper_drawing_split(
    analysis: &crate::analysis::training::Analysis,
    module: &crate::analysis::training::ModuleAnalysis,
    scope_index: usize,
    call: &rustpython_parser::ast::ExprCall,
) -> Option<String> {
    use crate::analysis::effects::resolved_callee;
    use crate::analysis::library::canonical_name;
    let mut pending = vec![resolved_callee(analysis, module, scope_index, &call.func)?];
    let mut seen = std::collections::HashSet::new();
    while let Some(function) = pending.pop() {
        if !seen.insert(function.clone()) || seen.len() > 32 {
            continue;
        }
        let Some((owner, index)) = analysis.scope_of_function(&function) else {
            continue;
        };
        let scope = &owner.scopes[index];
        for site in &scope.facts.calls {
            let Some(called) = resolved_callee(analysis, owner, index, &site.call.func) else {
                continue;
            };
            let drawer = canonical_name(&called);
            if draws_split(&drawer, site, scope) && cuts_rows(&drawer, site, scope) {
                return Some(drawer);
            }
            pending.push(called);
        }
    }
    None
}
