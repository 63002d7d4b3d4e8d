//! The optimizers of a canned Estimator (`DNNClassifier`, `LinearRegressor`,
//! `DNNLinearCombinedClassifier`, ...): each builds its train op from the
//! optimizer it is given, so that one is wrapped in
//! `hvd.DistributedOptimizer`. One given by name, or the library's default,
//! is made explicit first, at the library's rate for that Estimator, scaled.
//! What cannot be wrapped (boosted trees, a callable) refuses the module.

use std::ops::Range;

use rustpython_parser::ast::{self, Expr};

use crate::analysis::training::Scope;
use crate::analysis::walk::{dotted_name, keyword};
use crate::diagnostics::Diagnostic;
use crate::python::edit::Edit;
use crate::python::parse::span;
use crate::rules::OPTIMIZER_NOT_WRAPPABLE;
use crate::rules::passes::learning_rate::OPTIMIZER_NOT_FOUND;
use crate::rules::rewrite::ModuleRewrite;

/// How one optimizer of a canned Estimator is wrapped.
enum CannedOptimizer<'a> {
    /// An optimizer constructed in the argument: wrapped where it is.
    Constructed(&'a ast::ExprCall),
    /// A name holding an optimizer this scope constructs: wrapped at the argument.
    Held(&'a Expr),
    /// A name holding an optimizer already wrapped (code that uses Horovod).
    Wrapped,
    /// A name string or the default, made explicit (already scaled): it
    /// replaces the argument, or is added as `keyword`.
    Explicit {
        keyword: &'static str,
        given: Option<&'a Expr>,
        built: String,
    },
    /// Cannot be wrapped: where, why (a clause naming what it is), and what
    /// to do by hand.
    Unwrappable {
        at: Range<usize>,
        why: String,
        suggestion: String,
    },
}

/// One optimizer argument of a canned Estimator: its keyword, the optimizer
/// the library builds when none is given, and that optimizer's rate.
struct OptimizerArgument {
    keyword: &'static str,
    default_class: &'static str,
    rate: String,
}

/// The optimizer arguments of a canned Estimator class (its last name
/// segment), with their defaults; `None` for an Estimator that trains
/// without one (boosted trees) or one the tool does not know.
fn optimizer_arguments(
    rewrite: &ModuleRewrite,
    call: &ast::ExprCall,
    class: &str,
) -> Option<Vec<OptimizerArgument>> {
    let argument = |keyword, default_class, rate: &str| OptimizerArgument {
        keyword,
        default_class,
        rate: rate.to_string(),
    };
    if class.starts_with("DNNLinearCombined") {
        let mut arguments = vec![argument("dnn_optimizer", "Adagrad", "0.001")];
        // The linear part's rate depends on how many feature columns it has.
        if let Some(columns) = keyword(call, "linear_feature_columns").map(|k| &k.value) {
            let simple = match columns {
                Expr::List(list) => list
                    .elts
                    .iter()
                    .all(|element| dotted_name(element).is_some()),
                other => dotted_name(other).is_some(),
            };
            let rate = simple.then(|| {
                format!(
                    "min(0.005, len({}) ** -0.5)",
                    rewrite.expression_text(columns)
                )
            });
            arguments.push(argument(
                "linear_optimizer",
                "Ftrl",
                rate.as_deref().unwrap_or_default(),
            ));
        }
        return Some(arguments);
    }
    if class.starts_with("DNN") {
        return Some(vec![argument("optimizer", "Adagrad", "0.05")]);
    }
    if class.starts_with("Linear") {
        return Some(vec![argument("optimizer", "Ftrl", "0.2")]);
    }
    None
}

/// How each optimizer of the canned Estimator constructed by `call` is wrapped.
fn canned_optimizers<'a>(
    rewrite: &ModuleRewrite,
    scope: &Scope<'a>,
    call: &'a ast::ExprCall,
) -> Vec<CannedOptimizer<'a>> {
    let estimator = dotted_name(&call.func).unwrap_or_default();
    let class = estimator.rsplit('.').next().unwrap_or_default();
    let Some(arguments) = optimizer_arguments(rewrite, call, class) else {
        let (why, suggestion) = if class.starts_with("BoostedTrees") {
            (
                format!("`{class}` grows trees from gradient statistics, with no optimizer to wrap in `{}.DistributedOptimizer`", rewrite.hvd),
                "train it on one worker: Horovod averages the gradients of an optimizer, and boosted trees have none".to_string(),
            )
        } else {
            (
                format!(
                    "`{class}` builds an optimizer the tool does not know how to wrap in `{}.DistributedOptimizer`",
                    rewrite.hvd
                ),
                pass_wrapped_optimizer(rewrite),
            )
        };
        return vec![CannedOptimizer::Unwrappable {
            at: span(call),
            why,
            suggestion,
        }];
    };
    arguments
        .into_iter()
        .map(|argument| {
            let given = keyword(call, argument.keyword).map(|keyword| &keyword.value);
            match given {
                Some(Expr::Call(optimizer)) => CannedOptimizer::Constructed(optimizer),
                Some(name @ (Expr::Name(_) | Expr::Attribute(_))) => {
                    match dotted_name(name).and_then(|name| scope.facts.last_value_of(&name)) {
                        Some(Expr::Call(value))
                            if rewrite
                                .calls_horovod_attribute(&value.func, "DistributedOptimizer") =>
                        {
                            CannedOptimizer::Wrapped
                        }
                        Some(Expr::Call(_)) => CannedOptimizer::Held(name),
                        _ => explicit(rewrite, &estimator, &argument, given),
                    }
                }
                _ => explicit(rewrite, &estimator, &argument, given),
            }
        })
        .collect()
}

