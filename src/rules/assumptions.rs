//! Assumption warnings: the code shapes the
//! rewrite relies on, reported at the statement that breaks them.

use std::collections::HashMap;

use rustpython_parser::ast::{Expr, Stmt};

use crate::analysis::bindings::BindingKind;
use crate::analysis::keras_version::{self, KerasGeneration};
use crate::analysis::library::{self, LibraryClass};
use crate::analysis::training::Scope;
use crate::analysis::walk::{
    for_each_statement, is_scope, nested_bodies, walk_statement_expressions,
};
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::parse::span;
use crate::rules::rewrite::ModuleRewrite;

pub const IMPORT_NOT_AT_TOP: Code = Code::new(
    "DST001",
    "import-not-at-top",
    Severity::Warning,
    "An import is not at the top of the module, so it runs after the Horovod init block that follows the imports.",
);

pub const TENSORFLOW_BOUND_WITHOUT_IMPORT: Code = Code::new(
    "DST002",
    "tensorflow-bound-without-import",
    Severity::Warning,
    "TensorFlow is bound by other means than an import statement, which the tool resolves only in the forms it knows.",
);

pub const TENSORFLOW_MEMBER_ALIASED: Code = Code::new(
    "DST003",
    "tensorflow-member-aliased",
    Severity::Warning,
    "A member of TensorFlow is assigned to a variable; a later reassignment of the variable would not be followed.",
);

pub const CREATED_MORE_THAN_ONCE: Code = Code::new(
    "DST005",
    "created-more-than-once",
    Severity::Warning,
    "A dataset, optimizer or checkpoint is created more than once or aliased; the rewrite assumes one per training loop.",
);

pub const REASSIGNED: Code = Code::new(
    "DST006",
    "reassigned",
    Severity::Warning,
    "A variable holding an optimizer, dataset or checkpoint is reassigned to something else; code after it may not use the distributed one.",
);

pub const CREATED_CONDITIONALLY: Code = Code::new(
    "DST007",
    "created-conditionally",
    Severity::Warning,
    "An optimizer is created conditionally or in a loop; the rewrite assumes one optimizer per training loop.",
);

pub const GLOBAL_OPTIMIZER_CHANGED: Code = Code::new(
    "DST009",
    "global-optimizer-changed",
    Severity::Warning,
    "A global optimizer used in functions is defined or changed after them, so which one they see depends on call order.",
);

pub const FUNCTION_PASSED_AS_VALUE: Code = Code::new(
    "DST012",
    "function-passed-as-value",
    Severity::Warning,
    "A function that trains is assigned or passed as a value; the loop may be missed.",
);

pub const TRAINING_LOOP_DEFINED_CONDITIONALLY: Code = Code::new(
    "DST013",
    "training-loop-defined-conditionally",
    Severity::Warning,
    "A function that trains is defined conditionally; which definition runs is decided at run time.",
);

pub const KERAS_3: Code = Code::new(
    "DST103",
    "keras-3",
    Severity::Warning,
    "Keras 3 is used; Horovod needs tf.keras 2 (`tf_keras`, `TF_USE_LEGACY_KERAS=1`).",
);

pub const KERAS_2: Code = Code::new(
    "DST120",
    "keras-2",
    Severity::Info,
    "Standalone `keras` is Keras 2 here (pinned, or only Keras 2 has the APIs used): Horovod's `horovod.keras` is used.",
);

pub const KERAS_1_API: Code = Code::new(
    "DST141",
    "keras-1-api",
    Severity::Error,
    "The module calls Keras 1 API that only Keras 2.1 or earlier keeps (`merge(..., mode=...)`, `Merge`, `nb_epoch=`): the rewrite's optimizer and broadcast need a later Keras 2, so it is left as written.",
);

pub const MODEL_ASSUMED: Code = Code::new(
    "DST110",
    "model-assumed",
    Severity::Info,
    "A `fit` receiver that the tool cannot resolve is assumed to be a Keras model.",
);

