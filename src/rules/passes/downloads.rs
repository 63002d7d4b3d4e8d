//! Downloads run by every worker race on one cache file: rank 0 downloads
//! first, everyone waits for it, then every rank runs the line as written
//! and finds the file there. Which calls download, and whether a second
//! call skips what is there, is the catalogue's knowledge (`get_file`,
//! Keras dataset loaders, `tfds.load`, TF1's `read_data_sets`); a package
//! function whose summary downloads, and skips what is there, is treated
//! the same (`data = util.maybe_download(...)`). A download that does not
//! skip what is there (`urlretrieve`) runs on rank 0 only, when nothing
//! uses its result.
//!
//! Input: the statements of every scope, the catalogue and the effect
//! summaries. Output: per download, the rank-0 copy and the barrier, with
//! DST122.

use rustpython_parser::ast::{Expr, Stmt};

use crate::analysis::catalogue::Effect;
use crate::analysis::effects;
use crate::analysis::training::Scope;
use crate::analysis::training::effect_summaries;
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

pub const DOWNLOAD_ON_RANK_ZERO_FIRST: Code = Code::new(
    "DST122",
    "download-on-rank-zero-first",
    Severity::Info,
    "A download every worker would make at once is made by rank 0 first; the others wait, then find it there.",
);

pub const CODES: &[Code] = &[DOWNLOAD_ON_RANK_ZERO_FIRST];

/// What a statement's download does when it runs a second time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Download {
    /// Finds what the first call downloaded: rank 0 first, then everyone.
    SkipsWhatIsThere,
    /// A package function whose downloads and writes skip what is there.
    HelperSkipsWhatIsThere,
    /// A package function that only makes directories where there are none.
    HelperMakesDirectories,
    /// Such a function that also builds graph ops: called once per rank,
    /// rank 0's call first, the others' after a barrier.
    HelperBuildsGraphOps,
    /// Downloads again: rank 0 only.
    Again,
    /// `if not os.path.exists(path):` around a download: rank 0 alone
    /// takes the test.
    UnderItsTest,
}

pub fn run(rewrite: &mut ModuleRewrite) {
    if rewrite.had_horovod {
        // Code that already uses Horovod fetches its data as it chose
        // (Horovod's own examples use a path per rank).
        return;
    }
    let Some(initialised_at) = rewrite.horovod_initialised_at else {
        return;
    };
    let module = rewrite.module;
    for scope in &module.scopes {
        for statement in scope.facts.statements.iter().copied() {
            // Module code before Horovod is initialised, or before the
            // TensorFlow import the barrier needs, cannot wait for rank 0.
            let at_import = scope.function.is_none()
                && (span(statement).start < initialised_at
                    || !rewrite.tensorflow_bound_at(span(statement).start));
            if at_import {
                continue;
            }
            let download = match downloads(rewrite, scope, statement) {
                Some(download) => download,
                // `if not os.path.exists(path): urlretrieve(url, path)`: rank 0
                // runs the whole test, the others wait and find the file.
                None if downloads_under_its_test(rewrite, scope, statement) => {
                    Download::UnderItsTest
                }
                None => continue,
            };
            let guarded =
                rewrite.is_guarded(statement) || module.index.is_in_launcher(&span(statement));
            if guarded
                || already_done(rewrite, statement)
                || !rewrite.owns_its_lines(&span(statement))
            {
                continue;
            }
            let Some(barrier) = rewrite
                .plugin
                .download_barrier(&rewrite.context, "download_barrier")
            else {
                return;
            };
            // Right below the init block, the edit must land after it: it goes
            // with the core's edits, which keep the order they were made in.
            let previous_owner = match span(statement).start == initialised_at {
                true => Some(std::mem::replace(
                    &mut rewrite.sink.owner,
                    crate::rules::SINGLE_GPU_TRAINING,
                )),
                false => None,
            };
            match download {
                Download::SkipsWhatIsThere => {
                    let extracted_once = extract_on_rank_zero_only(rewrite, scope, statement);
                    download_on_rank_zero_first(
                        rewrite,
                        statement,
                        &barrier,
                        match extracted_once {
                            true => {
                                "downloads and extracts into storage every worker shares: rank 0 now downloads and extracts first, the others wait for it, and their own call no longer extracts the archive again over the files being read (`extract=False`; it returns the same path)"
                            }
                            false => {
                                "downloads into storage every worker shares: rank 0 now downloads first and the others wait for it"
                            }
                        },
                    )
                }
                Download::HelperSkipsWhatIsThere => download_on_rank_zero_first(
                    rewrite,
                    statement,
                    &barrier,
                    "downloads or writes files every worker shares, skipping those already there: rank 0 now calls it first and the others wait for it",
                ),
                Download::HelperMakesDirectories => made_on_rank_zero_first(
                    rewrite,
                    statement,
                    &barrier,
                    "makes directories every worker shares, only where there are none: rank 0 now calls it first and the others wait for it, then find them there",
                    "rank 0 has made them; the others find them there",
                ),
                Download::HelperBuildsGraphOps => download_in_turn(rewrite, statement, &barrier),
                // Only a statement whose result nobody uses can run on rank 0 alone.
                Download::UnderItsTest => {
                    download_under_test_on_rank_zero(rewrite, statement, &barrier)
                }
                Download::Again if matches!(statement, Stmt::Expr(_)) => {
                    download_on_rank_zero_only(rewrite, statement, &barrier);
                }
                Download::Again => {}
            }
            if let Some(owner) = previous_owner {
                rewrite.sink.owner = owner;
            }
        }
    }
}

