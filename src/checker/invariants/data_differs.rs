//! ## Invariant 6: workers see different data
//!
//! A worker that runs 1/N of the steps on the same batches as every other
//! worker averages N copies of one gradient: the job trains on 1/N of the
//! data. Each worker must draw its own: a shard of the example stream, a
//! random order that differs per process (an unseeded shuffle, or a seed that
//! depends on `hvd.rank()`), or a cursor that depends on the rank.
//!
//! **Proven** when the data is sharded, or when the program draws at random
//! with no fixed seed or with a per-rank one. **Violated** when the work is
//! divided and the only data is an in-memory `tf.data` stream that nothing
//! in the module shuffles or draws at random. **Unknown** when the work is
//! divided but the checker sees nothing that makes the batches differ (a
//! deterministic cursor, a fixed seed, a source it cannot read).

use rustpython_parser::ast::{Expr, Operator, Stmt};

mod sources;

use super::facts::SplitFacts;
use crate::analysis::walk::{loop_header, walk_expression, walk_statement_expressions};
use crate::analysis::{cursors, splits};
use crate::checker::program::ScopedCall;
use crate::checker::{Decision, Invariant, Program, Verdict};
use crate::diagnostics::{Code, Severity};
use crate::python::parse::span;
use sources::{environment_stepped_in, fixed_order_generator, released_later, releases};

pub const DATA_DIFFERS: Code = Code::new(
    "DST306",
    "data-differs-per-worker",
    Severity::Error,
    "Each worker trains on its own data: a shard, a per-process random order, or a rank-dependent cursor.",
);

pub struct DataDiffers;

impl Invariant for DataDiffers {
    fn code(&self) -> Code {
        DATA_DIFFERS
    }