pub const CODES: &[Code] = &[
    IMPORT_NOT_AT_TOP,
    TENSORFLOW_BOUND_WITHOUT_IMPORT,
    TENSORFLOW_MEMBER_ALIASED,
    CREATED_MORE_THAN_ONCE,
    REASSIGNED,
    CREATED_CONDITIONALLY,
    GLOBAL_OPTIMIZER_CHANGED,
    FUNCTION_PASSED_AS_VALUE,
    TRAINING_LOOP_DEFINED_CONDITIONALLY,
    KERAS_3,
    KERAS_2,
    KERAS_1_API,
    MODEL_ASSUMED,
];

/// Standalone `keras`: Keras 2 (rewritten with `horovod.keras`) or Keras 3
/// (which Horovod cannot drive), saying how the tool decided.
fn report_keras_generation(rewrite: &mut ModuleRewrite, at: std::ops::Range<usize>) {
    let pin = rewrite.analysis.keras_pin.as_ref();
    match keras_version::generation_of(pin, rewrite.module.module) {
        KerasGeneration::Two { reason } => rewrite.diagnose(Diagnostic::new(
            KERAS_2,
            at,
            format!("standalone `keras` is Keras 2 here ({reason}): its Horovod integration, `horovod.keras`, is used"),
        )),
        KerasGeneration::Three { reason } => rewrite.diagnose(
            Diagnostic::new(KERAS_3, at, format!("standalone `keras` is taken for Keras 3 ({reason}); Horovod's Keras integration needs Keras 2"))
                .with_suggestion("pin `keras<3` (or a TensorFlow before 2.16) in requirements.txt, or install `tf_keras`, import it instead of `keras`, and set TF_USE_LEGACY_KERAS=1"),
        ),
    }
}

pub fn check(rewrite: &mut ModuleRewrite) {
    imports_at_top(rewrite);
    tensorflow_bindings(rewrite);
    optimizer_lifecycle(rewrite);
    training_functions_as_values(rewrite);
    assumed_models(rewrite);
}

fn imports_tensorflow_or_keras(stmt: &Stmt) -> bool {
    let is_ml = |name: &str| {
        let first = name.split('.').next().unwrap_or_default();
        matches!(first, "tensorflow" | "keras" | "tf_keras" | "horovod")
    };
    match stmt {
        Stmt::Import(import) => import.names.iter().any(|alias| is_ml(alias.name.as_str())),
        Stmt::ImportFrom(import) => import.module.as_deref().is_some_and(is_ml),
        _ => false,
    }
}

/// A late import that changes what the init block set up: Horovod again,
/// or a name the generated code uses (`hvd`, `tf`) bound to something else.
/// `import tensorflow as tf` again, or a Keras layer, changes nothing.
fn rebinds_what_init_uses(stmt: &Stmt) -> bool {
    let rebinds = |module: &str, bound: &str| {
        module.starts_with("horovod")
            || bound == "hvd"
            || (bound == "tf" && module != "tensorflow" && module != "tensorflow.compat.v1")
    };
    match stmt {
        Stmt::Import(import) => import.names.iter().any(|alias| {
            let bound = alias
                .asname
                .as_deref()
                .unwrap_or_else(|| alias.name.split('.').next().unwrap_or_default());
            rebinds(alias.name.as_str(), bound)
        }),
        Stmt::ImportFrom(import) => {
            let module = import.module.as_deref().unwrap_or_default();
            import.names.iter().any(|alias| {
                let bound = alias.asname.as_deref().unwrap_or(alias.name.as_str());
                rebinds(module, bound)
            })
        }
        _ => false,
    }
}