/// A statement whose value is a call that downloads into shared storage.
fn downloads(rewrite: &ModuleRewrite, scope: &Scope, statement: &Stmt) -> Option<Download> {
    let value = match statement {
        Stmt::Expr(expression) => expression.value.as_ref(),
        Stmt::Assign(assign) => assign.value.as_ref(),
        _ => return None,
    };
    let call = called(value)?;
    // A per-rank path (`load_data(path="mnist-%d.npz" % hvd.rank())`) races with nobody.
    if rewrite.calls_horovod(value, "rank") {
        return None;
    }
    catalogued_download(rewrite, scope, statement, call)
        .or_else(|| through_package_function(rewrite, scope, call, 0))
}

/// A cached download that unpacks its archive each time it is called
/// (`get_file(..., extract=True)`): the call every rank makes after rank
/// 0's gets `extract=False`, so that no rank unpacks over files another is
/// reading. Keras 2's `get_file` returns the archive's path either way (the
/// Keras 3 one returns the folder it unpacked into, so a module not known
/// to run Keras 2 keeps its call). Whether the rewrite edited the call.
fn extract_on_rank_zero_only(rewrite: &mut ModuleRewrite, scope: &Scope, statement: &Stmt) -> bool {
    let value = match statement {
        Stmt::Expr(expression) => expression.value.as_ref(),
        Stmt::Assign(assign) => assign.value.as_ref(),
        _ => return false,
    };
    let Some(call) = called(value) else {
        return false;
    };
    let extracts = rewrite
        .catalogued_effects(scope, call)
        .iter()
        .any(|effect| {
            matches!(effect, Effect::Downloads { extracts_when: Some(condition), .. }
            if condition.on(call) == crate::analysis::catalogue::Certainty::Holds)
        });
    let Some(keyword) = crate::analysis::walk::keyword(call, "extract") else {
        return false;
    };
    let keras_two = crate::rules::keras_runtime::known_generation(rewrite)
        == Some(crate::rules::keras_runtime::Generation::Two);
    if !extracts || !keras_two {
        return false;
    }
    rewrite.edit(crate::python::edit::Edit::replacement(
        span(&keyword.value),
        "False",
    ));
    true
}

