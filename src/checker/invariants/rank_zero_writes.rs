//! ## Invariant 7: rank 0 writes; downloads and folders do not race
//!
//! Every worker runs the same script. A checkpoint, export, image or log
//! written by each of them is N processes writing one file; a download made
//! by each races on a cold cache; `os.mkdir` of one folder fails on every
//! rank but the first.
//!
//! **Proven** when every write the checker knows is on rank 0 only (under a
//! rank-0 test, or a path that depends on the rank), and every download made
//! on every rank follows a rank-0 download of the same kind. **Violated**
//! when a known library write or download runs on every rank at the module's
//! level or in the training loop's function. **Unknown** when such a call is
//! in a helper the checker cannot place, or a call's name says it writes and
//! its receiver is unknown.

use rustpython_parser::ast::{Constant, Expr, Stmt};

use crate::checker::program::ScopedCall;
use crate::checker::{Decision, Invariant, Program, Verdict};
use crate::diagnostics::{Code, Severity};

pub const RANK_ZERO_WRITES: Code = Code::new(
    "DST307",
    "rank-zero-writes",
    Severity::Error,
    "Every write to shared storage happens on rank 0, downloads and folder creation do not race, and reads of what rank 0 wrote come after a barrier.",
);

pub struct RankZeroWrites;

/// Library functions that write a file.
const WRITERS: &[&str] = &[
    "matplotlib.pyplot.savefig",
    "numpy.save",
    "numpy.savez",
    "numpy.savez_compressed",
    "numpy.savetxt",
    "tensorflow.saved_model.save",
    "tensorflow.keras.models.save_model",
    "tensorflow.keras.utils.plot_model",
    "tensorflow.io.write_file",
    "tensorflow.train.write_graph",
    "imageio.imwrite",
    "imageio.imsave",
    "imageio.mimsave",
    "imageio.mimwrite",
    "scipy.misc.imsave",
    "shutil.rmtree",
    "shutil.copy",
    "shutil.copyfile",
    "os.remove",
    "os.unlink",
    "os.rmdir",
    "os.mkdir",
];

/// Library functions that download into a shared place.
const DOWNLOADS: &[&str] = &[
    "tensorflow.keras.utils.get_file",
    "tensorflow_datasets.load",
    "tensorflow.examples.tutorials.mnist.input_data.read_data_sets",
    "tensorflow.contrib.learn.datasets.mnist.read_data_sets",
    "urllib.request.urlretrieve",
    "urllib.urlretrieve",
    "wget.download",
];

/// Methods that write whatever receives them (a model, a checkpoint, a
/// figure, a PIL image, a summary writer).
const WRITING_METHODS: &[&str] = &[
    "save",
    "save_weights",
    "savefig",
    "add_summary",
    "to_csv",
    "save_to_file",
    "write_images",
    "extractall",
    "write_gif",
    "write_videofile",
];

/// Library functions that fetch from the network (a helper that calls one
/// and writes what it got downloads).
const FETCHES: &[&str] = &[
    "urllib.request.urlopen",
    "urllib2.urlopen",
    "requests.get",
    "six.moves.urllib.request.urlretrieve",
];

impl Invariant for RankZeroWrites {
    fn code(&self) -> Code {
        RANK_ZERO_WRITES
    }

    fn check(&self, program: &Program) -> Vec<Decision> {
        if !program.uses_horovod() || program.module.index.horovod_init.is_none() {
            return Vec::new();
        }
        let calls = program.calls();
        let mut decisions = Vec::new();
        let mut helpers = HelperEffects::default();
        for call in calls {
            if program.runs_on_rank_zero_only(call.scope, call.site)
                || race_is_handled(program, call)
                || program
                    .module
                    .index
                    .is_in_launcher(&crate::python::parse::span(call.site.statement))
                || path_depends_on_rank(program, call)
            {
                continue;
            }
            if let Some(decision) = reads_standard_input(program, call)
                .or_else(|| write(program, call))
                .or_else(|| download(program, calls, call))
                .or_else(|| helpers.decision(program, call))
            {
                decisions.push(decision);
            }
        }
        decisions
    }
}

/// What the package's own functions write or download on every rank,
/// through the functions they call, worked out once per function.
#[derive(Default)]
struct HelperEffects {
    known: std::collections::HashMap<String, Option<String>>,
}