    fn check(&self, program: &Program) -> Vec<Decision> {
        if !program.uses_horovod() {
            return Vec::new();
        }
        let facts = SplitFacts::of(program);
        let calls = program.calls();
        let per_rank_seed = calls
            .iter()
            .find(|call| is_seeding(program, call) && seeds_by_rank(program, call));
        // A seed after the split in its own scope draws no part of it (the
        // split is outside loops); a seed in another function may run
        // before it: it counts.
        let before = |seed: &ScopedCall, split: &ScopedCall| {
            seeds_generator_of(seed, split)
                && ((seed.scope_index != 0 && seed.scope_index != split.scope_index)
                    || seed.range().start < split.range().start)
        };
        // A split a package helper draws, read as drawn where it is called.
        let helper_split = calls.iter().find_map(|call| {
            if !call.site.enclosing_loops.is_empty() {
                return None;
            }
            let drawer = splits::helper_drawing_split(
                program.analysis,
                program.module,
                call.scope_index,
                call.site.call,
            )?;
            Some(ScopedCall {
                scope: call.scope,
                scope_index: call.scope_index,
                site: call.site,
                callee: Some(drawer),
            })
        });
        // Indices drawn only to show a sample hold nothing out.
        let split = sliced_split(calls).or(helper_split.as_ref());
        let per_rank_before_split = split.and_then(|split| {
            calls
                .iter()
                .find(|call| {
                    is_seeding(program, call) && seeds_by_rank(program, call) && before(call, split)
                })
                .map(|seed| (seed, split))
        });
        if let Some((seed, split)) = per_rank_before_split {
            return vec![Decision::new(
                DATA_DIFFERS,
                Verdict::Unknown,
                split.range(),
                format!(
                    "the seed made per rank at line {} also draws the train/test split at line {}: each worker holds out different rows, so some train on another's test data",
                    program.line(seed.range().start),
                    program.line(split.range().start)
                ),
            )
            .with_suggestion("give the split its own fixed seed (`random_state=...`) or make it before the per-rank seed")];
        }
        let seeded_before = |split: &ScopedCall| {
            calls
                .iter()
                .any(|call| is_seeding(program, call) && before(call, split))
        };
        if let Some(split) = sliced_split(calls).or(helper_split.as_ref())
            && !seeded_before(split)
        {
            return vec![Decision::new(
                DATA_DIFFERS,
                Verdict::Unknown,
                split.range(),
                format!(
                    "the train/test split at line {} is drawn from an unseeded random state on every worker: each holds out different rows, so some train on another's test data",
                    program.line(split.range().start)
                ),
            )
            .with_suggestion("give the split a fixed seed (`np.random.seed(...)` before it, or `random_state=...`) so that every worker holds out the same rows")];
        }
        if let Some((shard, windows)) = shard_before_windows(program) {
            return vec![Decision::new(
                DATA_DIFFERS,
                Verdict::Violated,
                shard.clone(),
                format!("the shard at line {} takes every N-th time step of a series that line {} cuts into windows after it: each worker's windows span N times the intended time", program.line(shard.start), program.line(windows.start)),
            )
            .with_suggestion("shard the windows, each one example, right after `.window(...)`")];
        }
        if let Some((shuffled, by_global_seed)) = shard_of_shuffled_stream(program) {
            let message = match by_global_seed {
                Some(seed) => format!(
                    "the shard at line {} takes every N-th element of a stream shuffled before it with a seed of its own, but TensorFlow draws that order from the global seed too, which line {} makes differ by rank: each worker shuffles its own order, so the shards overlap and some data is never seen",
                    program.line(shuffled.start),
                    program.line(seed.start)
                ),
                None => format!(
                    "the shard at line {} takes every N-th element of a stream shuffled before it with no fixed seed: each worker shuffles its own order, so the shards overlap and some data is never seen",
                    program.line(shuffled.start)
                ),
            };
            return vec![Decision::new(
                DATA_DIFFERS,
                Verdict::Unknown,
                shuffled.clone(),
                message,
            )
            .with_suggestion("shard right after the source, before any `shuffle`, or give that shuffle a seed every worker shares (and a global seed that is the same on every worker)")];
        }
        if let Some(shard) = facts.shards.first() {
            return vec![Decision::new(
                DATA_DIFFERS,
                Verdict::Proven,
                shard.clone(),
                "the data is sharded by rank",
            )];
        }
        if let Some(share) = facts.shares.first() {
            return vec![Decision::new(
                DATA_DIFFERS,
                Verdict::Proven,
                share.clone(),
                "each worker walks its own share of the batch cursor's positions, from its rank",
            )];
        }
        let Some(divided) = facts.divisions.first() else {
            return Vec::new();
        };
        if let Some(offset) = rank_strided_offset(program) {
            return vec![Decision::new(
                DATA_DIFFERS,
                Verdict::Proven,
                offset.clone(),
                format!(
                    "each worker's cursor (line {}) counts the job's steps from its own rank",
                    program.line(offset.start)
                ),
            )];
        }
        let fixed_seed = calls.iter().find(|call| {
            is_seeding(program, call)
                && !seeds_by_rank(program, call)
                && !released_later(calls, call)
                && !releases(call)
        });
        let line = program.line(divided.start);
        if let Some(cursor) = deterministic_cursor(program, &facts.divisions) {
            return vec![Decision::new(
                DATA_DIFFERS,
                Verdict::Unknown,
                cursor.clone(),
                format!("the steps are divided at line {line}, but the batches are cut at a cursor (line {}) that walks the data in the same order on every worker: each trains on the same batches", program.line(cursor.start)),
            )
            .with_suggestion("start each worker's cursor at its own offset (`hvd.rank() * batch_size`) and advance it by `hvd.size()` batches, or shard the data by rank")];
        }
        if let Some((fit, generator)) = fixed_order_generator(program, calls) {
            return vec![Decision::new(
                DATA_DIFFERS,
                Verdict::Unknown,
                fit,
                format!("the steps are divided at line {line}, but the batches come from `{generator}`, a generator of the program that yields them in a fixed order with no rank in it: each worker trains on the same batches"),
            )
            .with_suggestion("start each worker's generator at its own batch (`hvd.rank()`) and step it by `hvd.size()` batches, or shuffle the batches it yields")];
        }
        if let Some(step) = environment_stepped_in(program, &facts.divisions) {
            let line = program.line(step.start);
            return vec![match (fixed_seed, per_rank_seed) {
                (Some(seed), None) => Decision::new(
                    DATA_DIFFERS,
                    Verdict::Unknown,
                    span(seed.site.call),
                    format!("the episodes the divided loop plays (environment stepped at line {line}) are drawn from a seed fixed at line {}: every worker may play the same ones", program.line(span(seed.site.call).start)),
                )
                .with_suggestion("add `hvd.rank()` to the seeds of the environment and of the random draws"),
                _ => Decision::new(
                    DATA_DIFFERS,
                    Verdict::Proven,
                    step,
                    format!("each worker plays its own episodes of its environment (stepped at line {line}), drawn from its own random state"),
                ),
            }];
        }
        let random_source = calls
            .iter()
            .find(|call| draws_at_random(program, call))
            .map(|call| (call, None))
            .or_else(|| {
                calls.iter().find_map(|call| {
                    helper_drawing_batches(program, call).map(|helper| (call, Some(helper)))
                })
            });
        match (random_source, fixed_seed, per_rank_seed) {
            (Some((source, helper)), None, _) | (Some((source, helper)), _, Some(_)) => vec![Decision::new(
                DATA_DIFFERS,
                Verdict::Proven,
                source.range(),
                match helper {
                    None => format!("each worker draws its own random order (line {})", program.line(source.range().start)),
                    Some(helper) => format!("each worker draws its own batches at random: `{helper}`, called at line {}, draws them from the process's random state", program.line(source.range().start)),
                },
            )],
            (Some(_), Some(seed), None) => vec![Decision::new(
                DATA_DIFFERS,
                Verdict::Unknown,
                span(seed.site.call),
                format!("the seed fixed at line {} gives every worker the same random order, so each may train on the same batches", program.line(span(seed.site.call).start)),
            ).with_suggestion("add `hvd.rank()` to the seed, or shard the data by rank")],
            (None, _, _) => vec![Decision::new(
                DATA_DIFFERS,
                // A stream of in-memory tensors with nothing random anywhere
                // in the module is provably the same on every worker.
                if deterministic_stream(calls) { Verdict::Violated } else { Verdict::Unknown },
                divided.clone(),
                format!("the steps are divided at line {line}, but nothing the checker sees makes the workers' batches differ (no shard, no shuffle, no per-rank seed or cursor): each may train on the same data"),
            ).with_suggestion("shard the data with `.shard(hvd.size(), hvd.rank())`, shuffle it without a fixed seed, or start each worker's cursor at its rank")],
        }
    }
}

