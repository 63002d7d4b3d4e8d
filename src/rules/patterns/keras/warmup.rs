//! The learning-rate warm-up of a Keras `fit`: Horovod's
//! `LearningRateWarmupCallback`, added beside the broadcast callback when the
//! rate is scaled, as Horovod's own Keras examples do.
//!
//! Input: the fit, its model, and the `compile` that gives the optimizer.
//! Output: the callback's text, or `None` when its starting rate cannot be
//! named where the callbacks are (the DST102 advice then stays).

use crate::python::parse::span;
use rustpython_parser::ast::{self, Expr, Stmt};

use super::optimizer::{find_compiles, name_assignments};
use crate::analysis::catalogue::Effect;
use crate::analysis::library::{self, LibraryClass, optimizer_for_string};
use crate::analysis::walk::keyword;
use crate::rules::passes::learning_rate::learning_rate_value;
use crate::rules::passes::rate_changers;
use crate::rules::passes::sharding;
use crate::rules::rewrite::ModuleRewrite;

/// `hvd.callbacks.LearningRateWarmupCallback(initial_lr=<scaled rate>, warmup_epochs=N, momentum_correction=False)`
/// for the model `receiver` fitted in scope `scope_index`, when warm-up is
/// on and the compiled optimizer's rate is a number nameable there.
/// When there is none, `why_not` may say why (for DST102's message).
pub(super) fn warmup_callback(
    rewrite: &ModuleRewrite,
    scope_index: usize,
    fit: &ast::ExprCall,
    receiver: &str,
    why_not: &mut Option<String>,
) -> Option<String> {
    let epochs = rewrite.options.warmup_epochs;
    if epochs == 0 {
        *why_not = Some("warm-up is turned off by `warmup_epochs: 0`".into());
        return None;
    }
    if rewrite.had_horovod || rewrite.mentions_any(&|name| name.to_lowercase().contains("warmup")) {
        return None;
    }
    if let Some(count) = known_epochs(rewrite, scope_index, fit)
        && count <= u64::from(epochs)
    {
        *why_not = Some(format!(
            "each worker trains {count} epoch{} at most, no more than a {epochs}-epoch warm-up, so none was added",
            if count == 1 { "" } else { "s" }
        ));
        return None;
    }
    // `for i in range(n): model.fit(..., epochs=10)`: each call's callback
    // counts its epochs from 0 again, so the ramp would restart every call
    // on the same model (a model built anew in the loop, one per fold, is
    // another matter: its ramp starts with it).
    if fits_one_model_again(rewrite, scope_index, fit, receiver) {
        *why_not = Some(
            "the fit runs again and again in a loop, and each call's callback would start the ramp anew, so none was added".into(),
        );
        return None;
    }
    if let Some(why) = steps_unknown_to_keras(rewrite, scope_index, fit) {
        *why_not = Some(why);
        return None;
    }
    if let Some(setter) = callback_setting_rate(rewrite, fit) {
        *why_not = Some(format!(
            "`{setter}` in its callbacks sets the rate itself, which would override a warm-up"
        ));
        return None;
    }
    let compiles = find_compiles(rewrite, scope_index, receiver, Some(span(fit).start));
    let [(compile_scope, compile)] = compiles.as_slice() else {
        return None;
    };
    // A model's own `compile(d_optimizer=..., g_optimizer=...)`: the
    // callback would ramp `model.optimizer`, which it does not train with.
    if let Some(own) = compile.keywords.iter().find_map(|keyword| {
        keyword
            .arg
            .as_deref()
            .filter(|name| *name != "optimizer" && name.ends_with("optimizer"))
    }) {
        *why_not = Some(format!(
            "the model's own `compile` takes its optimizers as `{own}` and the like, whose rates a warm-up callback, which ramps `model.optimizer`, would not touch"
        ));
        return None;
    }
    let rate = compiled_rate(rewrite, *compile_scope, compile)?;
    let rate = match rate {
        Rate::Default(value) => value.to_string(),
        Rate::Expression(value) => {
            let portable = matches!(value, Expr::Constant(_)) || *compile_scope == scope_index;
            if !portable || rewrite.uses_worker_count(value) {
                return None;
            }
            let written = rewrite.expression_text(value);
            match value {
                Expr::Constant(_) | Expr::Name(_) | Expr::Attribute(_) => written.to_string(),
                _ => format!("({written})"),
            }
        }
    };
    // Momentum correction is off: the optimizers of TensorFlow 2.11 and later
    // hold `momentum` as a Python float, which the callback fails to set.
    Some(format!(
        "{}.callbacks.LearningRateWarmupCallback(initial_lr={rate} * {}, warmup_epochs={epochs}, momentum_correction=False)",
        rewrite.hvd,
        rewrite.horovod_call("size")
    ))
}

