//! Sharding a tf.data pipeline right after its source, so that each worker
//! reads its own part of the data: `.apply(equal_shard)`, a generated helper
//! that takes `.shard(hvd.size(), hvd.rank())` and cuts every shard to the
//! same count. Shards of a plain `.shard` differ by one example when the
//! count does not divide evenly; a loop that runs to the end of the data
//! then takes one step more on some workers, whose last allreduce waits
//! forever.
//!
//! Input: the scope and the dataset expression (a pipeline or a name bound to
//! one). Output: one insertion, and whether a pipeline was found.

use std::ops::Range;

use rustpython_parser::ast::{self, Expr, Stmt};

use super::loaded_splits;
use crate::analysis::catalogue::{Certainty, Effect};
use crate::analysis::training::{ModuleAnalysis, Scope};
use crate::analysis::walk::{chain_root, method_chain, walk_expression};
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::edit::Edit;
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

pub const SOURCE_ORDER_TURNED_OFF: Code = Code::new(
    "DST131",
    "source-order-turned-off",
    Severity::Info,
    "A data source that shuffles in each process its own way (`list_files`) now keeps one order, so that the shards taken by rank do not overlap.",
);

pub const SOURCE_ORDER_SEEDED: Code = Code::new(
    "DST137",
    "source-order-seeded",
    Severity::Info,
    "A data source whose own shuffle is its only one (`image_dataset_from_directory`, as the catalogue says) is sharded by rank: it gets a seed every worker shares, so all draw one order (reshuffled each epoch) and the shards do not overlap.",
);

pub const CODES: &[Code] = &[SOURCE_ORDER_TURNED_OFF, SOURCE_ORDER_SEEDED];

/// Inserts the shard after the source of the pipeline `dataset` names (or is).
/// Returns whether it found a pipeline to shard.
pub fn shard_dataset(rewrite: &mut ModuleRewrite, scope: &Scope, dataset: &Expr) -> bool {
    let Some(source) = pipeline_source(rewrite, scope, dataset) else {
        return false;
    };
    if shuffled_upstream(rewrite, scope, &source) {
        return false;
    }
    let moved = super::shard_placement::moved_shard(rewrite, scope, dataset, &source);
    if matches!(moved, Some(None)) {
        return false;
    }
    let order = own_order(rewrite, &source);
    match &order {
        OwnOrder::None => {}
        OwnOrder::TurnedOff(call, flag) => {
            rewrite.add_keyword(call, flag, "False");
            rewrite.diagnose(Diagnostic::new(
                SOURCE_ORDER_TURNED_OFF,
                span(*call),
                format!("`{}` drew an order of its own in each process, so shards taken by rank would overlap: it now keeps one order (`{flag}=False`) and the shard splits that; shuffle after the shard if the order matters", &rewrite.text[span(call.func.as_ref())]),
            ));
        }
        OwnOrder::Seeded(call, seed) => {
            rewrite.add_keyword(call, seed, SHARED_SEED);
            rewrite.diagnose(Diagnostic::new(
                SOURCE_ORDER_SEEDED,
                span(*call),
                format!("`{}` drew an order of its own in each process, so shards taken by rank would overlap: it now draws one order, the same in every worker (`{seed}={SHARED_SEED}`), still reshuffled each epoch, and the shard splits that; the order no longer changes from run to run", &rewrite.text[span(call.func.as_ref())]),
            ));
        }
        OwnOrder::Kept => return false,
    }
    let seeded_order = (matches!(order, OwnOrder::Seeded(..))
        || shuffles_with_a_seed(rewrite, &source))
    .then_some(source.start);
    // A package function's result is sharded as it is returned.
    let shard_after = if let Some(Some(continuation)) = moved {
        continuation
    } else if built_by_package_function(rewrite, &source) {
        source
    } else {
        windows_of(rewrite, &source)
            .or_else(|| examples_taken_from(rewrite, &source))
            .unwrap_or(source)
    };
    let helper = equal_shard_helper(rewrite, shard_after.start);
    rewrite.edit(Edit::insertion(
        shard_after.end,
        format!(".apply({helper})"),
    ));
    rewrite.data_split_by_rank = true;
    rewrite.seeded_orders_sharded.extend(seeded_order);
    true
}

