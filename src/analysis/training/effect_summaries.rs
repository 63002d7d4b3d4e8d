//! What each package function writes, removes, creates or downloads on
//! every rank when it is called, directly or through the package functions
//! it calls (across modules), worked out once: a helper that calls
//! `plt.savefig` writes; a method that calls `self.checkpoint.save()`
//! saves; a `Callback` subclass whose `on_epoch_end` saves an image writes
//! wherever it is passed. Calls under a rank-0 test, on a path built from
//! the rank, or in a `try` that catches a lost race are not effects.

use std::collections::HashMap;

use rustpython_parser::ast::{Expr, Stmt};

use super::{Analysis, ModuleAnalysis};
use crate::analysis::catalogue::{Certainty, Effect};
use crate::analysis::effects::{self, Known};
use crate::analysis::walk::{dotted_name, path_to, walk_expression};
use crate::python::parse::span;

/// One effect a function has on every rank, and where it happens.
#[derive(Debug, Clone, PartialEq)]
pub struct Reached {
    pub effect: Effect,
    /// The call, as written (`plt.savefig`).
    pub call: String,
    pub relative_path: String,
    pub line: usize,
    /// Known by the call's name only.
    pub guessed: bool,
    /// A second call does nothing: a cached download, or a call under a
    /// test that the file is not there yet.
    pub skips_what_is_there: bool,
    /// The names and strings the path argument is built from, to tell
    /// whether a read may be of what this wrote.
    pub path_tokens: Vec<String>,
}

impl Reached {
    /// "`plt.savefig` in util.py (line 12)".
    pub fn describe(&self) -> String {
        let guess = if self.guessed {
            format!(", whose name says it {}", self.effect.verb())
        } else {
            String::new()
        };
        format!(
            "`{}` in {} (line {}){guess}",
            self.call, self.relative_path, self.line
        )
    }
}

/// What package functions do to storage.
#[derive(Debug, Default)]
pub struct EffectSummaries {
    /// On every rank, by function, through the package calls (a class's
    /// construction is its `__init__`).
    pub every_rank: HashMap<String, Vec<Reached>>,
    /// Every method's together, by class: what an instance does wherever it
    /// is passed (a callback's `on_epoch_end` saving images).
    pub classes: HashMap<String, Vec<Reached>>,
    /// Functions that call TensorFlow beyond the catalogue (build ops or
    /// variables), directly or through the package: calling one twice is
    /// not the same as calling it once.
    pub builds_tensorflow: std::collections::HashSet<String>,
    /// Functions that issue Horovod collectives (allreduce, broadcast,
    /// join...), directly or through the package: every rank must call them.
    pub collectives: std::collections::HashSet<String>,
    /// Functions that call, on an object the analysis cannot type, a method
    /// whose name a package class defines (`dataset.copy_files(...)`): what
    /// they do is not fully known.
    pub opaque: std::collections::HashSet<String>,
    /// The writes rank 0 alone makes (under a rank-0 test), through calls.
    pub rank_zero_writes: HashMap<String, Vec<Reached>>,
}

/// The effect summaries of every package function.
pub(super) fn effect_summaries(analysis: &Analysis) -> EffectSummaries {
    let mut own: HashMap<String, Vec<Reached>> = HashMap::new();
    let mut own_rank_zero: HashMap<String, Vec<Reached>> = HashMap::new();
    let mut own_tensorflow = std::collections::HashSet::new();
    let mut own_collectives = std::collections::HashSet::new();
    let mut own_opaque = std::collections::HashSet::new();
    let package_methods: std::collections::HashSet<&str> = analysis
        .modules
        .iter()
        .flat_map(|module| module.scopes.iter())
        .filter(|scope| scope.class.is_some())
        .map(|scope| scope.name())
        .collect();
    let mut calls: HashMap<String, Vec<String>> = HashMap::new();
    for module in &analysis.modules {
        for (index, scope) in module.scopes.iter().enumerate() {
            if scope.function.is_none() {
                continue;
            }
            let found = own_effects(analysis, module, index);
            own.insert(scope.qualified_name.clone(), found.every_rank);
            own_rank_zero.insert(scope.qualified_name.clone(), found.rank_zero_writes);
            if found.builds_tensorflow {
                own_tensorflow.insert(scope.qualified_name.clone());
            }
            if found.issues_collectives {
                own_collectives.insert(scope.qualified_name.clone());
            }
            if calls_untyped_package_method(analysis, module, index, &package_methods) {
                own_opaque.insert(scope.qualified_name.clone());
                own_opaque.extend(enclosing_functions(module, index));
            }
            calls.insert(scope.qualified_name.clone(), found.callees);
        }
    }
    let every_rank = propagate(own, &calls);
    let mut classes = HashMap::new();
    add_classes(analysis, &every_rank, &mut classes);
    let builds_tensorflow = reaching(&own_tensorflow, &calls);
    let collectives = reaching(&own_collectives, &calls);
    let opaque = reaching(&own_opaque, &calls);
    EffectSummaries {
        every_rank,
        classes,
        builds_tensorflow,
        collectives,
        opaque,
        rank_zero_writes: propagate(own_rank_zero, &calls),
    }
}

