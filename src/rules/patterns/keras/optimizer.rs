//! The optimizer a Keras model is compiled with, found where it is compiled
//! (this module, a factory, another module) and wrapped in
//! `hvd.DistributedOptimizer`, built from its name when it is a string.

use crate::rules::passes::learning_rate::OPTIMIZER_NOT_FOUND;

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::analysis::training::calls_in_scope;
use crate::rules::rewrite::ModuleRewrite;

use crate::analysis::library::{self, LibraryClass, optimizer_for_string};
use crate::analysis::training::Scope;
use crate::analysis::walk::{dotted_name, in_other_branches, keyword};
use crate::diagnostics::Diagnostic;
use crate::python::edit::Edit;
use crate::python::parse::span;

/// The `compile` call of a model: in the fit's scope first, then anywhere in the module.
/// Every `receiver.compile(...)` of the first scope that has one (the fit's
/// scope, the top level, then the others): a model compiled again (to
/// fine-tune with another optimizer) needs each optimizer wrapped. With the
/// fit's offset (`at`), a name bound in the fit's scope counts only the
/// compiles of the model bound last before the fit (`model = get_model()`
/// then, further down, `model = Sequential(...)` compiled again).
pub(crate) fn find_compiles<'a>(
    rewrite: &ModuleRewrite<'a>,
    scope_index: usize,
    receiver: &str,
    at: Option<usize>,
) -> Vec<(usize, &'a ast::ExprCall)> {
    let module = rewrite.module;
    let is_compile = |call: &ast::ExprCall, receiver: Option<&str>| {
        matches!(call.func.as_ref(), Expr::Attribute(attribute)
            if attribute.attr.as_str() == "compile"
                && receiver.is_none_or(|receiver| dotted_name(&attribute.value).as_deref() == Some(receiver)))
    };
    let binding = at.and_then(|at| binding_window(&module.scopes[scope_index], receiver, at));
    let mut order: Vec<usize> = vec![scope_index, 0];
    order.extend((0..module.scopes.len()).filter(|index| *index != scope_index && *index != 0));
    for index in order {
        let compiles: Vec<(usize, &ast::ExprCall)> = calls_in_scope(&module.scopes[index])
            .into_iter()
            .filter(|(_, call)| is_compile(call, Some(receiver)))
            .filter(|(_, call)| {
                index != scope_index
                    || binding
                        .as_ref()
                        .is_none_or(|window| window.contains(&span(*call).start))
            })
            .map(|(_, call)| (index, call))
            .collect();
        if !compiles.is_empty() {
            return compiles;
        }
        // Bound in the fit's scope: compiles elsewhere are of other models.
        if binding.is_some() {
            break;
        }
    }
    // `model = build_model()`: the factory compiles whatever it calls the model.
    let Some(factory) = factory_scope(rewrite, scope_index, receiver, at) else {
        return Vec::new();
    };
    calls_in_scope(&module.scopes[factory])
        .into_iter()
        .filter(|(_, call)| is_compile(call, None))
        .map(|(_, call)| (factory, call))
        .collect()
}

/// Where the binding of `name` that a use at `at` sees holds in a scope:
/// from the last assignment before `at` to the next one after it, leaving
/// out those in another branch of an `if` than `at` (`m = m.load_weights(...)`
/// when a flag is set, `m.fit(...)` otherwise). Names
/// unpacked from a parameter (`generator, discriminator = models`) are the
/// caller's models, as a parameter is: they bind no model of this scope.
fn binding_window(scope: &Scope, name: &str, at: usize) -> Option<std::ops::Range<usize>> {
    let starts = scope
        .facts
        .assignments
        .iter()
        .filter(|assignment| assignment.name == name)
        .filter(|assignment| !unpacks_a_parameter(scope, assignment.statement))
        .filter(|assignment| {
            !in_other_branches(scope.body, &span(assignment.statement), &(at..at + 1))
        })
        .map(|assignment| span(assignment.statement).start);
    let bound = starts.clone().filter(|start| *start < at).max()?;
    let rebound = starts
        .filter(|start| *start > at)
        .min()
        .unwrap_or(usize::MAX);
    Some(bound..rebound)
}