/// Where sources that shuffle with a seed of their own are sharded right
/// after the call (`source(..., seed=0).apply(equal_shard)`, as an earlier
/// run of the rewrite left them): with those the rewrite shards now, the
/// sources whose order the global seed set before them decides.
pub fn seeded_orders_sharded(rewrite: &ModuleRewrite) -> Vec<usize> {
    let mut sources = rewrite.seeded_orders_sharded.clone();
    for scope in &rewrite.module.scopes {
        for site in &scope.facts.calls {
            if let Expr::Attribute(attribute) = site.call.func.as_ref()
                && matches!(attribute.attr.as_str(), "apply" | "shard")
                && let Expr::Call(source) = attribute.value.as_ref()
                && rewrite
                    .catalogued_effects(scope, source)
                    .iter()
                    .any(|effect| matches!(effect, Effect::DataSource { shuffles: Some(shuffling), .. } if shuffling.seeded_order(source)))
            {
                sources.push(span(source).start);
            }
        }
    }
    sources
}

/// A source that shuffles with a seed passed to it (`seed=42`).
fn shuffles_with_a_seed(rewrite: &ModuleRewrite, source: &Range<usize>) -> bool {
    let Some((scope, call)) = source_call(rewrite, source) else {
        return false;
    };
    rewrite
        .catalogued_effects(scope, call)
        .iter()
        .any(|effect| matches!(effect, Effect::DataSource { shuffles: Some(shuffling), .. } if shuffling.seeded_order(call)))
}

/// `ds.window(size, shift=1)` downstream of a series source, in the scope that
/// builds it: each window is one example, so the shard goes on the windows.
/// Sharding the series itself would give each worker every N-th time step,
/// and windows spanning N times the intended time.
fn windows_of(rewrite: &ModuleRewrite, source: &Range<usize>) -> Option<Range<usize>> {
    let (builder, _) = source_call(rewrite, source)?;
    builder
        .facts
        .calls
        .iter()
        .filter(|site| span(site.call).start >= source.start)
        .filter(|site| {
            rewrite
                .catalogued_effects(builder, site.call)
                .contains(&Effect::WindowsSeries)
        })
        .map(|site| span(site.call))
        .min_by_key(|window| window.start)
}

/// `take(n)` of the source's examples, in the scope that builds it, before
/// anything batches, shuffles or repeats them (`src.map(f).take(20000)`):
/// the examples the job trains on are those `n`, so the shard goes after
/// the cut, each worker taking its part of them. A shard before it would
/// leave each worker up to `n` examples of its own: no less work.
fn examples_taken_from(rewrite: &ModuleRewrite, source: &Range<usize>) -> Option<Range<usize>> {
    let (builder, _) = source_call(rewrite, source)?;
    let mut cuts = builder.facts.calls.iter().filter_map(|site| {
        let Expr::Attribute(attribute) = site.call.func.as_ref() else {
            return None;
        };
        if attribute.attr.as_str() != "take" || span(site.call).start < source.end {
            return None;
        }
        // The cut goes on under a name the training reads; a `take` iterated
        // or peeked at (`for batch in ds.take(1)`) only looks at the data.
        let continues_pipeline = matches!(site.statement, Stmt::Assign(_) | Stmt::AnnAssign(_))
            && !crate::analysis::walk::is_peek_take(site.call);
        if !continues_pipeline {
            return None;
        }
        let expr = Expr::Call(site.call.clone());
        let chain = builder.chain_through_names(&expr);
        let from_source = chain.iter().position(|(_, call)| span(*call) == *source)?;
        let reordered = chain[from_source..].iter().any(|(method, _)| {
            matches!(
                *method,
                "batch" | "padded_batch" | "shuffle" | "repeat" | "window" | "skip"
            )
        });
        (!reordered).then(|| span(site.call))
    });
    cuts.next()
}

/// The call at a source's range, with the scope whose statements hold it.
fn source_call<'a>(
    rewrite: &ModuleRewrite<'a>,
    source: &Range<usize>,
) -> Option<(&'a Scope<'a>, &'a ast::ExprCall)> {
    let module = rewrite.module;
    module.scopes.iter().find_map(|scope| {
        let site = scope
            .facts
            .calls
            .iter()
            .find(|site| span(site.call) == *source)?;
        Some((scope, site.call))
    })
}

/// Whether the call at a source's range is a call of a package function.
fn built_by_package_function(rewrite: &ModuleRewrite, source: &Range<usize>) -> bool {
    let Some((scope, call)) = source_call(rewrite, source) else {
        return false;
    };
    rewrite.scope_index(scope).is_some_and(|index| {
        crate::analysis::effects::resolved_callee(
            rewrite.analysis,
            rewrite.module,
            index,
            &call.func,
        )
        .is_some_and(|callee| rewrite.analysis.functions.contains_key(&callee))
    })
}