/// Whether the fit runs in a loop that neither binds its model anew nor
/// compiles it again before each call.
fn fits_one_model_again(
    rewrite: &ModuleRewrite,
    scope_index: usize,
    fit: &ast::ExprCall,
    receiver: &str,
) -> bool {
    let scope = &rewrite.module.scopes[scope_index];
    let Some(site) = scope.facts.call_at(&span(fit)) else {
        return false;
    };
    site.enclosing_loops.iter().any(|loop_statement| {
        let inside = span(*loop_statement);
        let bound_anew = scope.facts.assignments.iter().any(|assignment| {
            assignment.name == receiver && inside.contains(&span(assignment.statement).start)
        });
        let compiled_anew = scope.facts.calls.iter().any(|other| {
            inside.contains(&span(other.call).start)
                && matches!(other.call.func.as_ref(), Expr::Attribute(method)
                    if method.attr.as_str() == "compile"
                        && crate::analysis::walk::dotted_name(&method.value).as_deref() == Some(receiver))
        });
        !bound_anew && !compiled_anew
    })
}

/// Why Keras may not know how many steps an epoch of the fit takes: the
/// callback reads them when training starts and raises without them. So
/// when the fit gives no `steps_per_epoch` and its data is a tf.data
/// pipeline that the tool cannot follow back to a source whose count
/// TensorFlow knows, through steps that keep it (`flat_map`, `filter`, a
/// generator's or a file's records lose it).
fn steps_unknown_to_keras(
    rewrite: &ModuleRewrite,
    scope_index: usize,
    fit: &ast::ExprCall,
) -> Option<String> {
    let given = keyword(fit, "steps_per_epoch").is_some_and(|steps| {
        !matches!(
            &steps.value,
            Expr::Constant(ast::ExprConstant {
                value: ast::Constant::None,
                ..
            })
        )
    });
    let data = keyword(fit, "x")
        .map(|keyword| &keyword.value)
        .or_else(|| fit.args.first())?;
    let scope = &rewrite.module.scopes[scope_index];
    if given
        || !sharding::is_pipeline(rewrite, scope, data)
        || pipeline_count_known(rewrite, scope_index, data)
    {
        return None;
    }
    Some(format!(
        "the fit gives no `steps_per_epoch` and TensorFlow may not know how many batches `{}` holds, so Keras may not know an epoch's steps, which the warm-up callback needs when training starts",
        rewrite.expression_text(data)
    ))
}