/// Imports at the top of the module (tensorflow imports in functions count too).
fn imports_at_top(rewrite: &mut ModuleRewrite) {
    let body = &rewrite.module.module.body;
    let mut seen_code = false;
    let mut late = Vec::new();
    for (index, stmt) in body.iter().enumerate() {
        match stmt {
            // A late import of a plotting or data library runs after the
            // init block harmlessly; one of TensorFlow, Keras or Horovod may
            // configure what the init block already set up.
            Stmt::Import(_) | Stmt::ImportFrom(_) => {
                let after_init = rewrite
                    .horovod_initialised_at
                    .is_none_or(|initialised_at| span(stmt).start >= initialised_at);
                if seen_code && after_init && rebinds_what_init_uses(stmt) {
                    late.push(span(stmt));
                }
            }
            Stmt::Expr(_) if index == 0 => {}
            Stmt::Try(node)
                if node
                    .body
                    .iter()
                    .all(|inner| matches!(inner, Stmt::Import(_) | Stmt::ImportFrom(_))) => {}
            _ => {
                seen_code |=
                    is_scope(stmt) || !matches!(stmt, Stmt::If(_) | Stmt::Assign(_) | Stmt::Expr(_))
            }
        }
    }
    for range in late {
        rewrite.diagnose(
            Diagnostic::new(IMPORT_NOT_AT_TOP, range, "import after other code: it runs after the Horovod init block, which follows the imports at the top")
                .with_suggestion("move the import to the import block at the top of the module"),
        );
    }
    for scope in rewrite.module.scopes.iter().skip(1) {
        for stmt in scope.body {
            if imports_tensorflow_or_keras(stmt) {
                rewrite.sink.diagnostics.push(
                    Diagnostic::new(IMPORT_NOT_AT_TOP, span(stmt), format!("TensorFlow is imported inside `{}`: generated code uses a module-level import instead", scope.name()))
                        .with_suggestion("import tensorflow at the top of the module"),
                );
            }
        }
    }
}

/// Whether a name bound by `binding` is assigned again anywhere in the
/// module: only then may the alias the tool resolved not be what runs.
fn reassigned(rewrite: &ModuleRewrite, name: &str, binding: &std::ops::Range<usize>) -> bool {
    rewrite.module.scopes.iter().any(|scope| {
        scope
            .facts
            .assignments
            .iter()
            .any(|assignment| assignment.name == name && span(assignment.statement) != *binding)
    })
}

/// TensorFlow bound only by import; members not aliased.
fn tensorflow_bindings(rewrite: &mut ModuleRewrite) {
    let mut bindings: Vec<(String, crate::analysis::bindings::Binding)> = Vec::new();
    for scope in &rewrite.module.scopes {
        for (name, binding) in scope.bindings.iter() {
            if !bindings
                .iter()
                .any(|(_, known)| known.statement == binding.statement)
            {
                bindings.push((name.clone(), binding.clone()));
            }
        }
    }
    bindings.sort_by_key(|(_, binding)| binding.statement.start);
    let mut keras_3_reported = false;
    for (name, binding) in bindings {
        match binding.kind {
            BindingKind::DynamicImport if library::is_tensorflow(&library::canonical_name(&binding.qualified)) => rewrite.diagnose(
                Diagnostic::new(TENSORFLOW_BOUND_WITHOUT_IMPORT, binding.statement.clone(), format!("`{name}` is bound to {} without an import statement; the tool resolved it, but other dynamic forms would be missed", binding.qualified))
                    .with_suggestion(format!("write `import {} as {name}`", binding.qualified)),
            ),
            BindingKind::MemberAlias
                if library::matters_to_rewrite(&library::canonical_name(&binding.qualified))
                    && reassigned(rewrite, &name, &binding.statement) => rewrite.diagnose(
                Diagnostic::new(TENSORFLOW_MEMBER_ALIASED, binding.statement.clone(), format!("`{name}` aliases `{}`; the tool resolved it here, but a later reassignment of `{name}` would not be followed", binding.qualified))
                    .with_suggestion(format!("use `{}` directly, or import it with `from ... import`", binding.qualified)),
            ),
            BindingKind::Import if library::is_standalone_keras(&binding.qualified) && !keras_3_reported => {
                keras_3_reported = true;
                report_keras_generation(rewrite, binding.statement.clone());
            }
            _ => {}
        }
    }
    // `getattr(tf.keras.optimizers, name)`: a tensorflow member chosen at run time.
    let module = rewrite.module;
    for scope in &module.scopes {
        for stmt in scope.facts.statements.iter().copied() {
            if let Stmt::Assign(assign) = stmt
                && let Expr::Call(call) = assign.value.as_ref()
                && matches!(call.func.as_ref(), Expr::Name(name) if name.id.as_str() == "getattr")
                && call
                    .args
                    .first()
                    .and_then(|target| scope.bindings.resolve(target))
                    .is_some_and(|name| library::is_tensorflow(&name))
            {
                rewrite.diagnose(
                    Diagnostic::new(TENSORFLOW_MEMBER_ALIASED, span(stmt), "a TensorFlow member is looked up by name at run time; the tool cannot tell what it is, so objects built from it are not rewritten")
                        .with_suggestion("construct the optimizer with an explicit class, e.g. `tf.keras.optimizers.Adam(...)`"),
                );
            }
        }
    }
}