/// Whether a catalogued source shuffles in each process its own way.
enum OwnOrder<'a> {
    None,
    /// It does by default: passing its flag as false turns that off.
    TurnedOff(&'a ast::ExprCall, String),
    /// It does by default, its shuffle the only one (turning it off would
    /// lose it): a seed every process shares gives them one order.
    Seeded(&'a ast::ExprCall, String),
    /// It does as the program calls it, and the rewrite cannot change that.
    Kept,
}

/// The seed a source gets so that every process draws the same order.
const SHARED_SEED: &str = "0";

/// Whether a source draws no order of its own in each process (shards of
/// it are disjoint).
pub(super) fn draws_no_order_of_its_own(rewrite: &ModuleRewrite, source: &Range<usize>) -> bool {
    matches!(own_order(rewrite, source), OwnOrder::None)
}

fn own_order<'a>(rewrite: &ModuleRewrite<'a>, source: &Range<usize>) -> OwnOrder<'a> {
    let Some((scope, call)) = source_call(rewrite, source) else {
        return OwnOrder::None;
    };
    let shuffling =
        rewrite
            .catalogued_effects(scope, call)
            .iter()
            .find_map(|effect| match effect {
                Effect::DataSource {
                    shuffles: Some(shuffling),
                    ..
                } => Some(shuffling),
                _ => None,
            });
    let Some(shuffling) = shuffling else {
        return OwnOrder::None;
    };
    if shuffling.per_process(call) == Certainty::Fails {
        return OwnOrder::None;
    }
    match (shuffling.flag.of(call), &shuffling.flag.keyword) {
        (None, Some(keyword)) if shuffling.may_turn_off => {
            OwnOrder::TurnedOff(call, keyword.clone())
        }
        _ => match (shuffling.seed.of(call), &shuffling.seed.keyword) {
            // Unseeded (the flag left at its default or passed as true).
            (None, Some(keyword)) if !shuffling.may_turn_off => {
                OwnOrder::Seeded(call, keyword.clone())
            }
            _ => OwnOrder::Kept,
        },
    }
}

/// The helper, defined once per module. A count TensorFlow does not know
/// (or an infinite one) is negative, and `take` of a negative count keeps
/// the whole shard.
fn equal_shard_helper(rewrite: &mut ModuleRewrite, site: usize) -> String {
    let (size, rank) = (rewrite.horovod_call("size"), rewrite.horovod_call("rank"));
    rewrite.helper(
        &["equal_shard", "horovod_equal_shard"],
        site,
        |helper, rewrite| {
            let (tf, unit) = (&rewrite.tf, &rewrite.stylist.indent_unit);
            vec![
                format!("def {helper}(dataset):"),
                format!("{unit}\"\"\"This worker's shard of a dataset: every N-th example from its rank,"),
                format!("{unit}the same count on every worker (their allreduces pair up).\"\"\""),
                format!("{unit}count = {tf}.data.experimental.cardinality(dataset)"),
                format!("{unit}return dataset.shard({size}, {rank}).take(count // {size})"),
            ]
        },
    )
}

/// Whether the source combines streams built from names that an unseeded
/// `shuffle` reorders (`Dataset.zip((a, b))` of shuffled `a` and `b`): each
/// worker would shuffle its own order, and shards of it would overlap.
fn shuffled_upstream(rewrite: &ModuleRewrite, scope: &Scope, source: &Range<usize>) -> bool {
    let top_level = &rewrite.module.scopes[0];
    let Some(call) = [scope, top_level]
        .iter()
        .flat_map(|candidate| candidate.facts.calls.iter())
        .find(|site| span(site.call) == *source)
    else {
        return false;
    };
    let mut names = Vec::new();
    for argument in &call.call.args {
        walk_expression(argument, &mut |inner| {
            if let Expr::Name(name) = inner {
                names.push(name.id.to_string());
            }
        });
    }
    [scope, top_level]
        .iter()
        .flat_map(|candidate| candidate.facts.assignments.iter())
        .filter(|assignment| names.contains(&assignment.name))
        .filter(|assignment| span(assignment.statement).start < source.start)
        .any(|assignment| {
            let mut shuffled = false;
            walk_expression(assignment.value, &mut |inner| {
                if let Expr::Call(inner_call) = inner
                    && let Expr::Attribute(attribute) = inner_call.func.as_ref()
                    && attribute.attr.as_str() == "shuffle"
                {
                    let seed = crate::analysis::walk::keyword(inner_call, "seed")
                        .map(|keyword| &keyword.value)
                        .or(inner_call.args.get(1));
                    shuffled |= seed.is_none();
                }
            });
            shuffled
        })
}

/// Whether `dataset` is (or names) a tf.data pipeline the tool can trace
/// to its source, shardable or not.
pub fn is_pipeline(rewrite: &ModuleRewrite, scope: &Scope, dataset: &Expr) -> bool {
    pipeline_source(rewrite, scope, dataset).is_some()
}

