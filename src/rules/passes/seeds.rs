//! Different data per worker: a fixed seed (`tf.random.set_seed(22)`,
//! `np.random.seed(22)`, `random.seed(22)`, `shuffle(..., seed=22)`) makes
//! every worker draw the same order and noise, so N workers train on 1/N of
//! the distinct data. The seed is made to depend on `hvd.rank()`; the
//! initial weights then differ, and the broadcast makes them equal.
//!
//! Input: every call of every scope, and where the module runs `hvd.init()`.
//! Output: the seed edits with DST116, or DST117 where the seed runs before
//! `hvd.init()` and cannot ask for the rank.

use rustpython_parser::ast::{self, Expr, Stmt};

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

pub const SEED_KEPT_FOR_SHARDED_ORDER: Code = Code::new(
    "DST143",
    "seed-kept-for-sharded-order",
    Severity::Info,
    "TensorFlow's global seed stays the same on every worker: a sharded dataset draws its shuffle order from it, and shards of orders that differ would overlap.",
);

pub const SEED_KEPT_FOR_SHARED_DRAWS: Code = Code::new(
    "DST144",
    "seed-kept-for-shared-draws",
    Severity::Info,
    "A fixed seed that the program itself lets go of (`np.random.seed(None)` after a shuffle of the rows it splits) stays as written: the draws it governs are ones every worker must share, and each worker draws on its own after it.",
);

pub const CODES: &[Code] = &[
    SEED_MADE_PER_RANK,
    SEED_NOT_PER_RANK,
    SEED_KEPT_FOR_SHARDED_ORDER,
    SEED_KEPT_FOR_SHARED_DRAWS,
];

pub fn run(rewrite: &mut ModuleRewrite) {
    let Some(initialised_at) = rewrite.horovod_initialised_at else {
        // Code run inside another module's loop, after that module's init:
        // nothing here seeds the job.
        return;
    };
    // Every loop trains on the same full batch each step: nothing is drawn
    // that a seed per rank would make differ.
    if rewrite.full_batch_loops > 0 && rewrite.full_batch_loops == rewrite.loops_seen {
        return;
    }
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
            let split = match runs_at_import {
                true => split_drawn_after(rewrite, scope, site.call),
                false => split_drawn_in_preparation(rewrite, scope, site.call),
            };
            if let Some(split) = split {
                if !reseeded_after(rewrite, scope, site.call, &split) {
                    reseed_after_split(rewrite, site, seed, split);
                }
                continue;
            }
            if shuffle_order_cut_later(scope, site) {
                continue;
            }
            if let Some(released) = released_after(rewrite, scope, site) {
                let line = rewrite.module.module.source.line_label(released.start);
                rewrite.diagnose(Diagnostic::new(
                    SEED_KEPT_FOR_SHARED_DRAWS,
                    span(site.call),
                    format!("the fixed seed `{}` stays as written: the program lets go of it at {line} (a seed of `None`), so it only draws what comes before, which every worker must draw alike (the order of rows it splits), and each worker draws on its own after it", &rewrite.text[span(seed)]),
                ));
                continue;
            }
            // TensorFlow's seeds also set the initial weights.
            let seeds_weights = rewrite
                .callee(scope, &site.call.func)
                .is_some_and(|callee| callee.starts_with("tensorflow"));
            if seeds_weights && orders_a_sharded_source(rewrite, scope, site.call) {
                rewrite.diagnose(Diagnostic::new(
                    SEED_KEPT_FOR_SHARDED_ORDER,
                    span(site.call),
                    format!("the fixed seed `{}` stays the same on every worker: the dataset sharded by rank shuffles with a seed of its own, and TensorFlow draws that order from both seeds, so a seed per rank would give each worker its own order and the shards would overlap", &rewrite.text[span(seed)]),
                ));
                continue;
            }
            make_per_rank(rewrite, site.call, seed, seeds_weights);
        }
    }
    seed_unseeded_split(rewrite, initialised_at);
}