/// Whether TensorFlow knows the count of a pipeline: followed back through
/// names and the package functions that return it to a catalogued source
/// whose count it knows, with only steps that keep the count after it.
fn pipeline_count_known(rewrite: &ModuleRewrite, scope_index: usize, data: &Expr) -> bool {
    let analysis = rewrite.analysis;
    let (mut module, mut index) = (rewrite.module, scope_index);
    let (mut current, mut before) = (data, span(data).start);
    let mut downstream: Vec<(&str, &ast::ExprCall)> = Vec::new();
    for _ in 0..32 {
        let scope = &module.scopes[index];
        let call = match current {
            Expr::Name(name) => {
                let Some(assignment) = [scope, &module.scopes[0]]
                    .into_iter()
                    .find_map(|scope| scope.facts.assignment_before(name.id.as_str(), before))
                else {
                    return false;
                };
                before = span(assignment.statement).start;
                current =
                    crate::analysis::walk::unpacked_element(assignment.statement, name.id.as_str())
                        .unwrap_or(assignment.value);
                continue;
            }
            Expr::Call(call) => call,
            // One split of those a source loads at once (`splits["train"]`).
            Expr::Subscript(subscript)
                if matches!(subscript.value.as_ref(), Expr::Name(_))
                    && !matches!(subscript.slice.as_ref(), Expr::Slice(_)) =>
            {
                current = subscript.value.as_ref();
                continue;
            }
            _ => return false,
        };
        let known = crate::analysis::effects::of_call(analysis, module, index, call);
        let source = known.entry().and_then(|entry| {
            entry.effects.iter().find_map(|effect| match effect {
                Effect::DataSource { counted, .. } => Some(*counted),
                _ => None,
            })
        });
        if let Some(counted) = source {
            return counted
                && downstream.iter().all(|(method, step)| {
                    library::COUNT_KEEPING_METHODS.contains(method)
                        || *method == "shard"
                        || (*method == "repeat" && !step.args.is_empty())
                });
        }
        if let Some((defining, function, returned)) = analysis.returned_by_call(module, scope, call)
        {
            (module, index, current, before) = (defining, function, returned, span(returned).start);
            continue;
        }
        let Expr::Attribute(attribute) = call.func.as_ref() else {
            return false;
        };
        downstream.push((attribute.attr.as_str(), call));
        current = attribute.value.as_ref();
    }
    false
}
/// A callback class of the module, built in the fit's callbacks list, that
/// sets the optimizer's rate itself (a one-cycle policy), or Keras'
/// `LearningRateScheduler`, which sets it at every epoch's start.
fn callback_setting_rate<'a>(rewrite: &'a ModuleRewrite, fit: &ast::ExprCall) -> Option<&'a str> {
    let Expr::List(callbacks) = &keyword(fit, "callbacks")?.value else {
        return None;
    };
    let class_built = |value: &Expr| match value {
        Expr::Call(call) => crate::analysis::walk::dotted_name(&call.func),
        _ => None,
    };
    // Built in the list, or bound to a name first (`cycle = OneCycle(...)`).
    let built: Vec<String> = callbacks
        .elts
        .iter()
        .flat_map(|element| match element {
            Expr::Name(name) => rewrite
                .module
                .scopes
                .iter()
                .flat_map(|scope| scope.facts.assignments.iter())
                .filter(|assignment| assignment.name.as_str() == name.id.as_str())
                .filter_map(|assignment| class_built(assignment.value))
                .collect(),
            other => class_built(other).into_iter().collect::<Vec<_>>(),
        })
        .collect();
    if built
        .iter()
        .any(|name| name == "LearningRateScheduler" || name.ends_with(".LearningRateScheduler"))
    {
        return Some("LearningRateScheduler");
    }
    rewrite
        .module
        .module
        .body
        .iter()
        .find_map(|stmt| match stmt {
            Stmt::ClassDef(class)
                if built.iter().any(|name| name == class.name.as_str())
                    && rate_changers::sets_learning_rate(rewrite.text, class) =>
            {
                Some(class.name.as_str())
            }
            _ => None,
        })
}

/// The number of epochs each worker trains (at most), when it is known.
fn known_epochs(rewrite: &ModuleRewrite, scope_index: usize, fit: &ast::ExprCall) -> Option<u64> {
    let epochs = keyword(fit, "epochs")
        .map(|keyword| &keyword.value)
        .or_else(|| fit.args.get(3));
    let count = match epochs {
        // Keras trains one epoch unless told otherwise.
        None => 1,
        // A literal, a command-line default, or a name assigned a literal
        // (`n_epochs = 2`, last before the fit in a notebook that binds it
        // in many cells).
        Some(epochs) => known_integer(rewrite, epochs).or_else(|| {
            let scope = &rewrite.module.scopes[scope_index];
            if let Expr::Name(name) = epochs
                && let Some(assignment) = scope
                    .facts
                    .last_assignment_before(&name.id, span(fit).start)
            {
                return known_integer(rewrite, assignment.value);
            }
            super::fit_split::literal_int(rewrite, scope, epochs)
                .and_then(|count| u64::try_from(count).ok())
        })?,
    };
    // A fit on in-memory arrays with no step count gets its epochs divided
    // among the workers: each trains half of them or fewer.
    let epochs_divided = rewrite
        .learning_rates
        .fits_with_divided_epochs
        .contains(&span(fit));
    Some(if epochs_divided { count / 2 } else { count })
}

