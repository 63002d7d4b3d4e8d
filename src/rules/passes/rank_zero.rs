//! Rank 0 writes, everyone computes: prints, `model.summary()`, saves,
//! checkpoints and summary writes go under `if hvd.rank() == 0:` (one guard
//! around consecutive statements); a summary file writer becomes a no-op
//! writer elsewhere; a save read back later is followed by a barrier, so no
//! rank reads before rank 0 has written; a directory tree deleted on rank 0
//! before training is followed by a barrier, so no rank writes there before
//! it is gone.
//!
//! Input: every scope, its statements and its checkpoint names (from the
//! index). Output: the guards, writers and barriers, and DST004 / DST108 for
//! the statements that could not be guarded.

use std::collections::HashSet;

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::analysis::catalogue::Effect;
use crate::analysis::index::AbstractValue;
use crate::analysis::library;
use crate::analysis::training::Scope;
use crate::analysis::training::effect_summaries::{happens_on_storage, path_argument, path_tokens};
use crate::analysis::walk::{
    calls_in_statement, is_scope, nested_bodies, walk_expression, walk_statement_expressions,
};
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::edit::Edit;
use crate::python::parse::span;
use crate::rules::passes::shared_writes;
use crate::rules::rewrite::ModuleRewrite;

pub const PRINT_WITH_SIDE_EFFECTS: Code = Code::new(
    "DST004",
    "print-with-side-effects",
    Severity::Warning,
    "A print's arguments have side effects, so it cannot be moved to rank 0.",
);

pub const STATEMENT_NOT_GUARDED: Code = Code::new(
    "DST108",
    "statement-not-guarded",
    Severity::Warning,
    "A statement that should run on rank 0 only was left on every rank: it shares its line with other code, or it is a save whose result is used further down.",
);

pub const DIRECTORY_MADE_RACE_FREE: Code = Code::new(
    "DST128",
    "directory-made-race-free",
    Severity::Info,
    "A directory every worker creates is created with a call that accepts it already being there.",
);

pub const CODES: &[Code] = &[
    PRINT_WITH_SIDE_EFFECTS,
    STATEMENT_NOT_GUARDED,
    DIRECTORY_MADE_RACE_FREE,
];

/// Puts the statements that must run once (prints, saves, summaries) under
/// `if hvd.rank() == 0:`. Loading stays on every rank.
pub fn run(rewrite: &mut ModuleRewrite) {
    let module = rewrite.module;
    let checkpoints_of = |scope: &Scope| -> HashSet<String> {
        scope
            .facts
            .names_holding(AbstractValue::Checkpoint)
            .map(String::from)
            .collect()
    };
    let top_level_checkpoints = checkpoints_of(&module.scopes[0]);
    for (index, scope) in module.scopes.iter().enumerate() {
        let mut checkpoints = checkpoints_of(scope);
        checkpoints.extend(top_level_checkpoints.iter().cloned());
        guard_block(rewrite, index, scope, scope.body, &checkpoints);
    }
    make_directory_creation_race_free(rewrite);
}