impl HelperEffects {
    /// A call of a package function (or of a function whose name says it
    /// downloads) that writes or downloads on every rank.
    fn decision(&mut self, program: &Program, call: &ScopedCall) -> Option<Decision> {
        let line = program.line(call.range().start);
        let name = call.method().unwrap_or_default();
        let effect = match call.callee.as_deref() {
            // A function of this module: its own calls are checked where they are.
            Some(callee) if callee.starts_with(&format!("{}.", program.module.module.name)) => {
                return None;
            }
            Some(callee) if defines(program, callee) => self.effect(program, callee, 0)?,
            _ if name.to_ascii_lowercase().contains("download") => {
                format!("`{name}`, whose name says it downloads")
            }
            _ => return None,
        };
        Some(
            Decision::new(
                RANK_ZERO_WRITES,
                Verdict::Unknown,
                call.range(),
                format!("the call at line {line} runs on every rank and reaches {effect}: the ranks may race on shared storage"),
            )
            .with_suggestion("make the call on rank 0 first (`if hvd.rank() == 0:`), then a barrier, or give each rank its own path"),
        )
    }

    /// The first write or download a package function makes on every rank,
    /// described with its place.
    fn effect(&mut self, program: &Program, function: &str, depth: usize) -> Option<String> {
        if let Some(known) = self.known.get(function) {
            return known.clone();
        }
        // Assumed harmless while being worked out (recursion).
        self.known.insert(function.to_string(), None);
        let found = self.work_out(program, function, depth);
        self.known.insert(function.to_string(), found.clone());
        found
    }

    fn work_out(&mut self, program: &Program, function: &str, depth: usize) -> Option<String> {
        if depth > 6 {
            return None;
        }
        let owner = std::iter::once(program.others_and_self())
            .flatten()
            .find(|candidate| {
                candidate
                    .module
                    .scopes
                    .iter()
                    .any(|scope| scope.qualified_name == function)
            })?;
        let path = owner.module.module.source.relative_path.clone();
        let calls = owner.calls();
        let own_name = function.rsplit('.').next().unwrap_or_default();
        for call in calls
            .iter()
            .filter(|call| call.scope.qualified_name == function)
        {
            if owner.runs_on_rank_zero_only(call.scope, call.site)
                || path_depends_on_rank(&owner, call)
                || race_is_handled(&owner, call)
            {
                continue;
            }
            let line = owner.module.module.source.location(call.range().start).line;
            let what = call.method().unwrap_or("a call");
            let callee = call.callee.as_deref().unwrap_or_default();
            let direct = is_download(callee)
                || FETCHES.contains(&callee)
                || WRITERS.contains(&callee)
                || is_makedirs_without_exist_ok(call, callee)
                || (call.callee.is_none() && what.to_ascii_lowercase().contains("download"))
                || (call.callee.is_none()
                    && WRITING_METHODS.contains(&what)
                    && !defined_in_package(&owner, what));
            if direct {
                return Some(format!("`{what}` in {path} (line {line})"));
            }
            if !callee.is_empty()
                && defines(&owner, callee)
                && callee != function
                && let Some(found) = self.effect(&owner, callee, depth + 1)
            {
                return Some(found);
            }
        }
        own_name
            .to_ascii_lowercase()
            .contains("download")
            .then(|| format!("`{own_name}` in {path}, whose name says it downloads"))
    }
}

/// Whether a function of the package has this qualified name.
fn defines(program: &Program, function: &str) -> bool {
    program.analysis.modules.iter().any(|module| {
        module
            .scopes
            .iter()
            .any(|scope| scope.function.is_some() && scope.qualified_name == function)
    })
}

fn is_download(callee: &str) -> bool {
    DOWNLOADS.contains(&callee)
        || callee.starts_with("tensorflow.keras.datasets.") && callee.ends_with(".load_data")
}

/// `input()` on every rank: ranks other than 0 read end-of-file and stop.
fn reads_standard_input(program: &Program, call: &ScopedCall) -> Option<Decision> {
    let reads = matches!(call.site.call.func.as_ref(), rustpython_parser::ast::Expr::Name(name)
        if matches!(name.id.as_str(), "input" | "raw_input"))
        && !call
            .scope
            .bindings
            .is_bound(call.method().unwrap_or_default());
    reads.then(|| {
        let line = program.line(call.range().start);
        Decision::new(
            RANK_ZERO_WRITES,
            Verdict::Violated,
            call.range(),
            format!("`input()` at line {line} reads standard input on every rank: only rank 0 has a terminal, the others read end-of-file and stop"),
        )
        .with_suggestion("read the input on rank 0 and share it with `hvd.broadcast_object`, or take it from an argument")
    })
}