/// An `if` that tests for a file and downloads it in its body (`if not
/// os.path.exists(path): urlretrieve(url, path)`), binding nothing that is
/// read after it: rank 0 alone can run it whole.
fn downloads_under_its_test(rewrite: &ModuleRewrite, scope: &Scope, statement: &Stmt) -> bool {
    let Stmt::If(node) = statement else {
        return false;
    };
    // In a function, its callers wait for rank 0's call of it instead.
    if scope.function.is_some()
        || !effect_summaries::tests_for_files(&node.test)
        || rewrite.calls_horovod_in(&node.body)
    {
        return false;
    }
    // The others take the `else` at once: it may only say something.
    let only_says = node.orelse.iter().all(|inner| {
        matches!(inner, Stmt::Expr(expression) if matches!(expression.value.as_ref(),
            Expr::Call(call) if crate::analysis::walk::dotted_name(&call.func).as_deref() == Some("print")))
            || matches!(inner, Stmt::Pass(_))
    });
    if !only_says {
        return false;
    }
    let mut downloads = false;
    let mut bound = Vec::new();
    crate::analysis::walk::for_each_statement(
        std::slice::from_ref(statement),
        false,
        &mut |inner| {
            if let Stmt::Assign(assign) = inner {
                for target in &assign.targets {
                    crate::analysis::walk::walk_expression(target, &mut |name| {
                        if let Expr::Name(name) = name {
                            bound.push(name.id.to_string());
                        }
                    });
                }
            }
            let value = match inner {
                Stmt::Expr(expression) => expression.value.as_ref(),
                Stmt::Assign(assign) => assign.value.as_ref(),
                _ => return,
            };
            downloads |= called(value).is_some_and(|call| {
                rewrite
                    .catalogued_effects(scope, call)
                    .iter()
                    .any(|effect| {
                        matches!(effect, Effect::Downloads { .. })
                            && effect_summaries::happens_on_storage(effect, call)
                    })
            });
        },
    );
    let end = span(statement).end;
    let read_after = scope.facts.statements.iter().any(|later| {
        span(*later).start >= end && {
            let mut reads = false;
            crate::analysis::walk::walk_statement_expressions(later, &mut |expr| {
                reads |= matches!(expr, Expr::Name(name)
                    if name.ctx == rustpython_parser::ast::ExprContext::Load
                        && bound.iter().any(|known| known == name.id.as_str()));
            });
            reads
        }
    });
    downloads && !read_after
}

/// How deep `fixed_inside` follows helpers calling helpers (and stops on
/// recursion).
const HELPER_DEPTH: usize = 4;

/// A catalogued download the pass makes safe where it is. One under a test
/// that the file is not there yet (`if not os.path.exists(path):`) is not:
/// the others have passed the test already; the caller of its function
/// waits for rank 0 instead.
fn catalogued_download(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    statement: &Stmt,
    call: &rustpython_parser::ast::ExprCall,
) -> Option<Download> {
    let download = rewrite
        .catalogued_effects(scope, call)
        .iter()
        // `ResNet50V2(weights=None)` downloads nothing.
        .filter(|effect| effect_summaries::happens_on_storage(effect, call))
        .find_map(|effect| match effect {
            Effect::Downloads { cached, .. } => Some(if *cached {
                Download::SkipsWhatIsThere
            } else {
                Download::Again
            }),
            _ => None,
        })?;
    let under_file_test = effect_summaries::under_file_test(scope.body, &span(statement));
    (!under_file_test).then_some(download)
}