/// Whether `dataset` is (or names) a tf.data pipeline whose source can be sharded.
pub fn is_shardable(rewrite: &ModuleRewrite, scope: &Scope, dataset: &Expr) -> bool {
    pipeline_source(rewrite, scope, dataset).is_some_and(|source| {
        !shuffled_upstream(rewrite, scope, &source)
            && !matches!(own_order(rewrite, &source), OwnOrder::Kept)
    })
}

fn pipeline_source(rewrite: &ModuleRewrite, scope: &Scope, dataset: &Expr) -> Option<Range<usize>> {
    if let Expr::Name(name) = dataset
        && let Some(position) = scope.parameters.iter().position(|p| p == name.id.as_str())
    {
        return argument_pipeline_source(rewrite, scope, name.id.as_str(), position);
    }
    let pipeline: Option<&Expr> = match dataset {
        Expr::Name(name) => {
            let top_level = &rewrite.module.scopes[0];
            let used_at = span(dataset).start;
            [scope, top_level].into_iter().find_map(|candidate| {
                // A plain name: `.apply(...)` after a call whose result is
                // unpacked (`train, val = source(...)`) would apply it to
                // the tuple.
                let plain: Vec<_> = candidate
                    .facts
                    .assignments
                    .iter()
                    .filter(|assignment| {
                        assignment.name == name.id.as_str()
                            && matches!(assignment.statement, Stmt::Assign(assign)
                                if matches!(assign.targets.as_slice(), [Expr::Name(_)]))
                    })
                    // Not a step continuing it (`ds = ds.window(...)`).
                    .filter(|assignment| !continues_name(assignment.value, name.id.as_str()))
                    .collect();
                let is_source = |value: &Expr| dataset_source(rewrite, candidate, value).is_some();
                // The pipeline the use reads: the one assigned last before
                // it, past the steps continuing it (a name rebuilt from another source, `ds =
                // list_files(...)` then `ds = from_tensor_slices(loaded)`),
                // none when that one is no source the pass knows (never an
                // earlier one); else, assigned after it in the file (a
                // function reading a global), the first source.
                match plain
                    .iter()
                    .rfind(|assignment| span(assignment.statement).start < used_at)
                {
                    Some(reaching) => is_source(reaching.value).then_some(reaching.value),
                    None => plain
                        .iter()
                        .find(|assignment| is_source(assignment.value))
                        .map(|assignment| assignment.value),
                }
            })
        }
        other => Some(other),
    };
    if let Some(source) = pipeline.and_then(|pipeline| dataset_source(rewrite, scope, pipeline)) {
        return Some(source);
    }
    match dataset {
        Expr::Name(name) => continued_pipeline_source(rewrite, scope, dataset)
            .or_else(|| {
                factory_pipeline_source(rewrite, scope, name.id.as_str(), span(dataset).start)
            })
            .or_else(|| loaded_splits::split_of_loaded_source(rewrite, scope, dataset)),
        // `ds.batch(n).prefetch(1)`: the pipeline `ds` names; `load(x).map(f)`:
        // the one a package function returns.
        other => match chain_root(other) {
            root @ Expr::Name(_) => pipeline_source(rewrite, scope, root),
            Expr::Call(call) => factory_at(rewrite, scope, call, None)
                .and_then(|factory| factory_source(rewrite, &factory)),
            _ => None,
        },
    }
}

/// The plain assignments (`name = value`, not unpacking or `with`) of
/// `name` in a scope, in order.
pub(super) fn plain_assignments<'s, 'a>(
    scope: &'s Scope<'a>,
    name: &'s str,
) -> impl DoubleEndedIterator<Item = &'s crate::analysis::index::Assignment<'a>> + 's {
    scope
        .facts
        .assignments
        .iter()
        .filter(|assignment| matches!(assignment.statement, Stmt::Assign(_)))
        .filter(move |assignment| assignment.name == name)
}

/// Whether a value assigned to `name` continues its pipeline (`ds =
/// ds.shuffle(n)`) rather than binding another.
pub(super) fn continues_name(value: &Expr, name: &str) -> bool {
    matches!(chain_root(value), Expr::Name(root) if root.id.as_str() == name)
}