/// A cut of the data at a cursor the program advances itself, with no rank
/// in it: a `global` index or an attribute of `self` a function advances
/// (`data[data_index:...]`), a name a divided loop advances itself, or an
/// offset computed from the step (`offset = (step * batch) % n`).
fn deterministic_cursor(
    program: &Program,
    divisions: &[std::ops::Range<usize>],
) -> Option<std::ops::Range<usize>> {
    let in_header = |statement: &Stmt, division: &std::ops::Range<usize>| {
        loop_header(statement)
            .is_some_and(|header| header.start <= division.start && division.end <= header.end)
    };
    let divided_loops: Vec<&Stmt> = program
        .module
        .scopes
        .iter()
        .flat_map(|scope| scope.facts.statements.iter().copied())
        .filter(|statement| {
            divisions
                .iter()
                .any(|division| in_header(statement, division))
        })
        .collect();
    // A cursor kept in state cuts the batches of the loops that call it;
    // a step count divided elsewhere (`fit_generator(gen, steps // N)`)
    // may draw from any of them.
    let every_division_in_a_loop = divisions.iter().all(|division| {
        divided_loops
            .iter()
            .any(|statement| in_header(statement, division))
    });
    let state_cursor = match every_division_in_a_loop {
        true => divided_loops
            .iter()
            .find_map(|statement| cursors::state_cursor_of_loop(program.module, statement)),
        false => cursors::state_cursor(program.module),
    };
    if let Some(cursor) = state_cursor {
        return Some(cursor.cut);
    }
    let divided_loop_cursor = divided_loops
        .iter()
        .find_map(|statement| cursors::loop_cursor(statement));
    if let Some(cursor) = divided_loop_cursor {
        return Some(cursor.cut);
    }
    for scope in &program.module.scopes {
        let step_offsets: Vec<&str> = scope
            .facts
            .assignments
            .iter()
            .filter(|assignment| is_step_offset(program, scope, assignment.value))
            .map(|assignment| assignment.name.as_str())
            .collect();
        for statement in &scope.facts.statements {
            let mut found = None;
            walk_statement_expressions(statement, &mut |expr| {
                let Expr::Subscript(subscript) = expr else {
                    return;
                };
                // `x[a:b]`, or the first axis of `x[a:b, :]`.
                let first_axis = match subscript.slice.as_ref() {
                    Expr::Tuple(axes) => axes.elts.first(),
                    other => Some(other),
                };
                let Some(Expr::Slice(slice)) = first_axis else {
                    return;
                };
                let Some(Expr::Name(lower)) = slice.lower.as_deref() else {
                    return;
                };
                if step_offsets.contains(&lower.id.as_str()) {
                    found = Some(span(expr));
                }
            });
            if found.is_some() {
                return found;
            }
        }
    }
    None
}