/// Each optimizer created once, unconditionally, not aliased or reassigned.
/// Optimizers, each created once, unconditionally, not aliased or
/// reassigned; a module-level one not changed after the functions using it.
fn optimizer_lifecycle(rewrite: &mut ModuleRewrite) {
    let module = rewrite.module;
    for (index, scope) in module.scopes.iter().enumerate() {
        let found = optimizer_assignments(rewrite, scope);
        report_creations(rewrite, scope, &found);
        report_reassignments(rewrite, &found);
        if index == 0 {
            report_global_changes(rewrite, &found.creations);
        }
    }
}

type Creations = HashMap<String, Vec<std::ops::Range<usize>>>;

/// The optimizer assignments of one scope.
struct OptimizerAssignments {
    /// Each name's optimizer constructions, in source order.
    creations: Creations,
    /// Other assignments: the name, the statement, whether it is `a = b`.
    others: Vec<(String, std::ops::Range<usize>, bool)>,
    /// Constructions inside a conditional or loop block.
    conditional: Vec<std::ops::Range<usize>>,
}

fn optimizer_assignments(rewrite: &ModuleRewrite, scope: &Scope) -> OptimizerAssignments {
    let mut creations: HashMap<String, Vec<std::ops::Range<usize>>> = HashMap::new();
    let mut others: Vec<(String, std::ops::Range<usize>, bool)> = Vec::new();
    let mut conditional = Vec::new();
    visit_assignments(scope.body, false, &mut |stmt, nested| {
        let Stmt::Assign(assign) = stmt else { return };
        let is_optimizer = matches!(assign.value.as_ref(), Expr::Call(call) if matches!(rewrite.library_class_of_call(scope, call), Some(LibraryClass::Optimizer(_))));
        // `opt = hvd.DistributedOptimizer(opt)` wraps the optimizer; it does not replace it.
        if rewrite.calls_horovod_attribute(&assign.value, "DistributedOptimizer") {
            return;
        }
        for target in &assign.targets {
            let Expr::Name(name) = target else { continue };
            if is_optimizer {
                creations
                    .entry(name.id.to_string())
                    .or_default()
                    .push(span(stmt));
                if nested {
                    conditional.push(span(stmt));
                }
            } else {
                let is_alias = matches!(assign.value.as_ref(), Expr::Name(_));
                others.push((name.id.to_string(), span(stmt), is_alias));
            }
        }
    });
    OptimizerAssignments {
        creations,
        others,
        conditional,
    }
}