/// `a, b = parameter`: names unpacked from one of the scope's parameters.
fn unpacks_a_parameter(scope: &Scope, statement: &Stmt) -> bool {
    let Stmt::Assign(assign) = statement else {
        return false;
    };
    let unpacks = assign
        .targets
        .iter()
        .all(|target| matches!(target, Expr::Tuple(_) | Expr::List(_)));
    matches!(assign.value.as_ref(), Expr::Name(source)
        if unpacks && scope.parameters.iter().any(|parameter| parameter == source.id.as_str()))
}

/// The scope of the module-level function whose call result `receiver` is
/// assigned from (by the assignment a use at `at` sees, when given).
pub(super) fn factory_scope(
    rewrite: &ModuleRewrite,
    scope_index: usize,
    receiver: &str,
    at: Option<usize>,
) -> Option<usize> {
    let module = rewrite.module;
    if let Some(method) = own_method_factory(rewrite, scope_index, receiver) {
        return Some(method);
    }
    let mut factory_name = None;
    for (index, scope) in [
        (scope_index, &module.scopes[scope_index]),
        (0, &module.scopes[0]),
    ] {
        for stmt in scope.facts.statements.iter().copied() {
            if index == scope_index && at.is_some_and(|at| span(stmt).start >= at) {
                continue;
            }
            if let Stmt::Assign(assign) = stmt
                && assign.targets.iter().any(|target| {
                    // `model = build()`, or `model, encoder = build()`.
                    let names = match target {
                        Expr::Tuple(tuple) => tuple.elts.iter().collect(),
                        Expr::List(list) => list.elts.iter().collect(),
                        single => vec![single],
                    };
                    names
                        .into_iter()
                        .any(|name| dotted_name(name).as_deref() == Some(receiver))
                })
                && let Expr::Call(call) = assign.value.as_ref()
                && let Expr::Name(function) = call.func.as_ref()
            {
                factory_name = Some(function.id.to_string());
            }
        }
        if factory_name.is_some() {
            break;
        }
    }
    module.function_scope(&factory_name?)
}

/// `self.model = self._build_model()` in any method of the class of the
/// fit's method: the scope of that method of the class.
fn own_method_factory(
    rewrite: &ModuleRewrite,
    scope_index: usize,
    receiver: &str,
) -> Option<usize> {
    let module = rewrite.module;
    let class = module.scopes[scope_index].class?;
    receiver.strip_prefix("self.")?;
    module
        .scopes
        .iter()
        .filter(|scope| scope.class.is_some_and(|other| std::ptr::eq(other, class)))
        .flat_map(|scope| {
            scope
                .facts
                .assignments
                .iter()
                .filter(|assignment| assignment.name == receiver)
                .map(move |assignment| (scope, assignment))
        })
        .find_map(|(scope, assignment)| {
            let Expr::Call(call) = assignment.value else {
                return None;
            };
            // `self._build_model` resolves to the class's own method.
            let qualified = rewrite.callee(scope, &call.func)?;
            module
                .scopes
                .iter()
                .position(|candidate| candidate.qualified_name == qualified)
        })
}