/// `examples = files.interleave(...)`: the source of the pipeline the name
/// continues, as assigned last before the use. Each step looks further up
/// the file, so a cycle of names ends.
fn continued_pipeline_source(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    dataset: &Expr,
) -> Option<Range<usize>> {
    let Expr::Name(name) = dataset else {
        return None;
    };
    let used_at = span(dataset).start;
    let top_level = &rewrite.module.scopes[0];
    let continued = [scope, top_level].into_iter().find_map(|candidate| {
        plain_assignments(candidate, name.id.as_str())
            .filter(|assignment| span(assignment.statement).start < used_at)
            .rfind(|assignment| matches!(chain_root(assignment.value), Expr::Name(other) if other.id != name.id))
            .map(|assignment| (candidate, assignment.value))
    })?;
    let (builder, value) = continued;
    // `train = ds.take(n)` (with `val = ds.skip(n)`) cuts the stream: a
    // shard above it would leave the cut whole, so it is not followed.
    let cuts = method_chain(value)
        .iter()
        .any(|(method, _)| matches!(*method, "take" | "skip"));
    if cuts {
        return None;
    }
    let root = chain_root(value);
    // `tokenizer = build(x for x in train_examples)` or
    // `vectorizer.adapt(train_text)` beside `train = train_examples.map(...)`:
    // a shard above would give each worker a vocabulary of its own.
    if let Expr::Name(root_name) = root
        && consumed_elsewhere(rewrite, root_name.id.as_str(), span(value))
    {
        return None;
    }
    pipeline_source(rewrite, builder, root)
        .or_else(|| loaded_splits::unpacked_split(rewrite, builder, root))
}

/// Whether the module iterates the dataset `name` holds (the iterable of a
/// loop or comprehension) or hands it to a call, outside `continuation`:
/// what it builds there (a vocabulary, statistics) would differ per worker
/// if the dataset were sharded.
fn consumed_elsewhere(rewrite: &ModuleRewrite, name: &str, continuation: Range<usize>) -> bool {
    let is_name = |expr: &Expr| {
        matches!(expr, Expr::Name(found) if found.id.as_str() == name)
            && !(continuation.start <= span(expr).start && span(expr).end <= continuation.end)
    };
    let mut consumed = false;
    for scope in &rewrite.module.scopes {
        for statement in &scope.facts.statements {
            if let Stmt::For(node) = statement
                && is_name(&node.iter)
            {
                consumed = true;
            }
            crate::analysis::walk::walk_statement_expressions(statement, &mut |expr| match expr {
                Expr::GeneratorExp(ast::ExprGeneratorExp { generators, .. })
                | Expr::ListComp(ast::ExprListComp { generators, .. })
                | Expr::SetComp(ast::ExprSetComp { generators, .. })
                | Expr::DictComp(ast::ExprDictComp { generators, .. }) => {
                    consumed |= generators.iter().any(|generator| is_name(&generator.iter));
                }
                Expr::Call(call) => {
                    consumed |= call.args.iter().any(is_name)
                        || call.keywords.iter().any(|keyword| is_name(&keyword.value));
                }
                _ => {}
            });
        }
    }
    consumed
}

/// `train_ds = mnist_dataset()` or `train, test = make_datasets()`: the
/// source of the pipeline a function of this module returns (at the
/// position the name takes in the unpacking). A function called for several
/// datasets (`train = prepare(a)`, `val = prepare(b)`), or one of another
/// module, is not sharded inside: that would split the evaluation data too,
/// or code other modules share. The training call's own result is sharded
/// instead, when the pipeline it returns draws one order in every process.
fn factory_pipeline_source(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    name: &str,
    used_at: usize,
) -> Option<Range<usize>> {
    let factory = factory_of(rewrite, scope, name, used_at)?;
    factory_source(rewrite, &factory)
}

/// Where the pipeline a factory call builds is sharded: at its source in
/// the factory, or after the call (see `factory_pipeline_source`).
fn factory_source(rewrite: &ModuleRewrite, factory: &FactoryCall) -> Option<Range<usize>> {
    if let Some(local) = factory.local_scope(rewrite)
        && (builds_one_dataset(rewrite, local.name())
            || others_only_feed_fits(rewrite, local.name(), factory.call))
    {
        let returned = match (factory.position, factory.returned) {
            (None, value) => value,
            (Some(index), Expr::Tuple(tuple)) => tuple.elts.get(index)?,
            (Some(_), _) => return None,
        };
        // The factory's own name for it, or the expression it returns.
        return pipeline_source(rewrite, local, returned);
    }
    if factory.position.is_some() || factory.per_process_order(rewrite).is_some() {
        return None;
    }
    factory
        .returns_pipeline(rewrite)
        .then(|| span(factory.call))
}

/// A call of a package function that builds the pipeline a name holds.
struct FactoryCall<'a> {
    call: &'a ast::ExprCall,
    /// The position the name takes when the result is unpacked.
    position: Option<usize>,
    /// The module and scope of the function, and the expression it returns.
    module: &'a ModuleAnalysis<'a>,
    scope_index: usize,
    returned: &'a Expr,
}

impl<'a> FactoryCall<'a> {
    /// The function's scope, when it is a function of the module rewritten.
    fn local_scope(&self, rewrite: &ModuleRewrite<'a>) -> Option<&'a Scope<'a>> {
        std::ptr::eq(self.module, rewrite.module).then(|| &self.module.scopes[self.scope_index])
    }