fn report_creations(rewrite: &mut ModuleRewrite, scope: &Scope, found: &OptimizerAssignments) {
    let creations = &found.creations;
    // An Estimator's model_fn builds its one optimizer under `if mode ==
    // TRAIN:` by design: one creation per call, which is what is assumed.
    let single_in_model_function = creations.values().map(Vec::len).sum::<usize>() == 1
        && rewrite.module.sites.iter().any(|site| {
            site.is_model_function
                && site.pattern == crate::analysis::training::TrainingPattern::Estimator
                && rewrite.module.scopes[site.scope].qualified_name == scope.qualified_name
        });
    let conditional = if single_in_model_function {
        &[][..]
    } else {
        &found.conditional[..]
    };
    for range in conditional.iter().cloned() {
        rewrite.diagnose(
            Diagnostic::new(CREATED_CONDITIONALLY, range, "the optimizer is created inside a conditional or loop block, but the rewrite assumes one optimizer per training loop: check that the one used for training is scaled and wrapped")
                .with_suggestion("choose the optimizer class conditionally, then create it once unconditionally"),
        );
    }
    let mut names: Vec<&String> = creations.keys().collect();
    names.sort();
    for name in names {
        let ranges = &creations[name];
        for (previous, range) in ranges.iter().zip(ranges.iter().skip(1)) {
            // Used (compiled, handed on) before it is made again: each
            // optimizer drives the training between, and each is rewritten.
            if reads_name_between(scope, name, previous.end, range.start) {
                continue;
            }
            rewrite.diagnose(
                Diagnostic::new(CREATED_MORE_THAN_ONCE, range.clone(), format!("optimizer `{name}` is created more than once; the rewrite assumes one optimizer per training loop"))
                    .with_suggestion("create the optimizer once"),
            );
        }
    }
}

/// Whether the scope reads `name` between two offsets.
fn reads_name_between(scope: &Scope, name: &str, start: usize, end: usize) -> bool {
    scope.facts.statements.iter().any(|stmt| {
        let mut reads = false;
        crate::analysis::walk::walk_statement_expressions(stmt, &mut |expr| {
            reads |= matches!(expr, Expr::Name(found) if found.id.as_str() == name
                && (start..end).contains(&span(expr).start));
        });
        reads
    })
}

fn report_reassignments(rewrite: &mut ModuleRewrite, found: &OptimizerAssignments) {
    let creations = &found.creations;
    for (name, range, is_alias) in &found.others {
        let Some(first) = creations.get(name).and_then(|ranges| ranges.first()) else {
            // `opt2 = opt`: an alias of an optimizer.
            if *is_alias {
                let source = rewrite.source(range.clone()).to_string();
                let aliased = source
                    .split('=')
                    .nth(1)
                    .map(str::trim)
                    .unwrap_or_default()
                    .to_string();
                if creations.contains_key(&aliased) {
                    rewrite.diagnose(
                        Diagnostic::new(CREATED_MORE_THAN_ONCE, range.clone(), format!("optimizer `{aliased}` is aliased as `{name}`; uses through the alias are not followed"))
                            .with_suggestion(format!("use `{aliased}` directly")),
                    );
                }
            }
            continue;
        };
        if range.start > first.start {
            rewrite.diagnose(
                Diagnostic::new(REASSIGNED, range.clone(), format!("`{name}` held an optimizer and is reassigned here; code after this line may no longer use the distributed optimizer"))
                    .with_suggestion("use a new name for the new value"),
            );
        }
    }
}

