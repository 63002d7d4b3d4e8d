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

/// `f = open(path, "w")` (or another catalogued writer), and the statements
/// after it up to the last that uses `f` (its `close()`): the handle's
/// writes run on rank 0 as one block. Consecutive handles (`out_v = ...`,
/// `out_m = ...`) make one run. Each statement of the run uses a handle,
/// none trains, calls the package's functions or Horovod, leaves the block,
/// or binds a name read after the run. Returns the index past the run.
pub fn file_handle_run(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    body: &[Stmt],
    start: usize,
) -> Option<usize> {
    let mut handles = HashSet::new();
    let mut position = start;
    while let Some(name) = body
        .get(position)
        .and_then(|stmt| opened_for_writing(rewrite, scope, stmt))
    {
        handles.insert(name);
        position += 1;
    }
    if handles.is_empty() {
        return None;
    }
    let end = position
        + body[position..]
            .iter()
            .take_while(|stmt| reads_any(stmt, &handles))
            .count();
    let run = &body[start..end];
    let run_range = span(&run[0]).start..span(&run[run.len() - 1]).end;
    let trains = rewrite
        .module
        .sites
        .iter()
        .any(|site| run_range.contains(&site.range.start));
    if end == position
        || trains
        || leaves_the_block(run)
        || rewrite.calls_horovod_in(run)
        || calls_package_function(rewrite, scope, run)
    {
        return None;
    }
    let mut bound = assigned_names(run);
    bound.extend(handles);
    (!read_after(scope, &run[run.len() - 1], &bound)).then_some(end)
}

/// The catalogue's type of what `open` returns.
const FILE_OBJECT: &str = "io.IOBase";

/// The name an assignment binds to a file opened for writing on storage
/// every worker shares.
fn opened_for_writing(rewrite: &ModuleRewrite, scope: &Scope, stmt: &Stmt) -> Option<String> {
    let Stmt::Assign(assign) = stmt else {
        return None;
    };
    let ([Expr::Name(target)], Expr::Call(call)) = (assign.targets.as_slice(), &*assign.value)
    else {
        return None;
    };
    let index = rewrite.scope_index(scope)?;
    let entry = rewrite.call_effects(scope, call).entry()?;
    if entry.returns.as_deref() != Some(FILE_OBJECT) {
        return None;
    }
    let writes = entry
        .effects
        .iter()
        .any(|effect| writes_shared_path(rewrite, index, call, effect));
    writes.then(|| target.id.to_string())
}

/// Whether a statement reads one of `names`.
fn reads_any(stmt: &Stmt, names: &HashSet<String>) -> bool {
    let mut reads = false;
    walk_statement_expressions(stmt, &mut |expr| {
        walk_expression(expr, &mut |inner| {
            reads |= matches!(inner, Expr::Name(name) if names.contains(name.id.as_str()));
        });
    });
    reads
        || crate::analysis::walk::nested_bodies(stmt)
            .into_iter()
            .any(|body| body.iter().any(|inner| reads_any(inner, names)))
}

/// Whether statements call a function of the package (which may train or
/// synchronise, and must then run on every rank).
fn calls_package_function(rewrite: &ModuleRewrite, scope: &Scope, run: &[Stmt]) -> bool {
    let Some(index) = rewrite.scope_index(scope) else {
        return true;
    };
    let analysis = rewrite.analysis;
    let mut calls = false;
    crate::analysis::walk::for_each_statement(run, false, &mut |stmt| {
        calls |= crate::analysis::walk::calls_in_statement(stmt)
            .into_iter()
            .any(|call| {
                effects::resolved_callee(analysis, rewrite.module, index, &call.func)
                    .is_some_and(|callee| analysis.functions.contains_key(&callee))
            });
    });
    calls
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
            .any(|effect| writes_shared_path(rewrite, index, call, effect))
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

/// A catalogued write this call makes (`open(path, "w")`, not `open(path)`)
/// to a path every worker shares.
fn writes_shared_path(
    rewrite: &ModuleRewrite,
    index: usize,
    call: &ast::ExprCall,
    effect: &Effect,
) -> bool {
    match effect {
        Effect::Writes { when, .. } => {
            when.as_ref()
                .is_none_or(|when| when.on(call) == Certainty::Holds)
                && !is_own_path(rewrite, index, call, effect)
        }
        _ => false,
    }
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