/// The same generator seeded again with `None` later in the scope, outside
/// loops (`np.random.seed(10101)`, `np.random.shuffle(lines)`,
/// `np.random.seed(None)`): where that release is.
fn released_after(
    rewrite: &ModuleRewrite,
    scope: &crate::analysis::training::Scope,
    site: &crate::analysis::index::CallSite,
) -> Option<std::ops::Range<usize>> {
    let seeder = rewrite.callee(scope, &site.call.func)?;
    scope
        .facts
        .calls
        .iter()
        .filter(|later| {
            later.enclosing_loops.is_empty() && span(later.call).start > span(site.call).end
        })
        .find(|later| {
            rewrite.callee(scope, &later.call.func).as_deref() == Some(seeder.as_str())
                && later.call.args.first().is_some_and(is_none)
        })
        .map(|later| span(later.call))
}

/// A call that seeds TensorFlow's global generator (`tf.random.set_seed(42)`,
/// not one op's `shuffle(..., seed=42)`), the last such call before a
/// sharded source that shuffles with a seed of its own: that source's
/// order is drawn from both seeds.
fn orders_a_sharded_source(
    rewrite: &ModuleRewrite,
    scope: &crate::analysis::training::Scope,
    call: &ast::ExprCall,
) -> bool {
    let seeds_globally = |scope, call| {
        rewrite
            .catalogued_effects(scope, call)
            .contains(&crate::analysis::catalogue::Effect::Seeds)
    };
    if !seeds_globally(scope, call) {
        return false;
    }
    let at = span(call).end;
    let module = rewrite.module;
    super::sharding::seeded_orders_sharded(rewrite)
        .iter()
        .any(|&source| {
            source >= at
                && !module.scopes.iter().any(|other| {
                    other.facts.calls.iter().any(|site| {
                        let between = span(site.call);
                        between.start >= at
                            && between.end <= source
                            && rewrite
                                .callee(other, &site.call.func)
                                .is_some_and(|callee| callee.starts_with("tensorflow"))
                            && seeds_globally(other, site.call)
                    })
                })
        })
}

/// A train/test split drawn at the top level, after `hvd.init()`, from a
/// random state nothing seeds (`train_idx = np.random.choice(...)`,
/// `train_test_split(x, y)`): every worker would hold out different rows. The
/// split gets a seed all workers share, and the generator is seeded by rank
/// right after it, so that the batches each worker draws still differ.
fn seed_unseeded_split(rewrite: &mut ModuleRewrite, initialised_at: usize) {
    let module = rewrite.module;
    let Some(UnseededSplit {
        scope,
        site,
        drawer: callee,
        through_helper,
    }) = unseeded_split(rewrite)
    else {
        return;
    };
    let generator = match callee.rsplit_once('.') {
        Some(("random", _)) => "random",
        _ => "numpy.random",
    };
    let seeded_anywhere = module.scopes.iter().any(|other| {
        other.facts.calls.iter().any(|call| {
            rewrite
                .callee(other, &call.call.func)
                .is_some_and(|seeder| seeder == format!("{generator}.seed"))
        })
    });
    let statement = span(site.statement);
    let before_init = scope.function.is_none() && statement.start < initialised_at;
    if seeded_anywhere || before_init || !rewrite.owns_its_lines(&statement) {
        return;
    }
    let line = rewrite.module.module.source.line_label(statement.start);
    let line = match through_helper {
        true => format!(
            "that `{}` draws, {line}",
            rewrite.expression_text(&site.call.func)
        ),
        false => line,
    };
    let rank = rewrite.horovod_call("rank");
    let keyed =
        callee.ends_with("train_test_split") || callee == crate::analysis::splits::FRAME_SAMPLE;
    if keyed && !through_helper {
        rewrite.add_keyword(site.call, "random_state", "0");
        let message = format!(
            "the train/test split ({line}) was drawn from an unseeded random state, so each worker would hold out different rows: it now takes `random_state=0`, the same on every worker (it no longer changes from run to run)"
        );
        rewrite.diagnose(Diagnostic::new(
            SEED_MADE_PER_RANK,
            span(site.call),
            message,
        ));
        return;
    }
    let module_name = generator.split('.').next().unwrap_or(generator);
    let Some(prefix) = module.module.bindings.name_for(module_name) else {
        return;
    };
    let seeder = match generator {
        "random" => format!("{prefix}.seed"),
        _ => format!("{prefix}.random.seed"),
    };
    rewrite.insert_before_statement(
        &statement,
        &[format!(
            "{seeder}(0)  # every worker draws the same train/test split"
        )],
    );
    rewrite.insert_after_statement(
        &statement,
        &[format!(
            "{seeder}({rank})  # each worker draws its own random numbers"
        )],
    );
    let message = format!(
        "the train/test split ({line}) was drawn from an unseeded random state, so each worker would hold out different rows: `{seeder}(0)` before it makes it the same on every worker (it no longer changes from run to run), and `{seeder}({rank})` after it gives each worker its own random numbers from then on (batches drawn at random, noise)"
    );
    rewrite.diagnose(Diagnostic::new(
        SEED_MADE_PER_RANK,
        span(site.call),
        message,
    ));
}