pub(crate) fn wrap_compiled_optimizer(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    compile: &ast::ExprCall,
) {
    let hvd = rewrite.hvd.clone();
    if let Some(parameters) = own_compile_parameters(rewrite, scope, compile) {
        wrap_optimizers_given(rewrite, scope, compile, &parameters);
        return;
    }
    compile_for_early_tensorflow_2(rewrite, compile);
    let optimizer = keyword(compile, "optimizer")
        .map(|keyword| &keyword.value)
        .or_else(|| compile.args.first());
    // `compile(**train_config)`: the optimizer may be in the dict.
    let unpacked = compile
        .keywords
        .iter()
        .find(|keyword| keyword.arg.is_none());
    let optimizer = match (optimizer, unpacked) {
        (Some(optimizer), _) => Some(optimizer),
        (None, None) => None,
        (None, Some(unpacked)) => {
            match dict_entries(&rewrite.module.scopes[0], scope, &unpacked.value) {
                Some(entries) => entries
                    .into_iter()
                    .find_map(|(key, value)| (key == "optimizer").then_some(value)),
                None => {
                    let dict = rewrite.expression_text(&unpacked.value).to_string();
                    rewrite.refuse(Diagnostic::new(
                    OPTIMIZER_NOT_FOUND,
                    span(&unpacked.value),
                    format!("this compile takes its arguments from `**{dict}`, which the tool cannot read: whether it names an optimizer, and which, is unknown, so none could be wrapped and the module was left as written"),
                ).with_suggestion(format!("build `{dict}` as a dict literal in this scope, or pass `optimizer=` to compile directly")));
                    return;
                }
            }
        }
    };
    let Some(optimizer) = optimizer else {
        // Keras compiles with RMSprop when no optimizer is given.
        let built = build_optimizer(rewrite, scope, compile, "RMSprop");
        rewrite.add_keyword(
            compile,
            "optimizer",
            &format!("{hvd}.DistributedOptimizer({built})"),
        );
        return;
    };
    match optimizer {
        Expr::Constant(ast::ExprConstant {
            value: ast::Constant::Str(name),
            ..
        }) => match optimizer_for_string(name) {
            Some(class) => {
                let built = build_optimizer(rewrite, scope, compile, class);
                rewrite.edit(Edit::replacement(
                    span(optimizer),
                    format!("{hvd}.DistributedOptimizer({built})"),
                ));
            }
            None => rewrite.diagnose(Diagnostic::new(
                OPTIMIZER_NOT_FOUND,
                span(optimizer),
                format!(
                    "unknown optimizer name {}: it was not wrapped in hvd.DistributedOptimizer",
                    rewrite.expression_text(optimizer)
                ),
            )),
        },
        Expr::Call(call) if rewrite.calls_horovod_attribute(&call.func, "DistributedOptimizer") => {
        }
        // `optimizer=opt` or `optimizer=self.optimizer`: wrap where it is built,
        // so that the name the user keeps is the optimizer that trains.
        Expr::Name(_) | Expr::Attribute(_) if dotted_name(optimizer).is_some() => {
            wrap_named_optimizer(rewrite, scope, optimizer);
        }
        other => wrap_inline(rewrite, other),
    }
}