    fn scope(&self) -> &'a Scope<'a> {
        &self.module.scopes[self.scope_index]
    }

    /// The calls of the pipeline the function returns (for the name taken,
    /// when the result is unpacked), through its names.
    fn chain(&self) -> Vec<(&'a str, &'a ast::ExprCall)> {
        let returned = match (self.position, self.returned) {
            (Some(index), Expr::Tuple(tuple)) => match tuple.elts.get(index) {
                Some(element) => element,
                None => return Vec::new(),
            },
            (_, returned) => returned,
        };
        self.scope().chain_through_names(returned)
    }

    /// Whether what it returns starts at a catalogued tf.data source.
    fn returns_pipeline(&self, rewrite: &ModuleRewrite<'a>) -> bool {
        self.chain().iter().any(|(_, call)| {
            self.effects(rewrite, call)
                .iter()
                .any(|effect| matches!(effect, Effect::DataSource { pipeline: true, .. }))
        })
    }

    fn effects(&self, rewrite: &ModuleRewrite<'a>, call: &ast::ExprCall) -> &'a [Effect] {
        crate::analysis::effects::of_call(rewrite.analysis, self.module, self.scope_index, call)
            .entry()
            .map_or(&[], |entry| entry.effects.as_slice())
    }

    /// The step of the returned pipeline that orders it in each process its
    /// own way (an unseeded `shuffle`, a source shuffling its files), said
    /// as `` `shuffle(...)` (utils.py, line 60)``: shards taken after it overlap.
    fn per_process_order(&self, rewrite: &ModuleRewrite<'a>) -> Option<String> {
        let source = &self.module.module.source;
        // The step itself (`shuffle(10 * n)`), not the chain before it.
        let said = |call: &ast::ExprCall| {
            let start = match call.func.as_ref() {
                Expr::Attribute(attribute) => span(attribute.value.as_ref()).end,
                _ => span(call).start,
            };
            let text = source.text[start..span(call).end]
                .trim_start_matches(|c: char| c == '.' || c.is_whitespace());
            let at = span(call).end - text.len();
            let text = text
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .replace("( ", "(")
                .replace(" )", ")");
            format!(
                "`{text}` ({}, {})",
                source.relative_path,
                source.line_label(at)
            )
        };
        self.chain().into_iter().find_map(|(method, call)| {
            let unseeded_shuffle = method == "shuffle"
                && crate::analysis::walk::keyword(call, "seed")
                    .map(|keyword| &keyword.value)
                    .or(call.args.get(1))
                    .is_none_or(
                        |seed| matches!(seed, Expr::Constant(constant) if constant.value.is_none()),
                    );
            let own_shuffle = self.effects(rewrite, call).iter().any(|effect| {
                matches!(effect, Effect::DataSource { shuffles: Some(shuffling), .. }
                    if shuffling.per_process(call) != Certainty::Fails)
            });
            (unseeded_shuffle || own_shuffle).then(|| said(call))
        })
    }
}

/// The call of a package function whose result `name` is assigned (or
/// unpacked from) in `scope` or at the top level, with what it returns.
fn factory_of<'a>(
    rewrite: &ModuleRewrite<'a>,
    scope: &'a Scope<'a>,
    name: &str,
    used_at: usize,
) -> Option<FactoryCall<'a>> {
    let top_level = &rewrite.module.scopes[0];
    let (caller, assignment, position) = [scope, top_level].into_iter().find_map(|candidate| {
        // The assignment the use sees, past the steps continuing it (`ds =
        // ds.shuffle(n)`): the last before it, else (a global a function
        // reads) the first.
        let assignments = &candidate.facts.assignments;
        let reaching = assignments
            .iter()
            .rposition(|assignment| {
                assignment.name == name
                    && span(assignment.statement).start < used_at
                    && !continues_name(assignment.value, name)
            })
            .unwrap_or(0);
        let mut ordered = assignments[reaching..]
            .iter()
            .chain(&assignments[..reaching]);
        ordered.find_map(|assignment| {
            let Stmt::Assign(assign) = assignment.statement else {
                return None;
            };
            let position = match assign.targets.as_slice() {
                [Expr::Name(target)] if target.id.as_str() == name => None,
                [Expr::Tuple(tuple)] => Some(tuple.elts.iter().position(
                    |element| matches!(element, Expr::Name(target) if target.id.as_str() == name),
                )?),
                _ => return None,
            };
            Some((candidate, assignment, position))
        })
    })?;
    let Expr::Call(call) = assignment.value else {
        return None;
    };
    factory_at(rewrite, caller, call, position)
}