fn guard_block(
    rewrite: &mut ModuleRewrite,
    scope_index: usize,
    scope: &Scope,
    body: &[Stmt],
    checkpoints: &HashSet<String>,
) {
    let mut group: Vec<&Stmt> = Vec::new();
    let mut position = 0;
    while let Some(stmt) = body.get(position) {
        position += 1;
        // Code at the top that runs before `hvd.init()` (a notebook's first
        // cell, above the first import) cannot ask for the rank: it stays as
        // written, and the checker judges what it does.
        let before_init = scope.function.is_none()
            && rewrite
                .horovod_initialised_at
                .is_some_and(|initialised_at| span(stmt).start < initialised_at);
        if before_init {
            if !group.is_empty() {
                guard_group(rewrite, scope, &group);
                group.clear();
            }
            continue;
        }
        if let Some(end) = shared_writes::file_handle_run(rewrite, scope, body, position - 1)
            && body[position - 1..end]
                .iter()
                .all(|stmt| rewrite.owns_its_lines(&span(stmt)) && !rewrite.is_guarded(stmt))
        {
            group.extend(&body[position - 1..end]);
            position = end;
            continue;
        }
        if must_run_on_rank_zero(rewrite, scope_index, scope, stmt, checkpoints) {
            if rewrite.owns_its_lines(&span(stmt)) {
                group.push(stmt);
                continue;
            }
            rewrite.diagnose(
                Diagnostic::new(STATEMENT_NOT_GUARDED, span(stmt), "this statement should run on rank 0 only, but it shares its line with other code")
                    .with_suggestion(format!("put it on its own line under `if {}:`", rewrite.rank_zero_test())),
            );
        }
        if !group.is_empty() {
            guard_group(rewrite, scope, &group);
            group.clear();
        }
        if let Stmt::Assign(assign) = stmt {
            guard_summary_writer(rewrite, scope, assign);
        }
        if is_scope(stmt) {
            continue;
        }
        if let Stmt::If(node) = stmt
            && rewrite.is_rank_zero_test(&node.test)
        {
            guard_block(rewrite, scope_index, scope, &node.orelse, checkpoints);
            continue;
        }
        for nested in nested_bodies(stmt) {
            guard_block(rewrite, scope_index, scope, nested, checkpoints);
        }
    }
    if !group.is_empty() {
        guard_group(rewrite, scope, &group);
    }
}

/// Guards a run of rank-0 statements. A save whose result is assigned
/// (`path = manager.save()`) joins only when the names it assigns are not
/// used after the run: other ranks would not have them.
fn guard_group(rewrite: &mut ModuleRewrite, scope: &Scope, group: &[&Stmt]) {
    let group_end = group.last().map_or(0, |last| span(*last).end);
    // Names the scope reads after the run (code, not comments or strings;
    // a later assignment of the same name reads nothing).
    let mut read_later = HashSet::new();
    for stmt in &scope.facts.statements {
        walk_statement_expressions(stmt, &mut |expr| {
            if let Expr::Name(name) = expr
                && name.ctx == ast::ExprContext::Load
                && span(expr).start >= group_end
            {
                read_later.insert(name.id.to_string());
            }
        });
    }
    let mut run: Vec<&Stmt> = Vec::new();
    for stmt in group {
        let used_later = match stmt {
            Stmt::Assign(assign) => assign.targets.iter().find_map(|target| match target {
                Expr::Name(name) => read_later
                    .contains(name.id.as_str())
                    .then(|| name.id.to_string()),
                other => Some(rewrite.source(span(other)).to_string()),
            }),
            _ => None,
        };
        match used_later {
            None => run.push(stmt),
            Some(name) => {
                rewrite.diagnose(
                    Diagnostic::new(STATEMENT_NOT_GUARDED, span(*stmt), format!("this save runs on every rank because `{name}`, which it assigns, is used further down; every worker writes the same files"))
                        .with_suggestion(format!("move the uses of `{name}` under `if {}:` with the save", rewrite.rank_zero_test())),
                );
                if !run.is_empty() {
                    rewrite.guard_statements(&run);
                    run.clear();
                }
            }
        }
    }
    if !run.is_empty() {
        rewrite.guard_statements(&run);
    }
    barrier_before_reading_back(rewrite, scope, group, group_end);
    barrier_after_deleting_tree(rewrite, scope, group);
}