/// A module-level optimizer used in functions must not change after them:
/// which one a function sees would depend on call order.
fn report_global_changes(rewrite: &mut ModuleRewrite, creations: &Creations) {
    let module = rewrite.module;
    for (name, ranges) in creations {
        let users: Vec<&crate::analysis::training::Scope> = module
            .scopes
            .iter()
            .skip(1)
            .filter(|function| function.parent == Some(0) && uses_name(function.body, name))
            .collect();
        let Some(first_function) = users
            .iter()
            .filter_map(|function| function.range())
            .map(|range| range.start)
            .min()
        else {
            continue;
        };
        // Defined once, before any call of a function that uses it: every
        // call sees that one optimizer.
        let called_before = |at: usize| {
            module.scopes[0].facts.calls.iter().any(|site| {
                span(site.call).start < at
                    && matches!(site.call.func.as_ref(), Expr::Name(callee)
                        if users.iter().any(|user| user.name() == callee.id.as_str()))
            })
        };
        for range in ranges.iter().filter(|range| range.start > first_function) {
            if ranges.len() == 1 && !called_before(range.start) {
                continue;
            }
            rewrite.diagnose(
                Diagnostic::new(GLOBAL_OPTIMIZER_CHANGED, range.clone(), format!("global optimizer `{name}` is (re)defined after a function that uses it; which optimizer that function sees depends on call order"))
                    .with_suggestion("define the optimizer once, before the functions that use it"),
            );
        }
    }
}

/// Visits assignments, telling whether each runs conditionally. A `with`
/// block (`with strategy.scope():`) and the `if __name__ == "__main__":`
/// entry point run their body exactly once: not conditional.
fn visit_assignments<'a>(body: &'a [Stmt], nested: bool, visit: &mut dyn FnMut(&'a Stmt, bool)) {
    for stmt in body {
        visit(stmt, nested);
        match stmt {
            Stmt::With(with) => visit_assignments(&with.body, nested, visit),
            Stmt::If(node) if is_main_guard(&node.test) => {
                visit_assignments(&node.body, nested, visit);
                visit_assignments(&node.orelse, true, visit);
            }
            _ if !is_scope(stmt) => {
                for inner in nested_bodies(stmt) {
                    visit_assignments(inner, true, visit);
                }
            }
            _ => {}
        }
    }
}

/// `__name__ == "__main__"` (either way round).
fn is_main_guard(test: &Expr) -> bool {
    let Expr::Compare(compare) = test else {
        return false;
    };
    let is_name = |expr: &Expr| matches!(expr, Expr::Name(name) if name.id.as_str() == "__name__");
    let is_main = |expr: &Expr| matches!(expr, Expr::Constant(rustpython_parser::ast::ExprConstant { value: rustpython_parser::ast::Constant::Str(text), .. }) if text == "__main__");
    match (compare.ops.as_slice(), compare.comparators.as_slice()) {
        ([rustpython_parser::ast::CmpOp::Eq], [right]) => {
            (is_name(&compare.left) && is_main(right)) || (is_main(&compare.left) && is_name(right))
        }
        _ => false,
    }
}

fn uses_name(body: &[Stmt], name: &str) -> bool {
    let mut used = false;
    for_each_statement(body, true, &mut |stmt| {
        walk_statement_expressions(stmt, &mut |expr| {
            if let Expr::Name(candidate) = expr
                && candidate.id.as_str() == name
            {
                used = true;
            }
        });
    });
    used
}