/// `ds = ds.shuffle(n, seed=3)` and later `train = ds.take(k)`, `val =
/// ds.skip(k)`: the seeded order draws a split of the stream, which must be
/// the same on every worker, so the seed is kept.
fn shuffle_order_cut_later(
    scope: &crate::analysis::training::Scope,
    site: &crate::analysis::index::CallSite,
) -> bool {
    let is_shuffle = matches!(site.call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "shuffle");
    let Stmt::Assign(assign) = site.statement else {
        return false;
    };
    let [Expr::Name(name)] = assign.targets.as_slice() else {
        return false;
    };
    is_shuffle
        && scope.facts.calls.iter().any(|later| {
            span(later.statement).start > span(site.statement).start
                && matches!(later.statement, Stmt::Assign(_))
                && matches!(later.call.func.as_ref(), Expr::Attribute(attribute)
                    if matches!(attribute.attr.as_str(), "take" | "skip")
                        && matches!(crate::analysis::walk::chain_root(&attribute.value), Expr::Name(root) if root.id == name.id))
        })
}

/// The generator a seeding call seeds, when it is NumPy's or Python's
/// global one (`numpy.random`, `random`).
fn python_generator_seeded(
    rewrite: &ModuleRewrite,
    scope: &crate::analysis::training::Scope,
    seeding: &ast::ExprCall,
) -> Option<String> {
    let seeder = rewrite.callee(scope, &seeding.func)?;
    let generator = seeder.strip_suffix(".seed")?;
    matches!(generator, "numpy.random" | "random").then(|| generator.to_string())
}

/// The last top-level statement, after the seeding call and before the
/// first training, that draws from the generator it seeds outside any loop
/// (`np.random.choice` of training rows, `train_test_split` with no
/// `random_state`): a split, which must be the same on every worker.
fn split_drawn_after(
    rewrite: &ModuleRewrite,
    scope: &crate::analysis::training::Scope,
    seeding: &ast::ExprCall,
) -> Option<std::ops::Range<usize>> {
    let generator = python_generator_seeded(rewrite, scope, seeding)?;
    let generator = generator.as_str();
    // Training starts at the first top-level loop after the seed (draws
    // after it are the training's own, or an evaluation's), and not before
    // the first top-level training site: a loop that reads a file before a
    // `fit` trains nothing. A session's site is where it is made, before
    // its loop.
    let seeded_at = span(seeding).end;
    let top_level_site = rewrite
        .module
        .sites
        .iter()
        .filter(|site| site.scope == 0 && site.range.start > seeded_at)
        .map(|site| site.range.start)
        .min();
    let first_loop = rewrite
        .module
        .module
        .body
        .iter()
        .filter(|statement| span(*statement).start > seeded_at)
        .filter(|statement| {
            !matches!(
                statement,
                Stmt::FunctionDef(_) | Stmt::AsyncFunctionDef(_) | Stmt::ClassDef(_)
            )
        })
        .find(|statement| {
            let mut loops = false;
            crate::analysis::walk::for_each_statement(
                std::slice::from_ref(*statement),
                false,
                &mut |inner| {
                    loops |= matches!(inner, Stmt::For(_) | Stmt::While(_) | Stmt::AsyncFor(_));
                },
            );
            loops
        })
        .map(|statement| span(statement).start);
    let first_training = match (top_level_site, first_loop) {
        (Some(site), Some(first_loop)) => site.max(first_loop),
        (site, first_loop) => site.or(first_loop)?,
    };
    last_draw_between(rewrite, scope, generator, seeded_at..first_training)
}