/// A directory tree deleted on rank 0 (a job directory cleared before
/// training): the others must not create or read files in it before it is
/// gone, so everyone waits after the deletion. None in a loop, where the
/// deletion is rank 0's own bookkeeping (old checkpoints).
fn barrier_after_deleting_tree(rewrite: &mut ModuleRewrite, scope: &Scope, group: &[&Stmt]) {
    let deletes_tree = |call: &ast::ExprCall| {
        rewrite
            .catalogued_effects(scope, call)
            .iter()
            .any(|effect| matches!(effect, Effect::Removes { tree: true, .. }))
    };
    let deletion = group
        .iter()
        .find(|stmt| calls_in_statement(stmt).into_iter().any(&deletes_tree));
    let Some(deletion) = deletion else {
        return;
    };
    let group_end = group.last().map_or(0, |last| span(*last).end);
    let Some((after, parent)) = barrier_anchor(rewrite, scope, deletion, group_end) else {
        return;
    };
    // Several deletions in a row share the wait after the last of them.
    let deleted_later = scope.facts.calls.iter().any(|site| {
        span(site.statement).start >= group_end
            && deletes_tree(site.call)
            && barrier_anchor(rewrite, scope, site.statement, span(site.statement).end)
                .is_some_and(|(_, later_parent)| later_parent == parent)
    });
    if deleted_later || rewrite.mentions("rmtree_barrier") {
        return;
    }
    let Some(barrier) = rewrite
        .plugin
        .eager_barrier(&rewrite.context, "rmtree_barrier")
    else {
        return;
    };
    let line = format!("{barrier}  # rank 0 has deleted it before anyone writes there");
    rewrite.insert_after_statement(&after, &[line]);
}

/// Where the wait after a deletion goes (from the deletion's start to
/// `end`, or the whole enclosing statement) and the statement whose body
/// holds it (`None`: the scope's body). It goes after the enclosing checks
/// of the file system (`if exists(d):`), which ranks may answer differently
/// once rank 0 has deleted. `None` inside a loop.
type Anchor = (std::ops::Range<usize>, Option<std::ops::Range<usize>>);

fn barrier_anchor(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    deletion: &Stmt,
    end: usize,
) -> Option<Anchor> {
    let path = crate::analysis::walk::path_to(scope.body, &span(deletion))?;
    if path.iter().any(|stmt| crate::analysis::walk::is_loop(stmt)) {
        return None;
    }
    let mut after = span(deletion).start..end;
    let mut depth = path.len() - 1;
    while depth > 0 {
        let Stmt::If(check) = path[depth - 1] else {
            break;
        };
        let test = rewrite.source(span(check.test.as_ref()));
        let checks_files = ["exist", "isdir", "IsDirectory", "listdir"]
            .iter()
            .any(|word| test.contains(word));
        if !checks_files {
            break;
        }
        depth -= 1;
        after = span(path[depth]);
    }
    let parent = depth.checked_sub(1).map(|index| span(path[index]));
    Some((after, parent))
}

/// A save moved to rank 0 and read back further down (`load_model`,
/// `restore`, `latest_checkpoint`...) would be read by the other ranks
/// before rank 0 has written it: wait for rank 0 right after the save.
fn barrier_before_reading_back(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    group: &[&Stmt],
    group_end: usize,
) {
    let effects = |call: &ast::ExprCall| rewrite.catalogued_effects(scope, call);
    // The calls of the group that write, with the names their paths are built from.
    let mut written: Vec<String> = Vec::new();
    let mut save = None;
    for stmt in group {
        for call in calls_in_statement(stmt) {
            for effect in effects(call) {
                if matches!(effect, Effect::Writes { .. } | Effect::SavesCheckpoint)
                    && happens_on_storage(effect, call)
                {
                    save = save.or(Some(call));
                    written.extend(
                        path_argument(effect, call)
                            .map(path_tokens)
                            .unwrap_or_default(),
                    );
                }
            }
        }
    }
    let Some(save) = save else {
        return;
    };
    // Input data (records) is read back by the pipeline the job trains on,
    // wherever that is built.
    let input_data = group.iter().any(|stmt| {
        calls_in_statement(stmt).into_iter().any(|call| {
            effects(call).iter().any(|effect| {
                matches!(
                    effect,
                    Effect::Writes {
                        input_data: true,
                        ..
                    }
                )
            })
        })
    });
    let first_read_back = scope
        .facts
        .calls
        .iter()
        .filter(|site| {
            span(site.statement).start >= group_end
                && reads_without_writing(effects(site.call), site.call)
                && effects(site.call).iter().any(|effect| {
                    let read = path_argument(effect, site.call)
                        .map(path_tokens)
                        .unwrap_or_default();
                    written.is_empty()
                        || read.is_empty()
                        || read.iter().any(|token| written.contains(token))
                })
        })
        .map(|site| span(site.statement).start)
        .min();
    let read_back_before = match (input_data, first_read_back) {
        (_, Some(first)) => first,
        (true, None) => usize::MAX,
        (false, None) => return,
    };
    // A barrier already between the save and the read (one this pass put
    // after another save of the same block) is enough.
    let barrier_between = rewrite
        .named_barriers("save_barrier")
        .iter()
        .any(|barrier| barrier.start >= group_end && barrier.start < read_back_before);
    if barrier_between {
        return;
    }
    // The saving session's own barrier, else one that needs no session.
    let mut lines = match rewrite.plugin.save_barrier(&rewrite.context, save) {
        Some(barrier) => vec![barrier],
        None => match rewrite
            .plugin
            .download_barrier(&rewrite.context, "save_barrier")
        {
            Some(lines) => lines,
            None => return,
        },
    };
    if let Some(last) = lines.last_mut() {
        last.push_str("  # rank 0 has written it before anyone reads it back");
    }
    let last = group.last().map_or(0..0, |last| span(*last));
    let first = group.first().map_or(0..0, |first| span(*first));
    // Inside a block (`if not os.path.exists(path):`), a rank may skip the
    // block and never meet the others: the barrier goes after the scope's
    // statement that holds it, which every rank runs.
    let place = scope
        .body
        .iter()
        .filter(|statement| matches!(statement, Stmt::If(_)))
        .map(span)
        .find(|statement| statement.start <= first.start && last.end <= statement.end)
        .unwrap_or(first.start..last.end);
    rewrite.insert_after_statement(&place, &lines);
}