/// A package function that downloads, trains nothing, and skips what is
/// there in everything it writes: rank 0 calls it first. Not one of this
/// module whose downloads are made safe inside it.
fn through_package_function(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    call: &rustpython_parser::ast::ExprCall,
    depth: usize,
) -> Option<Download> {
    let analysis = rewrite.analysis;
    let index = rewrite.scope_index(scope)?;
    let callee = effects::resolved_callee(analysis, rewrite.module, index, &call.func)?;
    let callee = effects::function_called(analysis, &callee);
    let fixed_inside = rewrite
        .module
        .scopes
        .iter()
        .filter(|candidate| candidate.qualified_name == callee)
        .any(|function| {
            function.facts.statements.iter().any(|inner| {
                let value = match inner {
                    Stmt::Expr(expression) => expression.value.as_ref(),
                    Stmt::Assign(assign) => assign.value.as_ref(),
                    _ => return false,
                };
                // A download made safe inside: catalogued, or a call of a
                // helper of its own that this pass makes rank 0 call first.
                called(value).is_some_and(|inner_call| {
                    catalogued_download(rewrite, function, inner, inner_call).is_some()
                        || (depth < HELPER_DEPTH
                            && !rewrite.calls_horovod(value, "rank")
                            && through_package_function(rewrite, function, inner_call, depth + 1)
                                .is_some())
                })
            })
        });
    if fixed_inside {
        return None;
    }
    let reached = analysis.effects.every_rank.get(&callee)?;
    // Run twice on rank 0, a function that trains would train twice (and,
    // rank 0 first, wait alone in its allreduces); one that builds
    // TensorFlow ops in a graph would build them twice: it is called in turn.
    let trains = analysis
        .functions
        .get(&callee)
        .is_some_and(|summary| !summary.reaches.is_empty());
    let builds_graph_ops =
        rewrite.plugin.runs_in_a_session() && analysis.effects.builds_tensorflow.contains(&callee);
    // Its downloads and writes all skip what is there: a second call
    // finds rank 0's files (`get_resized_image` saving a resized copy once).
    // A function of this module gets its writes guarded inside it (with
    // barriers there): only its downloads make its callers wait.
    let own_module = callee.starts_with(&format!("{}.", rewrite.module.module.name));
    if analysis.effects.opaque.contains(&callee) {
        return None;
    }
    // A directory made only where there is none (`if not os.path.exists(d):
    // os.makedirs(d)`) is there for the others once rank 0 has made it.
    let skips = reached.iter().any(|effect| {
        matches!(
            effect.effect,
            Effect::Downloads { .. } | Effect::Writes { .. } | Effect::CreatesDirectory { .. }
        )
    }) && reached.iter().all(|effect| {
        // A removal under the same test (an archive deleted once unpacked)
        // runs only in the call that downloads.
        effect.skips_what_is_there
            && (!own_module || matches!(effect.effect, Effect::Downloads { .. }))
    });
    let only_directories = reached
        .iter()
        .all(|effect| matches!(effect.effect, Effect::CreatesDirectory { .. }));
    match (skips && !trains, builds_graph_ops) {
        (false, _) => None,
        (true, false) if only_directories => Some(Download::HelperMakesDirectories),
        (true, false) => Some(Download::HelperSkipsWhatIsThere),
        (true, true) => Some(Download::HelperBuildsGraphOps),
    }
}

/// The call a value is taken from: `f(x)`, `f(x)[0]`, `f(x).attribute`.
fn called(value: &Expr) -> Option<&rustpython_parser::ast::ExprCall> {
    match value {
        Expr::Call(call) => Some(call),
        Expr::Subscript(subscript) => called(&subscript.value),
        Expr::Attribute(attribute) => called(&attribute.value),
        _ => None,
    }
}

/// The barrier an earlier run added ends on the line before.
fn already_done(rewrite: &ModuleRewrite, statement: &Stmt) -> bool {
    let start = span(statement).start;
    rewrite
        .named_barriers("download_barrier")
        .iter()
        .any(|barrier| {
            barrier.end <= start
                && rewrite.text[barrier.end..start].lines().all(|line| {
                    let line = line.trim();
                    line.is_empty() || line.starts_with('#')
                })
        })
}

pub(super) fn download_on_rank_zero_first(
    rewrite: &mut ModuleRewrite,
    statement: &Stmt,
    barrier: &[String],
    what: &str,
) {
    made_on_rank_zero_first(
        rewrite,
        statement,
        barrier,
        what,
        "rank 0 has downloaded it; the others find it there",
    );
}

/// Rank 0 runs the statement first, then the barrier says `done` where the
/// others wait; then every rank runs it, finding what rank 0 made.
fn made_on_rank_zero_first(
    rewrite: &mut ModuleRewrite,
    statement: &Stmt,
    barrier: &[String],
    what: &str,
    done: &str,
) {
    let text = rewrite.source(span(statement)).to_string();
    let unit = rewrite.stylist.unit_before(&text).to_string();
    // The statement's text starts at its keyword; its other lines carry the
    // indentation of the block holding it, which the copy must not add twice.
    let own_indentation =
        crate::python::source::indentation_at(rewrite.text, span(statement).start).to_string();
    let mut lines = vec![format!("if {}:", rewrite.rank_zero_test())];
    lines.extend(text.lines().enumerate().map(|(index, line)| {
        let line = match index {
            0 => line,
            _ => line.strip_prefix(own_indentation.as_str()).unwrap_or(line),
        };
        match line.trim().is_empty() {
            true => String::new(),
            false => format!("{unit}{line}"),
        }
    }));
    lines.extend(with_comment(barrier, done));
    rewrite.insert_before_statement(&span(statement), &lines);
    let first_line = said(&text);
    rewrite.diagnose(Diagnostic::new(
        DOWNLOAD_ON_RANK_ZERO_FIRST,
        span(statement),
        format!("`{first_line}` {what}"),
    ));
}