/// `(step * batch_size) % (n - batch_size)`: arithmetic with a remainder,
/// no call and no rank in it.
/// `offset = ((step * hvd.size() + hvd.rank()) * batch) % n`: a modular
/// cursor whose step is strided by the worker count from the rank.
fn rank_strided_offset(program: &Program) -> Option<std::ops::Range<usize>> {
    program.module.scopes.iter().find_map(|scope| {
        scope.facts.assignments.iter().find_map(|assignment| {
            let Expr::BinOp(operation) = assignment.value else {
                return None;
            };
            let mut strided = false;
            walk_expression(&operation.left, &mut |inner| {
                if let Expr::BinOp(sum) = inner
                    && sum.op == Operator::Add
                    && program.calls_horovod_function(scope, &sum.right, "rank")
                    && let Expr::BinOp(product) = sum.left.as_ref()
                    && product.op == Operator::Mult
                    && program.calls_horovod_function(scope, &product.right, "size")
                {
                    strided = true;
                }
            });
            (operation.op == Operator::Mod && strided).then(|| span(assignment.value))
        })
    })
}

fn is_step_offset(
    program: &Program,
    scope: &crate::analysis::training::Scope,
    value: &Expr,
) -> bool {
    let Expr::BinOp(operation) = value else {
        return false;
    };
    let mut has_call = false;
    walk_expression(value, &mut |inner| {
        has_call |= matches!(inner, Expr::Call(_))
    });
    operation.op == Operator::Mod
        && !has_call
        && !program.calls_horovod_function(scope, value, "rank")
}

/// `tf.data.Dataset.from_tensor_slices(...)` and no call that draws at
/// random, shuffles, or reads files in the module.
fn deterministic_stream(calls: &[ScopedCall]) -> bool {
    let in_memory = calls.iter().any(|call| {
        matches!(
            call.callee.as_deref(),
            Some(
                "tensorflow.data.Dataset.from_tensor_slices"
                    | "tensorflow.data.Dataset.from_tensors"
                    | "tensorflow.data.Dataset.range"
            )
        )
    });
    let elsewhere = calls.iter().any(|call| {
        call.callee.as_deref().is_some_and(|callee| {
            callee.contains("random")
                || callee.contains("shuffle")
                || callee.starts_with("tensorflow.io")
                || callee.contains("TFRecord")
                || callee.contains("list_files")
                || callee.contains("from_generator")
        }) || matches!(
            call.method(),
            Some("shuffle" | "interleave" | "from_generator")
        )
    });
    in_memory && !elsewhere
}

/// A train/test split drawn from the global random state (see
/// `analysis::splits::draws_split`).
fn seeded_split<'c, 'p, 'a>(calls: &'c [ScopedCall<'p, 'a>]) -> Option<&'c ScopedCall<'p, 'a>> {
    calls.iter().find(|call| {
        splits::draws_split(
            call.callee.as_deref().unwrap_or_default(),
            call.site,
            call.scope,
        )
    })
}

/// A split whose rows are decided at random and then cut in two (see
/// `analysis::splits::cuts_rows`).
fn sliced_split<'c, 'p, 'a>(calls: &'c [ScopedCall<'p, 'a>]) -> Option<&'c ScopedCall<'p, 'a>> {
    seeded_split(calls).filter(|call| {
        splits::cuts_rows(
            call.callee.as_deref().unwrap_or_default(),
            call.site,
            call.scope,
        )
    })
}