/// An integer literal, or the integer default of a command-line option read
/// as `args.epochs` (`parser.add_argument("--epochs", default=3)`) or
/// `FLAGS.epochs` (`flags.DEFINE_integer("epochs", 3, ...)`).
fn known_integer(rewrite: &ModuleRewrite, expr: &Expr) -> Option<u64> {
    let integer = |expr: &Expr| match expr {
        Expr::Constant(ast::ExprConstant {
            value: ast::Constant::Int(value),
            ..
        }) => u64::try_from(value).ok(),
        _ => None,
    };
    if let Some(value) = integer(expr) {
        return Some(value);
    }
    let Expr::Attribute(attribute) = expr else {
        return None;
    };
    let option = attribute.attr.as_str();
    let names = [
        format!("--{option}"),
        format!("--{}", option.replace('_', "-")),
        option.to_string(),
    ];
    rewrite.module.scopes.iter().find_map(|scope| {
        scope.facts.calls.iter().find_map(|site| {
            let call = site.call;
            let Expr::Attribute(method) = call.func.as_ref() else {
                return None;
            };
            let declared = match call.args.first() {
                Some(Expr::Constant(ast::ExprConstant {
                    value: ast::Constant::Str(name),
                    ..
                })) => name,
                _ => return None,
            };
            match method.attr.as_str() {
                "add_argument" if names[..2].contains(declared) => {
                    integer(&keyword(call, "default")?.value)
                }
                "DEFINE_integer" if declared == option => call
                    .args
                    .get(1)
                    .or_else(|| keyword(call, "default").map(|keyword| &keyword.value))
                    .and_then(integer),
                _ => None,
            }
        })
    })
}

/// A compiled optimizer's learning rate: as written, or the class default.
enum Rate<'a> {
    Expression(&'a Expr),
    Default(&'static str),
}

/// The rate of the optimizer `compile` is given, if it is a number (a
/// schedule's rate cannot be set by the callback).
fn compiled_rate<'a>(
    rewrite: &ModuleRewrite<'a>,
    scope_index: usize,
    compile: &'a ast::ExprCall,
) -> Option<Rate<'a>> {
    let scope = &rewrite.module.scopes[scope_index];
    let optimizer = keyword(compile, "optimizer")
        .map(|keyword| &keyword.value)
        .or_else(|| compile.args.first());
    let construction = match optimizer {
        None => return default_rate("RMSprop"),
        Some(Expr::Constant(ast::ExprConstant {
            value: ast::Constant::Str(name),
            ..
        })) => return default_rate(optimizer_for_string(name)?),
        Some(Expr::Call(call)) => call,
        Some(name @ (Expr::Name(_) | Expr::Attribute(_))) => {
            let name = crate::analysis::walk::dotted_name(name)?;
            match name_assignments(rewrite, scope, &name).as_slice() {
                [(_, Expr::Call(call))] => call,
                _ => return None,
            }
        }
        Some(_) => return None,
    };
    let Some(LibraryClass::Optimizer(argument)) =
        rewrite.library_class_of_call(scope, construction)
    else {
        return None;
    };
    match learning_rate_value(construction, &argument) {
        Some(value) if is_number(rewrite, value) => Some(Rate::Expression(value)),
        Some(_) => None,
        None => argument.default.map(Rate::Default),
    }
}

fn default_rate(class: &str) -> Option<Rate<'static>> {
    library::keras_default_learning_rate(class).map(Rate::Default)
}

/// A literal, or a name or arithmetic not holding a schedule.
fn is_number(rewrite: &ModuleRewrite, value: &Expr) -> bool {
    match value {
        Expr::Constant(constant) => matches!(
            constant.value,
            ast::Constant::Float(_) | ast::Constant::Int(_)
        ),
        Expr::Name(_) | Expr::Attribute(_) => !matches!(
            rewrite.value_kind_of(value),
            Some(crate::analysis::index::AbstractValue::Schedule)
        ),
        Expr::BinOp(operation) => {
            is_number(rewrite, &operation.left) && is_number(rewrite, &operation.right)
        }
        _ => false,
    }
}