/// A function that prepares the data (no loop, no training site) and seeds
/// the generator before drawing from it (`np.random.seed(10)`, then
/// `np.random.permutation(...)` of the rows it splits): every draw it makes
/// is of what the workers must share. Returns where the last one is.
fn split_drawn_in_preparation(
    rewrite: &ModuleRewrite,
    scope: &crate::analysis::training::Scope,
    seeding: &ast::ExprCall,
) -> Option<std::ops::Range<usize>> {
    let generator = python_generator_seeded(rewrite, scope, seeding)?;
    let generator = generator.as_str();
    scope.function?;
    let index = rewrite.scope_index(scope)?;
    let trains = rewrite.module.sites.iter().any(|site| site.scope == index);
    let loops = scope
        .facts
        .calls
        .iter()
        .any(|site| !site.enclosing_loops.is_empty());
    // Called in a loop (`fetch_batch(epoch, i)` per step), it draws the
    // batches themselves, not data prepared once.
    let called_in_a_loop = rewrite
        .module
        .calls_named(scope.name())
        .into_iter()
        .any(|(_, site)| !site.enclosing_loops.is_empty());
    if trains || loops || called_in_a_loop {
        return None;
    }
    last_draw_between(rewrite, scope, generator, span(seeding).end..usize::MAX)
}

/// The last statement of the scope, outside loops and within `range`, that
/// draws from `generator` (or splits rows with it).
fn last_draw_between(
    rewrite: &ModuleRewrite,
    scope: &crate::analysis::training::Scope,
    generator: &str,
    range: std::ops::Range<usize>,
) -> Option<std::ops::Range<usize>> {
    scope
        .facts
        .calls
        .iter()
        .filter(|site| site.enclosing_loops.is_empty())
        .filter(|site| range.contains(&span(site.statement).start))
        .filter(|site| {
            let callee = rewrite.callee(scope, &site.call.func).unwrap_or_default();
            let draws = callee
                .strip_prefix(generator)
                .is_some_and(|function| function.starts_with('.') && function != ".seed");
            let splits = (callee.ends_with("train_test_split")
                && keyword(site.call, "random_state").is_none())
                || crate::analysis::splits::is_frame_sample(site.call);
            draws || (generator == "numpy.random" && splits)
        })
        .map(|site| span(site.statement))
        .max_by_key(|statement| statement.start)
}

/// Whether the same generator is seeded by rank after the split already
/// (a rewrite run again).
fn reseeded_after(
    rewrite: &ModuleRewrite,
    scope: &crate::analysis::training::Scope,
    seeding: &ast::ExprCall,
    split: &std::ops::Range<usize>,
) -> bool {
    let seeder = rewrite.callee(scope, &seeding.func);
    scope.facts.calls.iter().any(|site| {
        span(site.call).start > split.end
            && rewrite.callee(scope, &site.call.func) == seeder
            && site
                .call
                .args
                .iter()
                .any(|argument| rewrite.calls_horovod(argument, "rank"))
    })
}

/// A split drawn from an unseeded random state: where it is drawn (or
/// the helper call that draws it), and the drawing function.
struct UnseededSplit<'a> {
    scope: &'a crate::analysis::training::Scope<'a>,
    site: &'a crate::analysis::index::CallSite<'a>,
    drawer: String,
    through_helper: bool,
}