/// A call on every rank that writes.
fn write(program: &Program, call: &ScopedCall) -> Option<Decision> {
    let line = program.line(call.range().start);
    let callee = call.callee.as_deref().unwrap_or_default();
    let known = WRITERS.contains(&callee)
        || is_makedirs_without_exist_ok(call, callee)
        || opens_for_writing(call, callee)
        || saves_a_model(program, call);
    let by_method = call.callee.is_none()
        && call.method().is_some_and(|method| {
            WRITING_METHODS.contains(&method) && !defined_in_package(program, method)
        })
        && matches!(call.site.call.func.as_ref(), Expr::Attribute(_));
    if !known && !by_method {
        return None;
    }
    let what = call.method().unwrap_or("the call");
    // A file opened by a path the checker cannot read may be the rank's own.
    let opened_by_variable = opens_for_writing(call, callee)
        && !matches!(call.site.call.args.first(), Some(Expr::Constant(_)));
    let verdict = if known && !opened_by_variable && in_the_open(program, call) {
        Verdict::Violated
    } else {
        Verdict::Unknown
    };
    let message = match verdict {
        Verdict::Violated => format!(
            "`{what}` at line {line} writes to shared storage on every rank: N processes write the same file"
        ),
        _ => format!(
            "`{what}` at line {line} may write to shared storage, and runs on every rank as far as the checker can see"
        ),
    };
    Some(
        Decision::new(RANK_ZERO_WRITES, verdict, call.range(), message)
            .with_suggestion("run it under `if hvd.rank() == 0:`, or give each rank its own path"),
    )
}

/// A method of the package's own classes: its writes are checked where it
/// is defined.
fn defined_in_package(program: &Program, method: &str) -> bool {
    program
        .analysis
        .modules
        .iter()
        .flat_map(|module| module.scopes.iter())
        .any(|scope| scope.class.is_some() && scope.name() == method)
}

/// A download on every rank with no rank-0 download before it.
fn download(program: &Program, calls: &[ScopedCall], call: &ScopedCall) -> Option<Decision> {
    let callee = call.callee.as_deref()?;
    if !is_download(callee) {
        return None;
    }
    let line = program.line(call.range().start);
    let at = call.range().start;
    let first_on_rank_zero = calls.iter().any(|earlier| {
        earlier.range().start < at
            && earlier.callee.as_deref() == Some(callee)
            && program.runs_on_rank_zero_only(earlier.scope, earlier.site)
    });
    if first_on_rank_zero {
        let extracts = crate::analysis::walk::keyword(call.site.call, "extract")
            .is_some_and(|keyword| !matches!(&keyword.value, Expr::Constant(constant) if constant.value == Constant::Bool(false)));
        if extracts {
            return Some(Decision::new(
                RANK_ZERO_WRITES,
                Verdict::Unknown,
                call.range(),
                format!("`get_file(..., extract=True)` at line {line} runs again on every rank after rank 0's download, and extracts the archive into the shared folder each time"),
            ).with_suggestion("extract on rank 0 only, and pass the extracted path to the other ranks"));
        }
        return None;
    }
    // A download in code written with Horovod is the user's choice (Horovod's
    // own Keras examples load MNIST on every rank).
    let verdict = if in_the_open(program, call) && !program.written_with_horovod {
        Verdict::Violated
    } else {
        Verdict::Unknown
    };
    Some(
        Decision::new(
            RANK_ZERO_WRITES,
            verdict,
            call.range(),
            format!("the download at line {line} runs on every rank at once, with no rank-0 download and barrier before it: the ranks race on a cold cache"),
        )
        .with_suggestion("download on rank 0 first (`if hvd.rank() == 0:`), then wait with a barrier, then load on every rank"),
    )
}

/// A race the code handles itself: the call sits in a `try` that catches
/// the error a lost race raises, or under a file lock (`with FileLock(...)`).
fn race_is_handled(program: &Program, call: &ScopedCall) -> bool {
    program.enclosing_statements(call.scope, call.site).iter().any(|statement| match statement {
        Stmt::Try(node) => !node.handlers.is_empty(),
        Stmt::With(node) => node.items.iter().any(|item| {
            matches!(&item.context_expr, Expr::Call(lock)
                if crate::analysis::walk::dotted_name(&lock.func).is_some_and(|name| name.ends_with("Lock")))
        }),
        _ => false,
    })
}

/// Module level, or the function of a training loop: it runs on every rank.
fn in_the_open(program: &Program, call: &ScopedCall) -> bool {
    let scope_index = call.scope_index;
    scope_index == 0
        || program
            .module
            .sites
            .iter()
            .any(|site| site.scope == scope_index)
        || call.scope.name() == "main"
}