/// A call that reads a file or checkpoint (`open(p)` reads; `open(p, "w")` does not).
fn reads_without_writing(effects: &[Effect], call: &ast::ExprCall) -> bool {
    effects
        .iter()
        .any(|effect| matches!(effect, Effect::Reads { .. } | Effect::RestoresCheckpoint))
        && !effects.iter().any(|effect| {
            matches!(effect, Effect::Writes { .. }) && happens_on_storage(effect, call)
        })
}

fn must_run_on_rank_zero(
    rewrite: &mut ModuleRewrite,
    scope_index: usize,
    scope: &Scope,
    stmt: &Stmt,
    checkpoints: &HashSet<String>,
) -> bool {
    let index = &rewrite.module.index;
    if rewrite.is_guarded(stmt) || index.is_in_launcher(&span(stmt)) {
        // Guarded already, or run by the launching process before any
        // `hvd.init()`, where asking for the rank raises.
        return false;
    }
    // Saves return a path, so `path = manager.save()` counts too.
    let (call, assigned) = match stmt {
        Stmt::Expr(expression) => (expression.value.as_ref(), false),
        Stmt::Assign(assign) => (assign.value.as_ref(), true),
        Stmt::With(_) => return shared_writes::writes_in_with_block(rewrite, scope, stmt),
        _ => return false,
    };
    let Expr::Call(call) = call else {
        return false;
    };
    if shared_writes::writes_own_path(rewrite, scope, call) {
        return false;
    }
    if assigned {
        return is_checkpoint_save(rewrite, scope, call, checkpoints);
    }
    if let Expr::Name(name) = call.func.as_ref()
        && name.id.as_str() == "print"
        && !scope.bindings.is_bound("print")
    {
        return guards_prints(rewrite) && print_without_side_effects(rewrite, scope, call);
    }
    if let Some(callee) = scope.bindings.resolve(&call.func) {
        let callee = library::canonical_name(&callee);
        if callee == "tensorflow.print" {
            return guards_prints(rewrite) && print_without_side_effects(rewrite, scope, call);
        }
        if let Some(entry) = rewrite.call_effects(scope, call).entry()
            && entry.returns.is_none()
            && entry.has(|effect| matches!(effect, Effect::WritesSummary | Effect::SummaryOp))
        {
            // In graph mode these build ops, which every rank must have
            // (`merge_all()` would be None elsewhere); in eager mode they write.
            let builds_op = entry.has(|effect| *effect == Effect::SummaryOp);
            return entry.has(|effect| *effect == Effect::WritesSummary)
                && !(builds_op && is_graph_mode(rewrite));
        }
    }
    if writes_through_file_writer(rewrite, scope, call) {
        return true;
    }
    if is_checkpoint_save(rewrite, scope, call, checkpoints)
        || shared_writes::writes_shared_files(rewrite, scope, call)
        || (!assigned && shared_writes::calls_a_writing_helper(rewrite, scope, call))
    {
        return true;
    }
    let Expr::Attribute(attribute) = call.func.as_ref() else {
        return false;
    };
    let Some(receiver) = crate::analysis::walk::dotted_name(&attribute.value) else {
        return false;
    };
    let receiver = receiver.as_str();
    let method = attribute.attr.as_str();
    let is_model = rewrite.module.models[scope_index].contains(receiver)
        || rewrite
            .module
            .assumed_models
            .iter()
            .any(|(index, name, _)| *index == scope_index && name == receiver);
    is_model && matches!(method, "summary" | "save" | "save_weights")
}