/// Adds to each function what its callees reach, until nothing changes
/// (the call graph may have cycles).
fn propagate(
    own: HashMap<String, Vec<Reached>>,
    calls: &HashMap<String, Vec<String>>,
) -> HashMap<String, Vec<Reached>> {
    let mut summaries = own;
    // Until nothing changes: the call graph may have cycles.
    loop {
        let mut changed = false;
        for (function, callees) in calls {
            let mut reached: Vec<Reached> = Vec::new();
            for callee in callees {
                if let Some(found) = summaries.get(callee) {
                    reached.extend(found.iter().cloned());
                }
            }
            let summary = summaries.entry(function.clone()).or_default();
            for effect in reached {
                if summary.len() < 8 && !summary.contains(&effect) {
                    summary.push(effect);
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    summaries
}

/// Whether a function's own calls include, on an object the analysis
/// cannot type, a method whose name a package class defines.
fn calls_untyped_package_method(
    analysis: &Analysis,
    module: &ModuleAnalysis,
    index: usize,
    package_methods: &std::collections::HashSet<&str>,
) -> bool {
    module.scopes[index].facts.calls.iter().any(|site| {
        matches!(site.call.func.as_ref(), Expr::Attribute(attribute)
            if package_methods.contains(attribute.attr.as_str())
                && effects::resolved_callee(analysis, module, index, &site.call.func)
                    .is_none_or(|callee| !effects::is_package_function(analysis.package, &callee)))
    })
}

/// The functions enclosing an opaque one are opaque too (a nested helper
/// runs when they call it), up to the first class.
fn enclosing_functions(module: &ModuleAnalysis, index: usize) -> Vec<String> {
    let mut found = Vec::new();
    let mut current = module.scopes[index].parent;
    while let Some(at) = current {
        let scope = &module.scopes[at];
        if scope.function.is_none() {
            break;
        }
        found.push(scope.qualified_name.clone());
        current = scope.parent;
    }
    found
}

/// The functions that are in `own`, or call one, through the package calls.
fn reaching(
    own: &std::collections::HashSet<String>,
    calls: &HashMap<String, Vec<String>>,
) -> std::collections::HashSet<String> {
    let mut found = own.clone();
    loop {
        let before = found.len();
        for (function, callees) in calls {
            if callees.iter().any(|callee| found.contains(callee)) {
                found.insert(function.clone());
            }
        }
        if found.len() == before {
            return found;
        }
    }
}

/// A class's methods' effects, under the class's own name.
fn add_classes(
    analysis: &Analysis,
    functions: &HashMap<String, Vec<Reached>>,
    summaries: &mut HashMap<String, Vec<Reached>>,
) {
    for module in &analysis.modules {
        for scope in module.scopes.iter().filter(|scope| scope.class.is_some()) {
            let Some((class, _)) = scope.qualified_name.rsplit_once('.') else {
                continue;
            };
            let found = functions
                .get(&scope.qualified_name)
                .cloned()
                .unwrap_or_default();
            let entry = summaries.entry(class.to_string()).or_default();
            for effect in found {
                if entry.len() < 8 && !entry.contains(&effect) {
                    entry.push(effect);
                }
            }
        }
    }
}

/// One function's own effects and the package functions it calls.
#[derive(Default)]
struct OwnEffects {
    every_rank: Vec<Reached>,
    rank_zero_writes: Vec<Reached>,
    callees: Vec<String>,
    builds_tensorflow: bool,
    issues_collectives: bool,
}

/// A function's own storage effects on every rank, its writes on rank 0,
/// and the package functions it calls on every rank.
fn own_effects(analysis: &Analysis, module: &ModuleAnalysis, index: usize) -> OwnEffects {
    let scope = &module.scopes[index];
    let mut found = OwnEffects::default();
    for site in &scope.facts.calls {
        let statement = span(site.statement);
        if matches!(
            site.statement,
            Stmt::FunctionDef(_) | Stmt::AsyncFunctionDef(_) | Stmt::ClassDef(_)
        ) || module.index.is_in_launcher(&statement)
        {
            continue;
        }
        found.issues_collectives |= !module.index.is_under_rank_zero(&statement)
            && effects::is_horovod_collective(site.call)
            && effects::resolved_callee(analysis, module, index, &site.call.func)
                .is_some_and(|callee| crate::analysis::library::is_horovod(&callee));
        if module.index.is_under_rank_zero(&statement) {
            found
                .rank_zero_writes
                .extend(reached(analysis, module, index, site).filter(|reached| {
                    matches!(
                        reached.effect,
                        Effect::Writes { .. } | Effect::SavesCheckpoint
                    )
                }));
            continue;
        }
        // The rank's own path, or a race the code handles, is no shared
        // write (asked last: following parameters to their callers is dear).
        let rank_own = || {
            race_is_handled(scope.body, &statement)
                || arguments_depend_on_rank(module, index, site.call)
        };
        let callee = effects::resolved_callee(analysis, module, index, &site.call.func);
        if let Some(callee) = callee
            .as_ref()
            .filter(|callee| effects::is_package_function(analysis.package, callee))
        {
            if !rank_own() {
                found.callees.push(callee.clone());
            }
            continue;
        }
        let effect = reached(analysis, module, index, site);
        found.builds_tensorflow |=
            effect.is_none() && callee.as_deref().is_some_and(builds_graph_ops);
        if let Some(effect) = effect.filter(|_| !rank_own()) {
            found.every_rank.push(effect);
        }
    }
    found
}

/// A TensorFlow call that adds ops to a graph (a dataset, a variable, a
/// layer), not one of its Python utilities for files, logs or flags.
fn builds_graph_ops(callee: &str) -> bool {
    const UTILITIES: &[&str] = &[
        "tensorflow.io.gfile.",
        "tensorflow.gfile.",
        "tensorflow.logging.",
        "tensorflow.get_logger",
        "tensorflow.app.",
        "tensorflow.flags.",
        "tensorflow.keras.preprocessing.",
        "tensorflow.keras.utils.",
        "tensorflow.config.",
    ];
    callee.starts_with("tensorflow.")
        && !UTILITIES.iter().any(|utility| callee.starts_with(utility))
}

/// The storage effect of one catalogued call (or of its name), with its place.
fn reached(
    analysis: &Analysis,
    module: &ModuleAnalysis,
    index: usize,
    site: &crate::analysis::index::CallSite,
) -> Option<Reached> {
    let scope = &module.scopes[index];
    let statement = span(site.statement);
    let known = effects::of_call(analysis, module, index, site.call);
    let (effect, guessed) = match known {
        Known::Catalogued(entry) => (
            entry
                .effects
                .iter()
                .find(|effect| happens_on_storage(effect, site.call))
                .cloned()?,
            false,
        ),
        Known::ByName(rule) => (rule.effect.clone(), true),
        Known::Nothing => return None,
    };
    if effects::path_is_per_process(analysis, module, index, site.call, &effect) {
        return None;
    }
    let source = &module.module.source;
    Some(Reached {
        path_tokens: path_argument(&effect, site.call)
            .map(path_tokens)
            .unwrap_or_default(),
        call: dotted_name(&site.call.func).unwrap_or_else(|| match site.call.func.as_ref() {
            Expr::Attribute(attribute) => format!("….{}", attribute.attr),
            _ => "a call".into(),
        }),
        relative_path: source.relative_path.clone(),
        line: source.location(span(site.call).start).line,
        guessed,
        skips_what_is_there: matches!(effect, Effect::Downloads { cached: true, .. })
            || under_file_test(scope.body, &statement),
        effect,
    })
}

/// The expression a call passes as the path of an effect.
pub fn path_argument<'c>(
    effect: &Effect,
    call: &'c rustpython_parser::ast::ExprCall,
) -> Option<&'c Expr> {
    let argument = match effect {
        Effect::Writes { path, .. }
        | Effect::Reads { path }
        | Effect::CreatesDirectory { path, .. }
        | Effect::Removes { path, .. } => path.as_ref(),
        Effect::Downloads { to, .. } => to.as_ref(),
        Effect::CallbackWrites { path } => path.as_ref(),
        _ => None,
    }?;
    argument.of(call)
}

/// The names, attributes and string pieces a path is built from
/// (`os.path.join(SAMPLE_DIR, "epoch_%03d.png" % epoch)` gives `SAMPLE_DIR`,
/// `epoch_` and `epoch`), without extensions or the functions that join them.
pub fn path_tokens(path: &Expr) -> Vec<String> {
    // The functions a path is built with say nothing of which file it is.
    const BUILDERS: &[&str] = &["os", "path", "join", "format", "str", "pathlib", "Path"];
    let mut tokens = Vec::new();
    walk_expression(path, &mut |inner| match inner {
        Expr::Name(name) => tokens.push(name.id.to_string()),
        Expr::Attribute(attribute) => tokens.push(attribute.attr.to_string()),
        Expr::Constant(constant) => {
            if let rustpython_parser::ast::Constant::Str(text) = &constant.value {
                // A file's extension says nothing of which file it is.
                let stem = match text.rsplit_once('.') {
                    Some((stem, extension))
                        if extension.len() <= 8
                            && extension
                                .chars()
                                .all(|character| character.is_ascii_alphanumeric()) =>
                    {
                        stem
                    }
                    _ => text.as_str(),
                };
                tokens.extend(
                    stem.split(|character: char| !character.is_alphanumeric() && character != '_')
                        .filter(|piece| piece.len() > 2)
                        .map(str::to_string),
                );
            }
        }
        _ => {}
    });
    tokens.retain(|token| !BUILDERS.contains(&token.as_str()));
    tokens.sort();
    tokens.dedup();
    tokens
}

/// Whether an effect of a catalogued call changes shared storage in this
/// call (`open(p)` reads; `os.makedirs(d, exist_ok=True)` races with nobody).
pub fn happens_on_storage(effect: &Effect, call: &rustpython_parser::ast::ExprCall) -> bool {
    match effect {
        Effect::CreatesDirectory {
            race_free: true, ..
        } => false,
        Effect::Downloads {
            when: Some(condition),
            ..
        } => condition.on(call) != Certainty::Fails,
        Effect::Writes {
            when: Some(condition),
            ..
        } => condition.on(call) != Certainty::Fails,
        Effect::CreatesDirectory {
            race_free_when: Some(condition),
            ..
        } => condition.on(call) != Certainty::Holds,
        other => other.changes_storage(),
    }
}

/// A call whose arguments are built from the rank (`f"out-{hvd.rank()}.png"`,
/// a `..._RANK` variable, a parameter every caller passes one): the rank's own.
pub fn arguments_depend_on_rank(
    module: &ModuleAnalysis,
    index: usize,
    call: &rustpython_parser::ast::ExprCall,
) -> bool {
    call.args
        .iter()
        .chain(call.keywords.iter().map(|keyword| &keyword.value))
        .any(|argument| effects::depends_on_rank(module, index, argument))
}

/// Whether a test asks the file system what is there
/// (`if not os.path.exists(path):`).
pub fn tests_for_files(test: &Expr) -> bool {
    let mut found = false;
    walk_expression(test, &mut |inner| {
        if let Expr::Call(call) = inner
            && let Some(name) = dotted_name(&call.func)
        {
            let last = name.rsplit('.').next().unwrap_or_default();
            found |= matches!(
                last,
                "exists"
                    | "isfile"
                    | "isdir"
                    | "Exists"
                    | "IsDirectory"
                    | "listdir"
                    | "is_file"
                    | "is_dir"
            );
        }
    });
    found
}

/// Under `if not os.path.exists(path):`, or after an early
/// `if os.path.exists(path): return` of the function.
pub fn under_file_test(body: &[Stmt], statement: &std::ops::Range<usize>) -> bool {
    let returns_early = body.iter().any(|earlier| {
        matches!(earlier, Stmt::If(node)
            if span(earlier).end <= statement.start
                && tests_for_files(&node.test)
                && node.body.iter().any(|inner| matches!(inner, Stmt::Return(_))))
    });
    returns_early
        || path_to(body, statement).is_some_and(|path| {
            path.iter()
                .any(|enclosing| matches!(enclosing, Stmt::If(node) if tests_for_files(&node.test)))
        })
}

/// The call sits in a `try` that catches the error a lost race raises, or
/// under a file lock (`with FileLock(...)`).
pub fn race_is_handled(body: &[Stmt], statement: &std::ops::Range<usize>) -> bool {
    path_to(body, statement).is_some_and(|path| {
        path.iter().any(|enclosing| match enclosing {
            Stmt::Try(node) => !node.handlers.is_empty(),
            Stmt::With(node) => node.items.iter().any(|item| {
                matches!(&item.context_expr, Expr::Call(lock)
                    if dotted_name(&lock.func).is_some_and(|name| name.ends_with("Lock")))
            }),
            _ => false,
        })
    })
}
