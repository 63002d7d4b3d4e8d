//! Different data per worker: a fixed seed (`tf.random.set_seed(22)`,
//! `np.random.seed(22)`, `random.seed(22)`, `shuffle(..., seed=22)`) makes
//! every worker draw the same order and noise, so N workers train on 1/N of
//! the distinct data. The seed is made to depend on `hvd.rank()`; the
//! initial weights then differ, and the broadcast makes them equal.
//!
//! Input: every call of every scope, and where the module runs `hvd.init()`.
//! Output: the seed edits with DST116, or DST117 where the seed runs before
//! `hvd.init()` and cannot ask for the rank.

use rustpython_parser::ast::{self, Expr};

use crate::analysis::walk::keyword;
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::edit::Edit;
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

pub const SEED_MADE_PER_RANK: Code = Code::new(
    "DST116",
    "seed-made-per-rank",
    Severity::Info,
    "A fixed seed now depends on the worker's rank, so that workers draw different data order and noise.",
);

pub const SEED_NOT_PER_RANK: Code = Code::new(
    "DST117",
    "seed-not-per-rank",
    Severity::Warning,
    "A fixed seed runs before `hvd.init()`, so every worker draws the same data order and noise.",
);

pub const CODES: &[Code] = &[SEED_MADE_PER_RANK, SEED_NOT_PER_RANK];

pub fn run(rewrite: &mut ModuleRewrite) {
    let Some(initialised_at) = rewrite.horovod_initialised_at else {
        // Code run inside another module's loop, after that module's init:
        // nothing here seeds the job.
        return;
    };
    let module = rewrite.module;
    for scope in &module.scopes {
        for site in &scope.facts.calls {
            let Some(seed) = seed_argument(rewrite, scope, site.call) else {
                continue;
            };
            if rewrite.calls_horovod(seed, "rank") || is_none(seed) {
                continue;
            }
            let runs_at_import = scope.function.is_none();
            if runs_at_import && span(site.statement).start < initialised_at {
                report_before_init(rewrite, site.call);
                continue;
            }
            make_per_rank(rewrite, site.call, seed);
        }
    }
}

/// The seed a call sets: the first argument of a seeding function, or the
/// `seed=` of a `shuffle(...)`.
fn seed_argument<'a>(
    rewrite: &ModuleRewrite,
    scope: &crate::analysis::training::Scope,
    call: &'a ast::ExprCall,
) -> Option<&'a Expr> {
    if let Expr::Attribute(attribute) = call.func.as_ref()
        && attribute.attr.as_str() == "shuffle"
    {
        return keyword(call, "seed").map(|keyword| &keyword.value);
    }
    // The catalogue's seeding calls take the seed first, or as `seed=`.
    if !rewrite
        .catalogued_effects(scope, call)
        .contains(&crate::analysis::catalogue::Effect::Seeds)
    {
        return None;
    }
    call.args
        .first()
        .or_else(|| keyword(call, "seed").map(|keyword| &keyword.value))
}

fn is_none(expr: &Expr) -> bool {
    matches!(
        expr,
        Expr::Constant(ast::ExprConstant {
            value: ast::Constant::None,
            ..
        })
    )
}

fn make_per_rank(rewrite: &mut ModuleRewrite, call: &ast::ExprCall, seed: &Expr) {
    let seed_text = rewrite.expression_text(seed);
    let rank = rewrite.horovod_call("rank");
    let replacement = format!("{seed_text} + {rank}");
    let message = format!(
        "the fixed seed `{seed_text}` is now `{replacement}`: with one seed every worker would draw the same data order and noise; the initial weights, which now differ, are made equal by the broadcast"
    );
    let edit = Edit::replacement(span(seed), replacement);
    rewrite.edit(edit);
    rewrite.diagnose(Diagnostic::new(SEED_MADE_PER_RANK, span(call), message));
}

fn report_before_init(rewrite: &mut ModuleRewrite, call: &ast::ExprCall) {
    let text = rewrite
        .expression_text(&Expr::Call(call.clone()))
        .to_string();
    let rank = rewrite.horovod_call("rank");
    rewrite.diagnose(
        Diagnostic::new(
            SEED_NOT_PER_RANK,
            span(call),
            format!("`{text}` runs before `hvd.init()`, so it cannot depend on the rank: every worker draws the same data order and noise"),
        )
        .with_suggestion(format!("move it below the imports and add `{rank}` to the seed")),
    );
}