/// Prints go to rank 0 unless the module already uses Horovod and prints on
/// every rank by choice, as Horovod's own examples do: then a new print is
/// guarded only where the module guards most of its prints already.
fn guards_prints(rewrite: &ModuleRewrite) -> bool {
    if !rewrite.had_horovod {
        return true;
    }
    let index = &rewrite.module.index;
    let (mut guarded, mut unguarded) = (0usize, 0usize);
    for scope in &rewrite.module.scopes {
        for site in &scope.facts.calls {
            if index.is_in_launcher(&span(site.statement)) {
                continue;
            }
            if matches!(site.call.func.as_ref(), Expr::Name(name) if name.id.as_str() == "print") {
                if index.is_under_rank_zero(&span(site.statement)) {
                    guarded += 1;
                } else {
                    unguarded += 1;
                }
            }
        }
    }
    guarded > 0 && guarded >= unguarded
}

/// A directory made by every worker: all but the first would find it there
/// and fail. The call gets the argument that makes it race-free
/// (`os.makedirs(d, exist_ok=True)`), or becomes its race-free sibling
/// (`os.mkdir(d)` -> `os.makedirs(d, exist_ok=True)`), as the catalogue says.
fn make_directory_creation_race_free(rewrite: &mut ModuleRewrite) {
    let module = rewrite.module;
    for scope in &module.scopes {
        for site in &scope.facts.calls {
            if module.index.is_under_rank_zero(&span(site.statement))
                || fails_where_it_is_there(rewrite, scope, site.call)
            {
                continue;
            }
            let Some(Effect::CreatesDirectory {
                race_free_when,
                race_free_sibling,
                ..
            }) = rewrite
                .catalogued_effects(scope, site.call)
                .iter()
                .find(|effect| matches!(effect, Effect::CreatesDirectory { .. }))
            else {
                continue;
            };
            match (race_free_when, race_free_sibling) {
                (Some(condition), _) => add_race_free_argument(rewrite, site.call, condition),
                (None, Some(sibling)) => use_race_free_sibling(rewrite, scope, site.call, sibling),
                (None, None) => {}
            }
        }
    }
}

/// `if os.path.isdir(d): raise ...` before `os.mkdir(d)`: the program stops
/// where the directory is there, so a worker that finds another's stops;
/// making the creation race-free would not help, and the checker says so.
fn fails_where_it_is_there(
    rewrite: &ModuleRewrite,
    scope: &crate::analysis::training::Scope,
    call: &ast::ExprCall,
) -> bool {
    let Some(path) = call.args.first().map(|path| rewrite.expression_text(path)) else {
        return false;
    };
    scope.facts.statements.iter().any(|statement| {
        let Stmt::If(node) = statement else {
            return false;
        };
        if span(*statement).start >= span(call).start {
            return false;
        }
        let mut tests_the_path = false;
        crate::analysis::walk::walk_expression(&node.test, &mut |expr| {
            if let Expr::Call(test) = expr
                && matches!(test.func.as_ref(), Expr::Attribute(attribute)
                    if matches!(attribute.attr.as_str(), "exists" | "isdir"))
            {
                tests_the_path |= test
                    .args
                    .first()
                    .is_some_and(|tested| rewrite.expression_text(tested) == path);
            }
        });
        // `if os.path.isdir(d): raise ... else: os.mkdir(...)` tests it too.
        let in_its_else = node.orelse.iter().any(|inner| {
            span(inner).start <= span(call).start && span(call).end <= span(inner).end
        });
        (tests_the_path || in_its_else)
            && node
                .body
                .iter()
                .any(|inner| matches!(inner, Stmt::Raise(_)))
    })
}