/// `model.save(...)` or `model.save_weights(...)` of a name the index knows
/// holds a Keras model.
fn saves_a_model(program: &Program, call: &ScopedCall) -> bool {
    let Expr::Attribute(attribute) = call.site.call.func.as_ref() else {
        return false;
    };
    let Expr::Name(receiver) = attribute.value.as_ref() else {
        return false;
    };
    matches!(attribute.attr.as_str(), "save" | "save_weights")
        && [call.scope_index, 0].iter().any(|index| {
            program
                .module
                .models
                .get(*index)
                .is_some_and(|models| models.contains(receiver.id.as_str()))
        })
}

fn is_makedirs_without_exist_ok(call: &ScopedCall, callee: &str) -> bool {
    callee == "os.makedirs"
        && !crate::analysis::walk::keyword(call.site.call, "exist_ok").is_some_and(|keyword| {
            !matches!(&keyword.value, Expr::Constant(constant) if constant.value == Constant::Bool(false))
        })
}

/// `open(path, "w")` and the other writing modes.
fn opens_for_writing(call: &ScopedCall, callee: &str) -> bool {
    let is_open = matches!(call.site.call.func.as_ref(), Expr::Name(name) if name.id.as_str() == "open")
        || callee == "io.open";
    let mode = Program::argument(call.site.call, "mode", 1);
    is_open
        && matches!(mode, Some(Expr::Constant(constant))
            if matches!(&constant.value, Constant::Str(mode) if mode.contains(['w', 'a', 'x'])))
}

/// A path built from the rank: `hvd.rank()`, or a launcher's rank variable
/// (`os.environ["HOROVOD_RANK"]`), directly, through names the scope
/// assigns, or through a parameter every caller in the module passes one.
fn path_depends_on_rank(program: &Program, call: &ScopedCall) -> bool {
    let arguments: Vec<&Expr> = call
        .site
        .call
        .args
        .iter()
        .chain(call.site.call.keywords.iter().map(|keyword| &keyword.value))
        .collect();
    if depends_on_rank(program, call.scope, arguments.clone()) {
        return true;
    }
    // A helper's parameter: every call of the helper passes a rank path.
    let parameters: Vec<(usize, &String)> = call
        .scope
        .parameters
        .iter()
        .enumerate()
        .filter(|(_, parameter)| {
            arguments.iter().any(|argument| {
                let mut reads = false;
                crate::analysis::walk::walk_expression(argument, &mut |inner| {
                    reads |=
                        matches!(inner, Expr::Name(name) if name.id.as_str() == parameter.as_str());
                });
                reads
            })
        })
        .collect();
    if parameters.is_empty() || call.scope.function.is_none() {
        return false;
    }
    let callers: Vec<&ScopedCall> = program
        .calls()
        .iter()
        .filter(|caller| matches!(caller.site.call.func.as_ref(), Expr::Name(name) if name.id.as_str() == call.scope.name()))
        .collect();
    !callers.is_empty()
        && callers.iter().all(|caller| {
            parameters.iter().any(|(index, parameter)| {
                Program::argument(caller.site.call, parameter, *index)
                    .is_some_and(|passed| depends_on_rank(program, caller.scope, vec![passed]))
            })
        })
}

/// Whether expressions read the rank, through up to three assignments
/// (`rank = ...; name = ...; path = ...`).
fn depends_on_rank<'e>(
    program: &Program,
    scope: &'e crate::analysis::training::Scope<'e>,
    mut frontier: Vec<&'e Expr>,
) -> bool {
    let mentions_rank = |expr: &Expr| {
        let mut found = program.calls_horovod_function(scope, expr, "rank")
            || program.calls_horovod_function(scope, expr, "local_rank");
        crate::analysis::walk::walk_expression(expr, &mut |inner| {
            if let Expr::Constant(constant) = inner
                && let Constant::Str(text) = &constant.value
                && text.ends_with("RANK")
                && text
                    .chars()
                    .all(|character| character.is_ascii_uppercase() || character == '_')
            {
                found = true;
            }
        });
        found
    };
    for _ in 0..4 {
        if frontier.iter().any(|expr| mentions_rank(expr)) {
            return true;
        }
        let mut next = Vec::new();
        for expr in &frontier {
            crate::analysis::walk::walk_expression(expr, &mut |inner| {
                if let Expr::Name(name) = inner {
                    next.extend(
                        scope
                            .facts
                            .assignments
                            .iter()
                            .filter(|assignment| assignment.name == name.id.as_str())
                            .map(|assignment| assignment.value),
                    );
                }
            });
        }
        frontier = next;
    }
    false
}