/// Rank 0 runs the statement while the others wait at a barrier; its
/// barrier after the statement releases them to run it, finding its files.
fn download_in_turn(rewrite: &mut ModuleRewrite, statement: &Stmt, barrier: &[String]) {
    let unit = rewrite.stylist.indent_unit.clone();
    let indented = |why: &str| -> Vec<String> {
        with_comment(barrier, why)
            .into_iter()
            .map(|line| format!("{unit}{line}"))
            .collect()
    };
    let rank = rewrite.horovod_call("rank");
    let mut before = vec![format!("if {rank} != 0:")];
    before.extend(indented("wait for rank 0's download"));
    let mut after = vec![format!("if {rank} == 0:")];
    after.extend(indented(
        "rank 0 has downloaded it; the others find it there",
    ));
    rewrite.insert_before_statement(&span(statement), &before);
    rewrite.insert_after_statement(&span(statement), &after);
    let text = rewrite.source(span(statement));
    let first_line = said(text);
    rewrite.diagnose(Diagnostic::new(
        DOWNLOAD_ON_RANK_ZERO_FIRST,
        span(statement),
        format!("`{first_line}` downloads or writes files every worker shares, skipping those already there, and builds graph ops: rank 0 calls it first while the others wait, then each calls it once"),
    ));
}

/// `if rank == 0 and not os.path.exists(path):`: rank 0 alone tests and
/// downloads; the barrier after the `if` releases the others.
fn download_under_test_on_rank_zero(
    rewrite: &mut ModuleRewrite,
    statement: &Stmt,
    barrier: &[String],
) {
    let Stmt::If(node) = statement else {
        return;
    };
    let test = rewrite.source(span(node.test.as_ref())).to_string();
    let guarded = format!("{} and ({test})", rewrite.rank_zero_test());
    rewrite.edit(crate::python::edit::Edit::replacement(
        span(node.test.as_ref()),
        guarded,
    ));
    let lines = with_comment(barrier, "rank 0 has downloaded it");
    rewrite.insert_after_statement(&span(statement), &lines);
    let first_line = said(rewrite.source(span(statement)));
    rewrite.diagnose(Diagnostic::new(
        DOWNLOAD_ON_RANK_ZERO_FIRST,
        span(statement),
        format!("`{first_line}` downloads what is missing: rank 0 alone now tests and downloads, and the others wait for it"),
    ));
}

fn download_on_rank_zero_only(rewrite: &mut ModuleRewrite, statement: &Stmt, barrier: &[String]) {
    rewrite.guard_statements(&[statement]);
    let lines = with_comment(barrier, "rank 0 has downloaded it");
    rewrite.insert_after_statement(&span(statement), &lines);
    let text = rewrite.source(span(statement));
    let first_line = said(text);
    rewrite.diagnose(Diagnostic::new(
        DOWNLOAD_ON_RANK_ZERO_FIRST,
        span(statement),
        format!("`{first_line}` downloads again whenever it runs: rank 0 now downloads alone and the others wait for it"),
    ));
}

/// The barrier's lines, the last one with a comment saying why.
fn with_comment(barrier: &[String], why: &str) -> Vec<String> {
    let mut lines = barrier.to_vec();
    if let Some(last) = lines.last_mut() {
        last.push_str(&format!("  # {why}"));
    }
    lines
}

/// A statement as a message quotes it: on one line (a call whose arguments
/// span lines keeps them), cut short when long.
fn said(text: &str) -> String {
    const LONGEST: usize = 100;
    // A block (`if not os.path.exists(p):`) is named by its header.
    let first = text.lines().next().unwrap_or_default();
    if first.trim_end().ends_with(':') {
        return first.trim_end().to_string();
    }
    let one_line = text
        .replace("\\\n", " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace("( ", "(")
        .replace(" )", ")")
        .replace("[ ", "[");
    match one_line.char_indices().nth(LONGEST) {
        Some((cut, _)) => format!("{} ...", &one_line[..cut]),
        None => one_line,
    }
}