/// Training functions passed as values or defined conditionally.
fn training_functions_as_values(rewrite: &mut ModuleRewrite) {
    let module = rewrite.module;
    let functions = &rewrite.analysis.functions;
    let trains = |qualified: &str| {
        functions
            .get(qualified)
            .is_some_and(|summary| !summary.reaches.is_empty())
    };
    for scope in module.scopes.iter().skip(1) {
        if trains(&scope.qualified_name) && scope.defined_conditionally && scope.class.is_none() {
            let range = scope.range().unwrap_or_default();
            rewrite.diagnose(
                Diagnostic::new(TRAINING_LOOP_DEFINED_CONDITIONALLY, range, format!("`{}` trains and is defined conditionally; every definition is rewritten, but which one runs is decided at run time", scope.name()))
                    .with_suggestion("define one training function and branch inside it"),
            );
        }
    }
    let training_names: Vec<String> = module
        .scopes
        .iter()
        .filter(|scope| {
            scope.parent == Some(0) && scope.class.is_none() && trains(&scope.qualified_name)
        })
        .map(|scope| scope.name().to_string())
        .collect();
    for scope in &module.scopes {
        for stmt in scope.facts.statements.iter().copied() {
            if is_scope(stmt) {
                continue;
            }
            let mut callee_ranges = Vec::new();
            walk_statement_expressions(stmt, &mut |expr| {
                if let Expr::Call(call) = expr {
                    callee_ranges.push(span(call.func.as_ref()));
                    // `app.run(main)` (absl, tf.compat.v1.app) calls `main`: an entry
                    // point, not a function that escapes analysis.
                    if scope.bindings.resolve(&call.func).is_some_and(|callee| {
                        matches!(
                            callee.as_str(),
                            "absl.app.run" | "tensorflow.app.run" | "tensorflow.compat.v1.app.run"
                        )
                    }) && let Some(first) = call.args.first().or_else(|| {
                        call.keywords
                            .iter()
                            .find(|keyword| keyword.arg.as_deref() == Some("main"))
                            .map(|keyword| &keyword.value)
                    }) {
                        callee_ranges.push(span(first));
                    }
                }
            });
            walk_statement_expressions(stmt, &mut |expr| {
                if let Expr::Name(name) = expr
                    && name.ctx == rustpython_parser::ast::ExprContext::Load
                    && training_names
                        .iter()
                        .any(|training| training == name.id.as_str())
                    && !callee_ranges.contains(&span(expr))
                    && names_the_module_function(module, scope, name.id.as_str(), span(expr).start)
                {
                    rewrite.sink.diagnostics.push(
                        Diagnostic::new(FUNCTION_PASSED_AS_VALUE, span(expr), format!("`{}` trains a model and is used as a value here; calls through other names are not followed", name.id))
                            .with_suggestion(format!("call `{}` directly", name.id)),
                    );
                }
            });
        }
    }
}

/// Whether `name`, read at `at` in `scope`, is the module's function of
/// that name: not a parameter or local of the scope or of a function
/// around it (`def __init__(self, train, test)` reading `train['X']`), nor
/// a top-level name bound to something else by then, or not yet defined.
fn names_the_module_function(
    module: &crate::analysis::training::ModuleAnalysis,
    scope: &Scope,
    name: &str,
    at: usize,
) -> bool {
    let mut current = Some(scope);
    while let Some(enclosing) = current.filter(|enclosing| enclosing.function.is_some()) {
        let local = enclosing
            .parameters
            .iter()
            .any(|parameter| parameter == name)
            || enclosing
                .facts
                .assignments
                .iter()
                .any(|assignment| assignment.name == name)
            || defines_locally(enclosing.body, name);
        if local {
            return false;
        }
        current = enclosing.parent.map(|parent| &module.scopes[parent]);
    }
    // At the top level, a read before the `def` runs reads something else.
    let top_level_at = scope.function.is_none().then_some(at);
    module
        .module
        .definition_at(name, top_level_at)
        .is_some_and(|definition| top_level_at.is_none_or(|at| span(definition).start <= at))
}

/// Whether a function body defines a function or class of that name (a
/// `@tf.custom_gradient` function's own `def grad(dy)`).
fn defines_locally(body: &[Stmt], name: &str) -> bool {
    let mut found = false;
    crate::analysis::walk::for_each_statement(body, false, &mut |statement| {
        found |= match statement {
            Stmt::FunctionDef(function) => function.name.as_str() == name,
            Stmt::AsyncFunctionDef(function) => function.name.as_str() == name,
            Stmt::ClassDef(class) => class.name.as_str() == name,
            _ => false,
        };
    });
    found
}

fn assumed_models(rewrite: &mut ModuleRewrite) {
    let assumed = rewrite.module.assumed_models.clone();
    for (_, name, range) in assumed {
        rewrite.diagnose(Diagnostic::new(
            MODEL_ASSUMED,
            range,
            format!("`{name}` is a parameter; it is assumed to be a Keras model because `{name}.fit(...)` passes Keras-only arguments"),
        ));
    }
}