/// `exist_ok=True` where the call passes nothing for it.
fn add_race_free_argument(
    rewrite: &mut ModuleRewrite,
    call: &ast::ExprCall,
    condition: &crate::analysis::catalogue::Condition,
) {
    let Some(keyword) = &condition.argument.keyword else {
        return;
    };
    let given = call.keywords.iter().any(|given| {
        given
            .arg
            .as_ref()
            .is_none_or(|name| name.as_str() == keyword)
    });
    let by_position = condition
        .argument
        .position
        .is_some_and(|position| call.args.len() > position);
    if !given && !by_position {
        rewrite.add_keyword(call, keyword, "True");
    }
}

/// `os.mkdir(d)` -> `os.makedirs(d, exist_ok=True)`: the sibling of the same
/// module, with its own race-free argument.
fn use_race_free_sibling(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    call: &ast::ExprCall,
    sibling: &str,
) {
    let Expr::Attribute(attribute) = call.func.as_ref() else {
        return;
    };
    let Some(callee) = rewrite.callee(scope, &call.func) else {
        return;
    };
    let Some((module_name, _)) = callee.rsplit_once('.') else {
        return;
    };
    let receiver = rewrite.expression_text(&attribute.value).to_string();
    rewrite.edit(Edit::replacement(
        span(call.func.as_ref()),
        format!("{receiver}.{sibling}"),
    ));
    let sibling_condition = rewrite
        .analysis
        .catalogue
        .call(&format!("{module_name}.{sibling}"))
        .and_then(|entry| {
            entry.effects.iter().find_map(|effect| match effect {
                Effect::CreatesDirectory {
                    race_free_when: Some(condition),
                    ..
                } => Some(condition.clone()),
                _ => None,
            })
        });
    if let Some(condition) = sibling_condition {
        add_race_free_argument(rewrite, call, &condition);
    }
    rewrite.diagnose(Diagnostic::new(
        DIRECTORY_MADE_RACE_FREE,
        span(call),
        format!("every worker makes this directory: `{receiver}.{}` would fail on all but the first, so it became `{receiver}.{sibling}`, which also makes missing parents and accepts a directory already there", attribute.attr),
    ));
}

/// TF1 graph mode: summaries are ops that a `FileWriter` writes.
fn is_graph_mode(rewrite: &ModuleRewrite) -> bool {
    use crate::analysis::training::TrainingPattern;
    matches!(
        rewrite.pattern,
        TrainingPattern::Session | TrainingPattern::MonitoredSession | TrainingPattern::Estimator
    )
}

/// `writer.add_summary(...)`, `add_graph`, and `flush` / `close` of a TF1
/// `FileWriter`: the writes rank 0 owns (the summary functions are judged
/// with the prints). Called for a statement that drops the call's value, so
/// a `FileWriter` made only to write the graph (`tf.summary.FileWriter(d,
/// sess.graph)`, its writer never used) counts too.
fn writes_through_file_writer(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    call: &ast::ExprCall,
) -> bool {
    matches!(call.func.as_ref(), Expr::Attribute(_))
        && rewrite
            .call_effects(scope, call)
            .entry()
            .is_some_and(|entry| entry.effects == [Effect::WritesSummary])
}

