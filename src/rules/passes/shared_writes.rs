//! Which statements write to storage every worker shares, for the rank-0
//! pass: a catalogued write or removal (`np.save`, a figure's `savefig`, a
//! PIL image's `save`), or a `with` block whose context writes a file
//! (`with open(path, "w") as f:`), unless the path is the rank's own (built
//! from the rank) or the process's own (`tempfile.mkdtemp()`).

use std::collections::HashSet;

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::analysis::bindings::assigned_names;
use crate::analysis::catalogue::{Certainty, Effect};
use crate::analysis::effects;
use crate::analysis::training::Scope;
use crate::analysis::training::effect_summaries::{happens_on_storage, path_argument};
use crate::analysis::walk::{walk_expression, walk_statement_expressions};
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

/// A catalogued write or removal on a path every worker shares.
pub fn writes_shared_files(rewrite: &ModuleRewrite, scope: &Scope, call: &ast::ExprCall) -> bool {
    let Some(index) = rewrite.scope_index(scope) else {
        return false;
    };
    rewrite
        .catalogued_effects(scope, call)
        .iter()
        .any(|effect| {
            matches!(effect, Effect::Writes { .. } | Effect::Removes { .. })
                && happens_on_storage(effect, call)
                && !is_own_path(rewrite, index, call, effect)
        })
}

/// A write to a path of this process or rank alone: every rank writes its
/// own, and may read it back.
pub fn writes_own_path(rewrite: &ModuleRewrite, scope: &Scope, call: &ast::ExprCall) -> bool {
    let Some(index) = rewrite.scope_index(scope) else {
        return false;
    };
    rewrite
        .catalogued_effects(scope, call)
        .iter()
        .any(|effect| {
            matches!(effect, Effect::Writes { .. }) && is_own_path(rewrite, index, call, effect)
        })
}

/// A call, on a line of its own, of another module's function whose only
/// effects on every rank are writes of files (`viz.save_grid(path, batch)`),
/// that builds no TensorFlow ops, trains nothing and calls no Horovod.
pub fn calls_a_writing_helper(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    call: &ast::ExprCall,
) -> bool {
    let analysis = rewrite.analysis;
    let Some(index) = rewrite.scope_index(scope) else {
        return false;
    };
    let Some(callee) = effects::resolved_callee(analysis, rewrite.module, index, &call.func) else {
        return false;
    };
    let own_module = callee.starts_with(&format!("{}.", rewrite.module.module.name));
    if own_module || !effects::is_package_function(analysis.package, &callee) {
        return false;
    }
    let function = effects::function_called(analysis, &callee);
    let only_writes = analysis
        .effects
        .every_rank
        .get(&function)
        .is_some_and(|reached| {
            !reached.is_empty()
                && reached.iter().all(|effect| {
                    !effect.guessed
                        && matches!(
                            effect.effect,
                            Effect::Writes { .. } | Effect::Removes { .. }
                        )
                })
        });
    let steers = analysis.effects.builds_tensorflow.contains(&function)
        || analysis.effects.opaque.contains(&function)
        || analysis
            .functions
            .get(&function)
            .is_none_or(|summary| !summary.reaches.is_empty());
    only_writes && !steers && !analysis.effects.collectives.contains(&function)
}

/// `with open(path, "w") as f:` (or another catalogued writer) whose body
/// only writes: nothing it binds is read after it, and it neither returns
/// nor leaves a loop. The whole block runs on rank 0.
pub fn writes_in_with_block(rewrite: &ModuleRewrite, scope: &Scope, stmt: &Stmt) -> bool {
    let Stmt::With(block) = stmt else {
        return false;
    };
    let Some(index) = rewrite.scope_index(scope) else {
        return false;
    };
    let writes = block.items.iter().any(|item| {
        let Expr::Call(call) = &item.context_expr else {
            return false;
        };
        rewrite
            .catalogued_effects(scope, call)
            .iter()
            .any(|effect| match effect {
                Effect::Writes { when, .. } => {
                    when.as_ref()
                        .is_none_or(|when| when.on(call) == Certainty::Holds)
                        && !is_own_path(rewrite, index, call, effect)
                }
                _ => false,
            })
    });
    if !writes || leaves_the_block(&block.body) || rewrite.calls_horovod_in(&block.body) {
        return false;
    }
    let mut bound: HashSet<String> = assigned_names(&block.body);
    for item in &block.items {
        if let Some(Expr::Name(name)) = item.optional_vars.as_deref() {
            bound.insert(name.id.to_string());
        }
    }
    !read_after(scope, stmt, &bound)
}

fn is_own_path(
    rewrite: &ModuleRewrite,
    index: usize,
    call: &ast::ExprCall,
    effect: &Effect,
) -> bool {
    effects::path_is_per_process(rewrite.analysis, rewrite.module, index, call, effect)
        || path_argument(effect, call)
            .is_some_and(|path| effects::depends_on_rank(rewrite.module, index, path))
}

/// Whether any of `names` is read in the scope after `block`, outside the
/// `else` branches of the `if`s around it (they run instead of it).
fn read_after(scope: &Scope, block: &Stmt, names: &HashSet<String>) -> bool {
    let end = span(block).end;
    let instead: Vec<std::ops::Range<usize>> =
        crate::analysis::walk::path_to(scope.body, &span(block))
            .unwrap_or_default()
            .into_iter()
            .filter_map(|enclosing| match enclosing {
                Stmt::If(node)
                    if !node.orelse.is_empty()
                        && span(block).end <= span(&node.body[node.body.len() - 1]).end =>
                {
                    Some(span(&node.orelse[0]).start..span(&node.orelse[node.orelse.len() - 1]).end)
                }
                _ => None,
            })
            .collect();
    scope.facts.statements.iter().any(|stmt| {
        let mut reads = false;
        walk_statement_expressions(stmt, &mut |expr| {
            let at = span(expr).start;
            if let Expr::Name(name) = expr
                && at >= end
                && !instead.iter().any(|range| range.contains(&at))
                && names.contains(name.id.as_str())
            {
                reads = true;
            }
        });
        reads
    })
}

/// A `return`, `break`, `continue` or `yield` in the block: running it on
/// rank 0 only would change where the others go.
fn leaves_the_block(body: &[Stmt]) -> bool {
    body.iter().any(|stmt| {
        let leaves = matches!(
            stmt,
            Stmt::Return(_) | Stmt::Break(_) | Stmt::Continue(_) | Stmt::Raise(_)
        );
        let mut yields = false;
        walk_statement_expressions(stmt, &mut |expr| {
            walk_expression(expr, &mut |inner| {
                yields |= matches!(inner, Expr::Yield(_) | Expr::YieldFrom(_) | Expr::Await(_));
            });
        });
        leaves
            || yields
            || crate::analysis::walk::nested_bodies(stmt)
                .into_iter()
                .any(leaves_the_block)
    })
}