/// The package function `call` (made in `caller`) calls, with what it returns.
fn factory_at<'a>(
    rewrite: &ModuleRewrite<'a>,
    caller: &Scope,
    call: &'a ast::ExprCall,
    position: Option<usize>,
) -> Option<FactoryCall<'a>> {
    let (module, scope_index, returned) =
        rewrite
            .analysis
            .returned_by_call(rewrite.module, caller, call)?;
    Some(FactoryCall {
        call,
        position,
        module,
        scope_index,
        returned,
    })
}

/// Whether every call of the module naming a function by its plain name
/// passes the same arguments: it builds one dataset, however often.
fn builds_one_dataset(rewrite: &ModuleRewrite, function: &str) -> bool {
    let mut arguments = rewrite
        .module
        .scopes
        .iter()
        .flat_map(|scope| scope.facts.calls.iter())
        .filter(|site| matches!(site.call.func.as_ref(), Expr::Name(callee) if callee.id.as_str() == function))
        .map(|site| {
            rewrite.text[span(site.call)]
                .split_whitespace()
                .collect::<String>()
        });
    let first = arguments.next();
    arguments.all(|shape| Some(shape) == first)
}

/// Whether every other call of a function builds only data that fits
/// train on or validate with (`valid = make(b)` read only as a fit's
/// `validation_data=`, `train = make(c)` only as another fit's data, or
/// printed): a shard inside splits each training set, as it must, and
/// validation too, which Keras' averaged metrics (the `MetricAverageCallback`
/// the fit gets) turn back into one measure of it.
fn others_only_feed_fits(
    rewrite: &ModuleRewrite,
    function: &str,
    training_call: &ast::ExprCall,
) -> bool {
    let mut validation_names = Vec::new();
    for scope in &rewrite.module.scopes {
        for site in &scope.facts.calls {
            let calls_function = matches!(site.call.func.as_ref(), Expr::Name(callee) if callee.id.as_str() == function);
            if !calls_function || std::ptr::eq(site.call, training_call) {
                continue;
            }
            // The call must be all of `name = make(...)`.
            let Stmt::Assign(assign) = site.statement else {
                return false;
            };
            let ([Expr::Name(target)], Expr::Call(value)) =
                (assign.targets.as_slice(), assign.value.as_ref())
            else {
                return false;
            };
            if !std::ptr::eq(value, site.call) {
                return false;
            }
            validation_names.push(target.id.as_str());
        }
    }
    // Each read of those names is a fit's data or `validation_data=`, or printed.
    let mut reads = 0;
    let mut validating = 0;
    for scope in &rewrite.module.scopes {
        for statement in &scope.facts.statements {
            crate::analysis::walk::walk_statement_expressions(statement, &mut |expr| match expr {
                Expr::Name(name)
                    if name.ctx == ast::ExprContext::Load
                        && validation_names.contains(&name.id.as_str()) =>
                {
                    reads += 1
                }
                Expr::Call(call) if matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "fit") =>
                {
                    let built = |value: &Expr| matches!(value, Expr::Name(name) if validation_names.contains(&name.id.as_str()));
                    validating += call
                        .keywords
                        .iter()
                        .filter(|keyword| {
                            matches!(keyword.arg.as_deref(), Some("validation_data" | "x"))
                        })
                        .filter(|keyword| built(&keyword.value))
                        .count()
                        + call
                            .args
                            .first()
                            .filter(|data| built(data))
                            .map_or(0, |_| 1);
                }
                Expr::Call(call) if matches!(call.func.as_ref(), Expr::Name(callee) if callee.id.as_str() == "print") =>
                {
                    validating += call
                        .args
                        .iter()
                        .filter(|argument| matches!(argument, Expr::Name(name) if validation_names.contains(&name.id.as_str())))
                        .count();
                }
                _ => {}
            });
        }
    }
    !validation_names.is_empty() && reads == validating
}

/// Why the pipeline `dataset` names cannot be sharded, when a function
/// builds it whose order differs per process: said in DST101.
pub fn why_not_shardable(rewrite: &ModuleRewrite, scope: &Scope, dataset: &Expr) -> Option<String> {
    why_not_shardable_within(rewrite, scope, dataset, 8)
}