/// The entries of a dict an unpacked argument names, when it is a literal
/// bound in the scope or at the top level (`dict(loss=..., optimizer=opt)` or
/// `{"optimizer": opt}`): `None` when the tool cannot read all of them.
pub(super) fn dict_entries<'a>(
    top: &Scope<'a>,
    scope: &Scope<'a>,
    unpacked: &'a Expr,
) -> Option<Vec<(String, &'a Expr)>> {
    let literal = match unpacked {
        Expr::Name(name) => {
            let bound_in = |scope: &Scope<'a>, before: usize| {
                scope
                    .facts
                    .assignments
                    .iter()
                    .rev()
                    .find(|assignment| {
                        assignment.name == name.id.as_str()
                            && span(assignment.statement).end <= before
                    })
                    .map(|assignment| assignment.value)
            };
            let assigned_here = scope
                .facts
                .assignments
                .iter()
                .any(|assignment| assignment.name == name.id.as_str());
            match (assigned_here, scope.function) {
                (true, _) | (false, None) => bound_in(scope, span(unpacked).start)?,
                // A global of the module, bound before the function is defined.
                (false, Some(function)) => bound_in(top, span(function).start)?,
            }
        }
        other => other,
    };
    match literal {
        Expr::Call(call)
            if dotted_name(&call.func).as_deref() == Some("dict") && call.args.is_empty() =>
        {
            call.keywords
                .iter()
                .map(|keyword| Some((keyword.arg.as_ref()?.to_string(), &keyword.value)))
                .collect()
        }
        Expr::Dict(dict) => dict
            .keys
            .iter()
            .zip(&dict.values)
            .map(|(key, value)| match key {
                Some(Expr::Constant(ast::ExprConstant {
                    value: ast::Constant::Str(key),
                    ..
                })) => Some((key.clone(), value)),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

/// On TensorFlow 2.0 and 2.1, Keras runs `compile`d steps as one function
/// that applies gradients without asking the optimizer for them, and
/// Horovod's wrapper then raises at the first step unless `compile` gets
/// `experimental_run_tf_function=False` (as Horovod's own Keras example
/// passes it). Later releases ignore the argument, so it is passed only
/// where the program says it runs 2.0 or 2.1.
fn compile_for_early_tensorflow_2(rewrite: &mut ModuleRewrite, compile: &ast::ExprCall) {
    if keyword(compile, "experimental_run_tf_function").is_some() {
        return;
    }
    let Some(((2, 0 | 1), reason)) = crate::analysis::keras_version::tensorflow_release(
        &rewrite.analysis.package.root,
        rewrite.module.module,
    ) else {
        return;
    };
    rewrite.add_keyword(compile, "experimental_run_tf_function", "False");
    rewrite.diagnose(Diagnostic::new(
        super::COMPILED_FOR_EARLY_TENSORFLOW_2,
        span(compile),
        format!("the program runs TensorFlow 2.0 or 2.1 ({reason}), where Horovod's Keras optimizer averages gradients only when `compile` gets `experimental_run_tf_function=False`: it is passed"),
    ));
}

/// `optimizer=opt` or `optimizer=self.optimizer`: wrapped where it is built
/// (the line after its one construction), else where it is passed.
fn wrap_named_optimizer(rewrite: &mut ModuleRewrite, scope: &Scope, optimizer: &Expr) {
    let hvd = rewrite.hvd.clone();
    let name = dotted_name(optimizer).unwrap_or_default();
    let name = name.as_str();
    let assignments = name_assignments(rewrite, scope, name);
    let already_wrapped = assignments
        .iter()
        .any(|(_, value)| rewrite.calls_horovod_attribute(value, "DistributedOptimizer"));
    if already_wrapped {
        return;
    }
    let constructions: Vec<&Stmt> = assignments
                .iter()
                .filter(|(_, value)| matches!(value, Expr::Call(call) if is_optimizer_construction(rewrite, scope, call)))
                .map(|(stmt, _)| *stmt)
                .collect();
    if let ([construction], 1) = (constructions.as_slice(), assignments.len())
        && rewrite.owns_its_lines(&span(*construction))
    {
        rewrite.insert_after_statement(
            &span(*construction),
            &[format!("{name} = {hvd}.DistributedOptimizer({name})")],
        );
    } else {
        wrap_inline(rewrite, optimizer);
    }
}

/// The parameters of a `compile` the model's own package class defines
/// without Keras' `optimizer` (`compile(self, d_optimizer, g_optimizer,
/// loss_fn)`): adding `optimizer=` there is a TypeError.
fn own_compile_parameters(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    compile: &ast::ExprCall,
) -> Option<Vec<String>> {
    let compile_call = compile;
    let Expr::Attribute(attribute) = compile.func.as_ref() else {
        return None;
    };
    let receiver = dotted_name(&attribute.value)?;
    let (_, value) = name_assignments(rewrite, scope, &receiver)
        .into_iter()
        .next()?;
    let Expr::Call(construction) = value else {
        return None;
    };
    let package = rewrite.analysis.package;
    let class = crate::analysis::training::callee_name(
        package,
        rewrite.module.module,
        scope,
        &construction.func,
    )?;
    let crate::analysis::package::Symbol::Class(_, class) = package.resolve_symbol(&class) else {
        return None;
    };
    let compile = class.body.iter().find_map(|statement| match statement {
        Stmt::FunctionDef(function) if function.name.as_str() == "compile" => Some(function),
        _ => None,
    })?;
    let arguments = &compile.args;
    let names: Vec<String> = arguments
        .posonlyargs
        .iter()
        .chain(&arguments.args)
        .chain(&arguments.kwonlyargs)
        .map(|argument| argument.def.arg.to_string())
        .collect();
    // `compile(self, g_optimizer, d_optimizer, **kwargs)` hands the rest to
    // Keras' own: it takes Keras' `optimizer` only when the call passes one.
    let takes_keras_optimizer = names.iter().any(|name| name == "optimizer")
        || (arguments.kwarg.is_some() && keyword(compile_call, "optimizer").is_some())
        || (arguments.kwarg.is_some() && !compile_call.args.is_empty());
    (!takes_keras_optimizer).then(|| names.into_iter().skip(1).collect())
}

/// Wraps each optimizer a model's own `compile` is given (built in the
/// call, or a name built once), whichever parameter takes it.
fn wrap_optimizers_given(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    compile: &ast::ExprCall,
    parameters: &[String],
) {
    let given = compile
        .args
        .iter()
        .zip(parameters)
        .map(|(value, _)| value)
        .chain(
            compile
                .keywords
                .iter()
                .filter(|keyword| keyword.arg.is_some())
                .map(|keyword| &keyword.value),
        );
    for value in given {
        match value {
            Expr::Call(call)
                if rewrite.calls_horovod_attribute(&call.func, "DistributedOptimizer") => {}
            Expr::Call(call) if is_optimizer_construction(rewrite, scope, call) => {
                wrap_inline(rewrite, value);
            }
            Expr::Name(_) | Expr::Attribute(_) => {
                let name = dotted_name(value).unwrap_or_default();
                let built_as_optimizer = name_assignments(rewrite, scope, &name)
                    .iter()
                    .any(|(_, assigned)| matches!(assigned, Expr::Call(call) if is_optimizer_construction(rewrite, scope, call)));
                if built_as_optimizer {
                    wrap_named_optimizer(rewrite, scope, value);
                }
            }
            _ => {}
        }
    }
}

pub(super) fn wrap_inline(rewrite: &mut ModuleRewrite, optimizer: &Expr) {
    let range = span(optimizer);
    rewrite.edit(Edit::insertion(
        range.start,
        format!("{}.DistributedOptimizer(", rewrite.hvd),
    ));
    rewrite.edit(Edit::insertion(range.end, ")"));
}

pub(super) fn is_optimizer_construction(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    call: &ast::ExprCall,
) -> bool {
    if matches!(
        rewrite.library_class_of_call(scope, call),
        Some(LibraryClass::Optimizer(_))
    ) {
        return true;
    }
    crate::analysis::training::callee_name(
        rewrite.analysis.package,
        rewrite.module.module,
        scope,
        &call.func,
    )
    .is_some_and(|callee| {
        rewrite
            .analysis
            .package
            .is_subclass(&callee, library::KERAS_OPTIMIZER)
    })
}

/// Assignments to `name` in the scope, or at top level when the scope has
/// none (and does not take it as a parameter).
pub(super) fn name_assignments<'a>(
    rewrite: &ModuleRewrite<'a>,
    scope: &Scope<'a>,
    name: &str,
) -> Vec<(&'a Stmt, &'a Expr)> {
    for candidate in [scope, &rewrite.module.scopes[0]] {
        let mut found = Vec::new();
        for stmt in candidate.facts.statements.iter().copied() {
            if let Stmt::Assign(assign) = stmt
                && assign
                    .targets
                    .iter()
                    .any(|target| dotted_name(target).is_some_and(|target| target == name))
            {
                found.push((stmt, assign.value.as_ref()));
            }
        }
        if !found.is_empty()
            || candidate
                .parameters
                .iter()
                .any(|parameter| parameter == name)
        {
            return found;
        }
    }
    Vec::new()
}

/// `tf.keras.optimizers.Adam(learning_rate=0.001 * hvd.size())` in the module's own names.
/// Its rate follows the split of the fits of the model `compile` compiles.
pub(super) fn build_optimizer(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    compile: &ast::ExprCall,
    class: &str,
) -> String {
    let keras = rewrite.keras.clone().unwrap_or_else(|| {
        rewrite
            .module
            .module
            .bindings
            .name_for("tensorflow.keras")
            .map(String::from)
            .unwrap_or_else(|| format!("{}.keras", rewrite.tf))
    });
    let default = library::keras_default_learning_rate(class).unwrap_or("0.001");
    // With eager execution off, `compile(optimizer="adam")` builds a legacy
    // optimizer; the TF 2.11+ one fails there (it calls `.numpy()`).
    let legacy = if disables_eager_execution(rewrite) {
        "legacy."
    } else {
        ""
    };
    let fits = crate::rules::passes::fits_driven::fits_of_compiled_model(rewrite, scope, compile);
    match rewrite.learning_rates.rate_stays_for(fits.as_deref()) {
        true => format!("{keras}.optimizers.{legacy}{class}(learning_rate={default})"),
        false => format!(
            "{keras}.optimizers.{legacy}{class}(learning_rate={default} * {})",
            rewrite.horovod_call("size")
        ),
    }
}

/// Whether the module turns graph mode on (`tf.compat.v1.disable_eager_execution()`,
/// `disable_v2_behavior()`).
pub(super) fn disables_eager_execution(rewrite: &ModuleRewrite) -> bool {
    rewrite.module.scopes.iter().any(|scope| {
        calls_in_scope(scope).into_iter().any(|(_, call)| {
            scope.bindings.resolve(&call.func).is_some_and(|callee| {
                matches!(
                    library::canonical_name(&callee).as_str(),
                    "tensorflow.disable_eager_execution" | "tensorflow.disable_v2_behavior"
                )
            })
        })
    })
}