/// A shard (plain, or an equal-shard helper applied) of a stream that an
/// unseeded or per-rank-seeded `shuffle` reorders before it: in its own
/// chain, or in the chains last assigned to the names it starts from
/// (`tf.data.Dataset.zip((a, b))` of shuffled `a` and `b`).
/// A shard of a stream that a later call of the same scope cuts into windows
/// (`ds = source.shard(...)`, then `ds = ds.window(...)`): the shard and the
/// windowing call.
fn shard_before_windows(
    program: &Program,
) -> Option<(std::ops::Range<usize>, std::ops::Range<usize>)> {
    let helpers = super::facts::equal_shard_helpers(program);
    let calls = program.calls();
    let shards = calls.iter().filter(|call| {
        super::facts::is_shard_by_workers(program, call.scope, call.site.call)
            || super::facts::applies_helper(call.site.call, &helpers)
    });
    for shard in shards {
        let assigned = match shard.site.statement {
            Stmt::Assign(assign) => match assign.targets.as_slice() {
                [Expr::Name(name)] => Some(name.id.as_str()),
                _ => None,
            },
            _ => None,
        };
        let windows = calls.iter().find(|call| {
            let Expr::Attribute(attribute) = call.site.call.func.as_ref() else {
                return false;
            };
            let receiver = span(attribute.value.as_ref());
            let downstream = (receiver.start <= shard.range().start
                && shard.range().end <= receiver.end)
                || (std::ptr::eq(call.scope, shard.scope)
                    && call.range().start >= span(shard.site.statement).end
                    && matches!(super::facts::chain_root(&attribute.value), Expr::Name(root) if Some(root.id.as_str()) == assigned));
            downstream
                && program.has_effect(call, &crate::analysis::catalogue::Effect::WindowsSeries)
        });
        if let Some(windows) = windows {
            return Some((shard.range(), windows.range()));
        }
    }
    None
}

/// A catalogued source that shuffles in each process its own way
/// (`list_files` with no `shuffle=False` and no seed).
fn source_orders_per_process(program: &Program, call: &rustpython_parser::ast::ExprCall) -> bool {
    catalogued_shuffling(program, call).is_some_and(|shuffling| {
        shuffling.per_process(call) != crate::analysis::catalogue::Certainty::Fails
    })
}

/// How a catalogued data source called here shuffles, when it does.
fn catalogued_shuffling<'p>(
    program: &'p Program,
    call: &rustpython_parser::ast::ExprCall,
) -> Option<&'p crate::analysis::catalogue::Shuffling> {
    let scoped = program
        .calls()
        .iter()
        .find(|scoped| scoped.range() == span(call))?;
    program
        .known(scoped)
        .entry()?
        .effects
        .iter()
        .find_map(|effect| match effect {
            crate::analysis::catalogue::Effect::DataSource {
                shuffles: Some(shuffling),
                ..
            } => Some(shuffling),
            _ => None,
        })
}

/// A shard of a stream shuffled before it in each worker's own order: the
/// shard, and the per-rank global seed that makes a seeded order differ,
/// when that is why.
fn shard_of_shuffled_stream(
    program: &Program,
) -> Option<(std::ops::Range<usize>, Option<std::ops::Range<usize>>)> {
    let helpers = super::facts::equal_shard_helpers(program);
    // The global seed TensorFlow combines with an op's own: the last one
    // set before the op is made.
    let global_seeds: Vec<&ScopedCall> = program
        .calls()
        .iter()
        .filter(|call| {
            call.callee
                .as_deref()
                .is_some_and(|callee| callee.starts_with("tensorflow"))
                && program.known(call).entry().is_some_and(|entry| {
                    entry
                        .effects
                        .contains(&crate::analysis::catalogue::Effect::Seeds)
                })
        })
        .collect();
    let seed_by_rank_before = |call: &rustpython_parser::ast::ExprCall| {
        global_seeds
            .iter()
            .filter(|seed| seed.range().end <= span(call).start)
            .max_by_key(|seed| seed.range().start)
            .filter(|seed| seeds_by_rank(program, seed))
            .map(|seed| seed.range())
    };
    let shuffles_per_worker =
        |call: &rustpython_parser::ast::ExprCall, scope: &crate::analysis::training::Scope| {
            let seed = crate::analysis::walk::keyword(call, "seed")
                .map(|keyword| &keyword.value)
                .or(call.args.get(1));
            matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "shuffle")
                && seed.is_none_or(|seed| {
                    matches!(seed, Expr::Constant(constant) if constant.value.is_none())
                        || program.calls_horovod_function(scope, seed, "rank")
                })
        };
    for call in program.calls() {
        let plain = super::facts::is_shard_by_workers(program, call.scope, call.site.call);
        if !(plain || super::facts::applies_helper(call.site.call, &helpers)) {
            continue;
        }
        let Expr::Attribute(attribute) = call.site.call.func.as_ref() else {
            continue;
        };
        // What flows into the shard, and the names it is built from.
        let mut upstream: Vec<&Expr> = vec![attribute.value.as_ref()];
        let mut names = Vec::new();
        walk_expression(attribute.value.as_ref(), &mut |inner| {
            if let Expr::Name(name) = inner {
                names.push(name.id.to_string());
            }
        });
        for scope in [call.scope, &program.module.scopes[0]] {
            for assignment in &scope.facts.assignments {
                // Assigned before the statement that shards, not by it.
                if names.contains(&assignment.name)
                    && span(assignment.statement).end <= call.range().start
                {
                    upstream.push(assignment.value);
                }
            }
        }
        let (mut shuffled, mut by_global_seed) = (false, None);
        for expr in &upstream {
            walk_expression(expr, &mut |inner| {
                if let Expr::Call(inner_call) = inner {
                    shuffled |= shuffles_per_worker(inner_call, call.scope)
                        || source_orders_per_process(program, inner_call)
                        || returns_shuffled_pipeline(program, call.scope, inner_call);
                    if by_global_seed.is_none() && shuffles_with_a_seed(program, inner_call) {
                        by_global_seed = seed_by_rank_before(inner_call);
                    }
                }
            });
        }
        if shuffled {
            return Some((call.range(), None));
        }
        if by_global_seed.is_some() {
            return Some((call.range(), by_global_seed));
        }
    }
    None
}

