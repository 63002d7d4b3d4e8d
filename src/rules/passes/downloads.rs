//! Downloads run by every worker race on one cache file (`get_file`, Keras
//! dataset loaders, `urlretrieve`): rank 0 downloads first, everyone waits
//! for it, then every rank runs the line as written and finds the file in the
//! cache.
//!
//! Input: the statements of every scope, and the pattern's barrier. Output:
//! per download, the rank-0 copy and the barrier before it, with DST122.

use rustpython_parser::ast::{Expr, Stmt};

use crate::analysis::library;
use crate::analysis::training::Scope;
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

pub const DOWNLOAD_ON_RANK_ZERO_FIRST: Code = Code::new(
    "DST122",
    "download-on-rank-zero-first",
    Severity::Info,
    "A download every worker would make at once is made by rank 0 first; the others wait, then find it cached.",
);

pub const CODES: &[Code] = &[DOWNLOAD_ON_RANK_ZERO_FIRST];

pub fn run(rewrite: &mut ModuleRewrite) {
    if rewrite.had_horovod {
        // Code that already uses Horovod fetches its data as it chose
        // (Horovod's own examples use a path per rank).
        return;
    }
    let Some(barrier) = rewrite
        .plugin
        .eager_barrier(&rewrite.context, "download_barrier")
    else {
        return;
    };
    let Some(initialised_at) = rewrite.horovod_initialised_at else {
        return;
    };
    let module = rewrite.module;
    for scope in &module.scopes {
        for statement in scope.facts.statements.iter().copied() {
            let at_import = scope.function.is_none() && span(statement).start < initialised_at;
            if at_import || !downloads(rewrite, scope, statement) {
                continue;
            }
            let guarded =
                rewrite.is_guarded(statement) || module.index.is_in_launcher(&span(statement));
            if guarded
                || already_done(rewrite, statement)
                || !rewrite.owns_its_lines(&span(statement))
            {
                continue;
            }
            download_on_rank_zero_first(rewrite, statement, &barrier);
        }
    }
}

/// A statement whose value is a call that downloads into a shared cache.
fn downloads(rewrite: &ModuleRewrite, scope: &Scope, statement: &Stmt) -> bool {
    let value = match statement {
        Stmt::Expr(expression) => expression.value.as_ref(),
        Stmt::Assign(assign) => assign.value.as_ref(),
        _ => return false,
    };
    let Expr::Call(call) = value else {
        return false;
    };
    // A per-rank path (`load_data(path="mnist-%d.npz" % hvd.rank())`) races with nobody.
    if rewrite.calls_horovod(value, "rank") {
        return false;
    }
    let Some(callee) = rewrite.callee(scope, &call.func) else {
        return false;
    };
    let callee = library::canonical_name(&callee);
    matches!(
        callee.as_str(),
        "tensorflow.keras.utils.get_file" | "urllib.request.urlretrieve"
    ) || (callee.starts_with("tensorflow.keras.datasets.") && callee.ends_with(".load_data"))
}

/// The line before is the barrier an earlier run added.
fn already_done(rewrite: &ModuleRewrite, statement: &Stmt) -> bool {
    let before = rewrite.text[..span(statement).start].trim_end();
    before
        .rsplit('\n')
        .next()
        .is_some_and(|line| line.contains("download_barrier"))
}

fn download_on_rank_zero_first(rewrite: &mut ModuleRewrite, statement: &Stmt, barrier: &str) {
    let text = rewrite.source(span(statement)).to_string();
    let unit = rewrite.stylist.indent_unit.clone();
    let lines = [
        format!("if {}:", rewrite.rank_zero_test()),
        format!("{unit}{text}"),
        format!("{barrier}  # rank 0 has downloaded it; the others find it cached"),
    ];
    rewrite.insert_before_statement(&span(statement), &lines);
    let first_line = text.lines().next().unwrap_or_default().to_string();
    rewrite.diagnose(Diagnostic::new(
        DOWNLOAD_ON_RANK_ZERO_FIRST,
        span(statement),
        format!("`{first_line}` downloads into a cache every worker shares: rank 0 now downloads first and the others wait for it"),
    ));
}