/// The first unseeded split the top level or a function that trains (run
/// once, as `main` is) draws, itself or through a package helper called
/// outside loops: its scope, call, the drawing function and whether a helper
/// draws it. A helper that splits, called once per fold, would draw the
/// same split each time under one seed: it is not looked into.
fn unseeded_split<'a>(rewrite: &ModuleRewrite<'a>) -> Option<UnseededSplit<'a>> {
    let module = rewrite.module;
    let training_scopes = || {
        module
            .scopes
            .iter()
            .enumerate()
            .filter(|(index, _)| module.is_top_level_or_trains(*index))
    };
    let drawn_here = training_scopes().find_map(|(_, scope)| {
        scope.facts.calls.iter().find_map(|site| {
            let callee = match rewrite.callee(scope, &site.call.func) {
                Some(callee) => callee,
                None if crate::analysis::splits::is_frame_sample(site.call) => {
                    crate::analysis::splits::FRAME_SAMPLE.to_string()
                }
                None => return None,
            };
            let split = crate::analysis::splits::draws_split(&callee, site, scope)
                && crate::analysis::splits::cuts_rows(&callee, site, scope);
            split.then_some(UnseededSplit {
                scope,
                site,
                drawer: callee,
                through_helper: false,
            })
        })
    });
    drawn_here.or_else(|| {
        training_scopes().find_map(|(index, scope)| {
            scope.facts.calls.iter().find_map(|site| {
                if !site.enclosing_loops.is_empty() {
                    return None;
                }
                let drawer = crate::analysis::splits::helper_drawing_split(
                    rewrite.analysis,
                    module,
                    index,
                    site.call,
                )?;
                Some(UnseededSplit {
                    scope,
                    site,
                    drawer,
                    through_helper: true,
                })
            })
        })
    })
}

/// Keeps the seed that draws the split, and seeds the generator again per
/// rank right after it: the split is the same on every worker, the batches
/// each draws afterwards differ.
fn reseed_after_split(
    rewrite: &mut ModuleRewrite,
    site: &crate::analysis::index::CallSite,
    seed: &Expr,
    split: std::ops::Range<usize>,
) {
    let call = site.call;
    let seed_text = rewrite.expression_text(seed);
    let rank = rewrite.horovod_call("rank");
    let call_text = rewrite.source(span(call));
    let seed_in_call = span(seed).start - span(call).start..span(seed).end - span(call).start;
    let reseed = format!(
        "{}{seed_text} + {rank}{}",
        &call_text[..seed_in_call.start],
        &call_text[seed_in_call.end..]
    );
    let split_line = rewrite.module.module.source.line_index.line_of(split.start) + 1;
    let message = format!(
        "the fixed seed `{seed_text}` also draws, at line {split_line} before training, what every worker must share (the data, or its train/test split): it is kept, and `{reseed}` after that makes the batches each worker draws differ; the initial weights, which may differ, are made equal by the broadcast"
    );
    rewrite.insert_after_statement(&split, &[reseed]);
    rewrite.diagnose(Diagnostic::new(SEED_MADE_PER_RANK, span(call), message));
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
    let effects = rewrite.catalogued_effects(scope, call);
    if let Some(argument) = effects.iter().find_map(|effect| match effect {
        crate::analysis::catalogue::Effect::SeedsWith { argument } => Some(argument),
        _ => None,
    }) {
        return argument.of(call);
    }
    // The catalogue's seeding calls take the seed first, or as `seed=`.
    if !effects.contains(&crate::analysis::catalogue::Effect::Seeds) {
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

/// `seeds_weights`: the seed also draws the initial weights (TensorFlow's).
fn make_per_rank(
    rewrite: &mut ModuleRewrite,
    call: &ast::ExprCall,
    seed: &Expr,
    seeds_weights: bool,
) {
    let seed_text = rewrite.expression_text(seed);
    let rank = rewrite.horovod_call("rank");
    // A seed computed anew for each batch (`epoch * n_batches + index`):
    // `+ rank` would give rank 1 the seed rank 0 takes at the next batch,
    // so each value is spread over the workers instead.
    let replacement = match seed {
        Expr::Constant(_) | Expr::Name(_) | Expr::Attribute(_) => format!("{seed_text} + {rank}"),
        _ => format!("({seed_text}) * {} + {rank}", rewrite.horovod_call("size")),
    };
    let draws = if rewrite.data_split_by_rank {
        "each worker now draws its own noise and order within its part of the data (which examples it reads is set by rank where the data is split)"
    } else {
        "with one seed every worker would draw the same random numbers (shuffle order, noise, an environment's episodes); data read in a fixed order is not made to differ by it"
    };
    let weights = if seeds_weights {
        "; the initial weights, which now differ, are made equal by the broadcast"
    } else {
        ""
    };
    let message = format!("the fixed seed `{seed_text}` is now `{replacement}`: {draws}{weights}");
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