/// The optimizer named by a string, or the default, built explicitly at the
/// library's rate times the number of workers: a legacy Keras optimizer for
/// the TF2 Estimators, a `tf.compat.v1.train` one for the TF1 ones.
fn explicit<'a>(
    rewrite: &ModuleRewrite,
    estimator: &str,
    argument: &OptimizerArgument,
    given: Option<&'a Expr>,
) -> CannedOptimizer<'a> {
    let class = match given {
        None => Some(argument.default_class.to_string()),
        Some(Expr::Constant(ast::ExprConstant {
            value: ast::Constant::Str(name),
            ..
        })) => Some(name.to_string()),
        Some(_) => None,
    };
    let known = ["Adagrad", "Adam", "Ftrl", "RMSProp", "SGD"];
    let Some(class) =
        class.filter(|class| known.contains(&class.as_str()) && !argument.rate.is_empty())
    else {
        let (at, what) = match given {
            Some(value) => (
                span(value),
                format!("the optimizer `{}`", rewrite.expression_text(value)),
            ),
            None => (
                0..0,
                format!(
                    "the default `{}`, whose rate depends on an expression the tool cannot repeat",
                    argument.keyword
                ),
            ),
        };
        return CannedOptimizer::Unwrappable {
            at,
            why: format!(
                "this canned Estimator trains with {what}, which cannot be wrapped in `{}.DistributedOptimizer`",
                rewrite.hvd
            ),
            suggestion: pass_wrapped_optimizer(rewrite),
        };
    };
    let tf = &rewrite.tf;
    let rate = match rewrite.learning_rates.work_not_split() {
        true => argument.rate.to_string(),
        false => format!("{} * {}", argument.rate, rewrite.horovod_call("size")),
    };
    // TF1's canned Estimators take `tf.train` optimizers; it has no `legacy` ones.
    let tf1_program = rewrite.module.tensorflow_1_only_call().is_some();
    let built = if estimator.contains("v1") || tf1_program {
        let class = if class == "SGD" {
            "GradientDescent"
        } else {
            class.as_str()
        };
        // TensorFlow 1 itself has `tf.train`; `compat.v1` came late in 1.x.
        let train = if tf1_program {
            "train"
        } else {
            "compat.v1.train"
        };
        format!("{tf}.{train}.{class}Optimizer(learning_rate={rate})")
    } else {
        let class = if class == "RMSProp" {
            "RMSprop"
        } else {
            class.as_str()
        };
        format!("{tf}.keras.optimizers.legacy.{class}(learning_rate={rate})")
    };
    CannedOptimizer::Explicit {
        keyword: argument.keyword,
        given,
        built,
    }
}

/// Errors for the canned Estimator constructed by `call` when one of its
/// optimizers cannot be wrapped.
pub(super) fn refusals(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    call: &ast::ExprCall,
) -> Vec<Diagnostic> {
    canned_optimizers(rewrite, scope, call)
        .into_iter()
        .filter_map(|optimizer| match optimizer {
            CannedOptimizer::Unwrappable { at, why, suggestion } => Some(
                Diagnostic::new(
                    OPTIMIZER_NOT_WRAPPABLE,
                    if at.is_empty() { span(call) } else { at },
                    format!("{why}, so its gradients would not be averaged: this module was left as written (dividing its steps alone would train one model per worker on part of the data)"),
                )
                .with_suggestion(suggestion),
            ),
            _ => None,
        })
        .collect()
}

/// Wraps every optimizer of the canned Estimator constructed by `call`. In
/// a module that already uses Horovod (never refused), one that cannot be
/// wrapped is reported.
pub(super) fn wrap_canned_optimizers(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    call: &ast::ExprCall,
) {
    let hvd = rewrite.hvd.clone();
    for optimizer in canned_optimizers(rewrite, scope, call) {
        match optimizer {
            CannedOptimizer::Constructed(optimizer) => {
                if !rewrite.calls_horovod_attribute(&optimizer.func, "DistributedOptimizer") {
                    wrap_in_place(rewrite, &hvd, span(optimizer));
                }
            }
            CannedOptimizer::Held(name) => wrap_in_place(rewrite, &hvd, span(name)),
            CannedOptimizer::Wrapped => {}
            CannedOptimizer::Explicit {
                keyword,
                given,
                built,
            } => {
                let wrapped = format!("{hvd}.DistributedOptimizer({built})");
                match given {
                    Some(name) => rewrite.edit(Edit::replacement(span(name), wrapped)),
                    None => rewrite.add_keyword(call, keyword, &wrapped),
                }
            }
            CannedOptimizer::Unwrappable {
                at,
                why,
                suggestion,
            } => rewrite.diagnose(
                Diagnostic::new(
                    OPTIMIZER_NOT_FOUND,
                    if at.is_empty() { span(call) } else { at },
                    format!("{why}: its gradients are not averaged across workers"),
                )
                .with_suggestion(suggestion),
            ),
        }
    }
}

fn pass_wrapped_optimizer(rewrite: &ModuleRewrite) -> String {
    format!(
        "pass an optimizer object wrapped in `{}.DistributedOptimizer(...)`, its learning rate multiplied by `{}`",
        rewrite.hvd,
        rewrite.horovod_call("size")
    )
}

fn wrap_in_place(rewrite: &mut ModuleRewrite, hvd: &str, range: Range<usize>) {
    rewrite.edit(Edit::insertion(
        range.start,
        format!("{hvd}.DistributedOptimizer("),
    ));
    rewrite.edit(Edit::insertion(range.end, ")"));
}