/// `ckpt.save(...)`, `manager.save()`, `saver.save(...)`, and the chained
/// `tf.train.Saver().save(...)`: they write files, which one worker must own.
fn is_checkpoint_save(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    call: &ast::ExprCall,
    checkpoints: &HashSet<String>,
) -> bool {
    let Expr::Attribute(attribute) = call.func.as_ref() else {
        return false;
    };
    if !matches!(attribute.attr.as_str(), "save" | "write") {
        return false;
    }
    let known = rewrite
        .catalogued_effects(scope, call)
        .contains(&Effect::SavesCheckpoint)
        || crate::analysis::walk::dotted_name(&attribute.value)
            .is_some_and(|receiver| checkpoints.contains(receiver.as_str()));
    // A saver made elsewhere (returned by a graph-building function) still
    // shows itself: `saver.save(sess, path)` takes the session first.
    known
        || (attribute.attr.as_str() == "save"
            && matches!(call.args.first(), Some(Expr::Name(first))
                if scope.facts.session_names().contains(first.id.as_str())))
}

fn print_without_side_effects(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    call: &ast::ExprCall,
) -> bool {
    let mut side_effect = None;
    for argument in call
        .args
        .iter()
        .chain(call.keywords.iter().map(|keyword| &keyword.value))
    {
        walk_expression(argument, &mut |expr| {
            let has_effect = match expr {
                Expr::NamedExpr(_) => true,
                Expr::Call(inner) => match inner.func.as_ref() {
                    Expr::Name(name) => matches!(name.id.as_str(), "next" | "input"),
                    Expr::Attribute(attribute) => {
                        matches!(
                            attribute.attr.as_str(),
                            "pop"
                                | "popleft"
                                | "popitem"
                                | "append"
                                | "extend"
                                | "send"
                                | "update"
                                | "write"
                                | "assign"
                                | "assign_add"
                                | "assign_sub"
                                | "apply_gradients"
                                | "step"
                                | "save"
                        ) || (attribute.attr.as_str() == "run"
                            && (rewrite.had_horovod
                                || !crate::analysis::fetches::run_only_computes(
                                    rewrite.module,
                                    scope,
                                    inner,
                                )))
                    }
                    _ => false,
                },
                _ => false,
            };
            if has_effect && side_effect.is_none() {
                side_effect = Some(span(expr));
            }
        });
    }
    match side_effect {
        None => true,
        Some(range) => {
            let effect = rewrite.source(range).to_string();
            rewrite.diagnose(
                Diagnostic::new(
                    PRINT_WITH_SIDE_EFFECTS,
                    span(call),
                    format!("`{effect}` inside this print has side effects; guarding the print would run them on rank 0 only, so it was left on every rank"),
                )
                .with_suggestion(format!("compute the value before the print, then put the print under `if {}:`", rewrite.rank_zero_test())),
            );
            false
        }
    }
}

/// `writer = tf.summary.create_file_writer(d)` -> a real writer on rank 0, a no-op one elsewhere.
fn guard_summary_writer(rewrite: &mut ModuleRewrite, scope: &Scope, assign: &ast::StmtAssign) {
    let Expr::Call(call) = assign.value.as_ref() else {
        return;
    };
    let callee = scope
        .bindings
        .resolve(&call.func)
        .map(|callee| library::canonical_name(&callee));
    if callee.as_deref() == Some("tensorflow.summary.FileWriter") {
        // A TF1 writer writes its event file when made: rank 0's only; the
        // other ranks get None, and every write through it is guarded.
        let value = rewrite.expression_text(&assign.value);
        let replacement = format!("{value} if {} else None", rewrite.rank_zero_test());
        rewrite.edit(Edit::replacement(span(assign.value.as_ref()), replacement));
        return;
    }
    if callee.as_deref() != Some("tensorflow.summary.create_file_writer") {
        return;
    }
    let value = rewrite.expression_text(&assign.value);
    let replacement = format!(
        "{value} if {} else {}.summary.create_noop_writer()",
        rewrite.rank_zero_test(),
        rewrite.tf
    );
    rewrite.edit(Edit::replacement(span(assign.value.as_ref()), replacement));
}