/// A catalogued source that shuffles with a seed passed to it
/// (`timeseries_dataset_from_array(..., shuffle=True, seed=42)`), or a
/// `shuffle` given a fixed seed: an order TensorFlow draws from that seed
/// and the global one together.
fn shuffles_with_a_seed(program: &Program, call: &rustpython_parser::ast::ExprCall) -> bool {
    let fixed_shuffle = matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "shuffle")
        && crate::analysis::walk::keyword(call, "seed")
            .map(|keyword| &keyword.value)
            .or(call.args.get(1))
            .is_some_and(
                |seed| !matches!(seed, Expr::Constant(constant) if constant.value.is_none()),
            );
    fixed_shuffle
        || catalogued_shuffling(program, call).is_some_and(|shuffling| shuffling.seeded_order(call))
}

/// Whether `call` calls a package function whose returned pipeline is
/// shuffled with no seed, or by a source that orders it per process.
fn returns_shuffled_pipeline(
    program: &Program,
    scope: &crate::analysis::training::Scope,
    call: &rustpython_parser::ast::ExprCall,
) -> bool {
    let Some((module, index, returned)) =
        program
            .analysis
            .returned_by_call(program.module, scope, call)
    else {
        return false;
    };
    module.scopes[index]
        .chain_through_names(returned)
        .iter()
        .any(|(method, link)| {
            let unseeded = *method == "shuffle"
                && crate::analysis::walk::keyword(link, "seed")
                    .map(|keyword| &keyword.value)
                    .or(link.args.get(1))
                    .is_none_or(|seed| {
                        matches!(seed, Expr::Constant(constant) if constant.value.is_none())
                            || (std::ptr::eq(module, program.module)
                                && program.calls_horovod_function(&module.scopes[index], seed, "rank"))
                    });
            let own_order = crate::analysis::effects::of_call(program.analysis, module, index, link)
                .entry()
                .is_some_and(|entry| {
                    entry.effects.iter().any(|effect| {
                        matches!(effect, crate::analysis::catalogue::Effect::DataSource { shuffles: Some(shuffling), .. }
                            if shuffling.per_process(link) != crate::analysis::catalogue::Certainty::Fails)
                    })
                });
            unseeded || own_order
        })
}

/// Whether a seeding call seeds the generator a split draws from: NumPy's
/// for NumPy draws and scikit-learn's split, Python's for `random`;
/// TensorFlow's seeds neither; any other (Keras' `set_random_seed` seeds
/// them all) is taken to.
pub(super) fn seeds_generator_of(seed: &ScopedCall, split: &ScopedCall) -> bool {
    let seeder = seed.callee.as_deref().unwrap_or_default();
    let drawer = split.callee.as_deref().unwrap_or_default();
    let numpy_split = drawer.starts_with("numpy.random.") || drawer.ends_with("train_test_split");
    match seeder {
        "numpy.random.seed" => numpy_split,
        "random.seed" => drawer.starts_with("random."),
        "tensorflow.random.set_seed"
        | "tensorflow.set_random_seed"
        | "tensorflow.random.set_random_seed" => false,
        _ => true,
    }
}