/// `why_not_shardable` following at most `depth` calls back to a caller.
fn why_not_shardable_within(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    dataset: &Expr,
    depth: usize,
) -> Option<String> {
    // A parameter: what the callers in this module pass for it.
    if let Expr::Name(name) = dataset
        && let Some(position) = scope.parameters.iter().position(|p| p == name.id.as_str())
    {
        scope.function?;
        let depth = depth.checked_sub(1)?;
        let offset = usize::from(scope.class.is_some());
        return rewrite.module.scopes.iter().find_map(|caller| {
            caller.facts.calls.iter().find_map(|site| {
                let calls_function = matches!(site.call.func.as_ref(), Expr::Name(callee) if callee.id.as_str() == scope.name())
                    || calls_method_of(rewrite, caller, site.call, scope);
                if !calls_function || std::ptr::eq(caller, scope) {
                    return None;
                }
                let argument = crate::analysis::walk::keyword(site.call, name.id.as_str())
                    .map(|keyword| &keyword.value)
                    .or_else(|| site.call.args.get(position.checked_sub(offset)?))?;
                why_not_shardable_within(rewrite, caller, argument, depth)
            })
        });
    }
    let factory = match chain_root(dataset) {
        Expr::Name(name) => factory_of(rewrite, scope, name.id.as_str(), span(dataset).start)?,
        Expr::Call(call) => factory_at(rewrite, scope, call, None)?,
        _ => return None,
    };
    let step = factory.per_process_order(rewrite)?;
    let function = rewrite.expression_text(&factory.call.func);
    // Why not inside it, before its shuffle: it builds other datasets too,
    // or belongs to another module.
    let inside = match factory.local_scope(rewrite) {
        Some(local)
            if !builds_one_dataset(rewrite, local.name())
                && !others_only_feed_fits(rewrite, local.name(), factory.call) =>
        {
            format!(
                ", and `{function}` builds the evaluation data too, which a shard inside it would split"
            )
        }
        None => {
            format!(", and `{function}` belongs to another module, which the rewrite does not edit")
        }
        Some(_) => String::new(),
    };
    Some(format!(
        "the pipeline `{function}` returns is shuffled in each process its own way, by {step}, so shards of it would overlap{inside}"
    ))
}

/// A pipeline a function receives as a parameter (`def train_one_epoch(data)`):
/// the source of the pipeline its callers in this module pass, when they all
/// pass the same one.
fn argument_pipeline_source(
    rewrite: &ModuleRewrite,
    function: &Scope,
    parameter: &str,
    position: usize,
) -> Option<Range<usize>> {
    function.function?;
    let offset = usize::from(function.class.is_some());
    let mut sources = Vec::new();
    for caller in &rewrite.module.scopes {
        for site in &caller.facts.calls {
            let calls_function = matches!(site.call.func.as_ref(), Expr::Name(callee) if callee.id.as_str() == function.name())
                || calls_method_of(rewrite, caller, site.call, function);
            if !calls_function || std::ptr::eq(caller, function) {
                continue;
            }
            let argument = crate::analysis::walk::keyword(site.call, parameter)
                .map(|keyword| &keyword.value)
                .or_else(|| site.call.args.get(position.checked_sub(offset)?));
            let source = argument.and_then(|argument| pipeline_source(rewrite, caller, argument));
            sources.push(source?);
        }
    }
    sources.dedup();
    match sources.as_slice() {
        [source] => Some(source.clone()),
        _ => None,
    }
}

/// Whether a call calls the method `function` on an object of its class:
/// `self.train(...)` in a sibling method, `Trainer().train(...)`, or
/// `trainer.train(...)` with `trainer = Trainer(...)`.
fn calls_method_of(
    rewrite: &ModuleRewrite,
    caller: &Scope,
    call: &ast::ExprCall,
    function: &Scope,
) -> bool {
    let Some(class) = function.class else {
        return false;
    };
    let Expr::Attribute(attribute) = call.func.as_ref() else {
        return false;
    };
    if attribute.attr.as_str() != function.name() {
        return false;
    }
    let builds_class = |expr: &Expr| matches!(expr, Expr::Call(built) if matches!(built.func.as_ref(), Expr::Name(name) if name.id == class.name));
    match attribute.value.as_ref() {
        Expr::Name(receiver) if receiver.id.as_str() == "self" => {
            caller.class.is_some_and(|own| std::ptr::eq(own, class))
        }
        Expr::Name(receiver) => [caller, &rewrite.module.scopes[0]].iter().any(|scope| {
            let values: Vec<&Expr> = scope
                .facts
                .assignments
                .iter()
                .filter(|assignment| assignment.name == receiver.id.as_str())
                .map(|assignment| assignment.value)
                .collect();
            !values.is_empty() && values.iter().all(|value| builds_class(value))
        }),
        other => builds_class(other),
    }
}

/// The range of the call that creates a tf.data pipeline inside `expr`.
fn dataset_source(rewrite: &ModuleRewrite, scope: &Scope, expr: &Expr) -> Option<Range<usize>> {
    let mut found = None;
    walk_expression(expr, &mut |inner| {
        if found.is_none()
            && let Expr::Call(call) = inner
            && rewrite
                .catalogued_effects(scope, call)
                .iter()
                .any(|effect| matches!(effect, Effect::DataSource { pipeline: true, .. }))
        {
            found = Some(span(call));
        }
    });
    found
}