/// A seed computed from `hvd.rank()`.
pub(super) fn seeds_by_rank(program: &Program, call: &ScopedCall) -> bool {
    let arguments = call.site.call.args.iter();
    let keywords = call.site.call.keywords.iter().map(|keyword| &keyword.value);
    arguments
        .chain(keywords)
        .any(|argument| program.calls_horovod_function(call.scope, argument, "rank"))
}

/// A call the catalogue says seeds a random generator (a global one, or
/// the graph's of an Estimator's `RunConfig(tf_random_seed=...)`).
pub(super) fn is_seeding(program: &Program, call: &ScopedCall) -> bool {
    program.known(call).entry().is_some_and(|entry| {
        entry.effects.iter().any(|effect| match effect {
            crate::analysis::catalogue::Effect::Seeds => true,
            crate::analysis::catalogue::Effect::SeedsWith { argument } => argument.of(call.site.call).is_some_and(|seed| {
                !matches!(seed, rustpython_parser::ast::Expr::Constant(constant) if constant.value.is_none())
            }),
            _ => false,
        })
    })
}

/// A call that draws at random without a fixed seed of its own.
fn draws_at_random(program: &Program, call: &ScopedCall) -> bool {
    if is_seeding(program, call) {
        return false;
    }
    let seeded_here = crate::analysis::walk::keyword(call.site.call, "seed").is_some();
    let method = call.method().unwrap_or_default();
    let by_callee = call
        .callee
        .as_deref()
        .is_some_and(crate::analysis::library::draws_at_random);
    // `shuffle=True` of a TF1 input producer or an Estimator input function.
    let shuffled = crate::analysis::walk::keyword(call.site.call, "shuffle").is_some_and(|keyword| {
        matches!(&keyword.value, rustpython_parser::ast::Expr::Constant(constant) if constant.value == rustpython_parser::ast::Constant::Bool(true))
    });
    let by_method = shuffled
        || matches!(method, "shuffle" | "next_batch" | "fit" | "fit_generator" | "shuffle_batch")
        && !crate::analysis::walk::keyword(call.site.call, "shuffle").is_some_and(|keyword| {
            matches!(&keyword.value, rustpython_parser::ast::Expr::Constant(constant) if constant.value == rustpython_parser::ast::Constant::Bool(false))
        });
    (by_callee || by_method) && !seeded_here
}

/// A package function that draws the batches at random, itself or through
/// the package functions it calls, in whatever module: called inside a loop
/// and drawing from the process's random state (`data.random_batch(...)` of
/// a dataset class in another file), or called anywhere and shuffling a
/// pipeline with no fixed seed (a helper that builds the graph's input).
/// Returns the helper's name.
fn helper_drawing_batches(program: &Program, call: &ScopedCall) -> Option<String> {
    let in_loop = program
        .enclosing_statements(call.scope, call.site)
        .iter()
        .any(|statement| matches!(statement, Stmt::For(_) | Stmt::While(_)));
    let analysis = program.analysis;
    let resolve =
        |module: &crate::analysis::training::ModuleAnalysis, scope_index: usize, func: &Expr| {
            crate::analysis::effects::resolved_callee(analysis, module, scope_index, func)
        };
    let mut pending = vec![resolve(
        program.module,
        call.scope_index,
        &call.site.call.func,
    )?];
    let mut seen = std::collections::HashSet::new();
    while let Some(function) = pending.pop() {
        if !seen.insert(function.clone()) {
            continue;
        }
        // The function's own scope, in whichever module defines it.
        let Some((module, scope_index)) = analysis.scope_of_function(&function) else {
            continue;
        };
        for site in &module.scopes[scope_index].facts.calls {
            let shuffles = matches!(site.call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "shuffle")
                && crate::analysis::walk::keyword(site.call, "seed").is_none()
                && site.call.args.len() < 2;
            if shuffles {
                return Some(program.text[span(call.site.call.func.as_ref())].to_string());
            }
            let Some(called) = resolve(module, scope_index, &site.call.func) else {
                continue;
            };
            if in_loop
                && crate::analysis::library::draws_at_random(
                    &crate::analysis::library::canonical_name(&called),
                )
            {
                return Some(program.text[span(call.site.call.func.as_ref())].to_string());
            }
            pending.push(called);
        }
    }
    None
}
