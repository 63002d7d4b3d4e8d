//! ## Invariant 2: every gradient path is averaged
//!
//! Each worker computes gradients on its own data; unless they are averaged
//! before they are applied, the workers train N different models.
//! `hvd.DistributedOptimizer` averages what `compute_gradients`/`minimize`
//! and Keras' `fit` produce; `hvd.DistributedGradientTape` averages what a
//! tape's `gradient` returns; gradients from `tf.gradients(...)` handed to
//! `apply_gradients` bypass both and must be allreduced, as must a gradient
//! a variable is moved by by hand (`tf.assign_sub(w, rate * gradient)`).
//!
//! **Proven** per loop when the optimizer its `compile`, `minimize` or
//! `compute_gradients` receives is a Horovod value and every tape whose
//! gradients are applied is wrapped before `gradient` is called.
//! **Violated** when a string optimizer, an optimizer built in place, or an
//! unwrapped tape feeds the step. **Unknown** when the optimizer comes from
//! where the checker cannot follow (a parameter, an attribute, another
//! module's model).

mod hand_written;

use rustpython_parser::ast::{Constant, Expr, Stmt};

use crate::analysis::catalogue::Effect;
use crate::analysis::library::{self, LibraryClass};
use crate::analysis::training::{Scope, TrainingPattern};
use crate::analysis::walk::walk_statement_expressions;
use crate::checker::program::ScopedCall;
use crate::checker::{Decision, Invariant, Program, Verdict};
use crate::diagnostics::{Code, Severity};
use crate::python::parse::span;

pub const GRADIENTS_AVERAGED: Code = Code::new(
    "DST302",
    "gradients-averaged",
    Severity::Error,
    "Every gradient path of a training loop is averaged across workers: optimizers wrapped in `hvd.DistributedOptimizer`, tapes in `hvd.DistributedGradientTape`, `tf.gradients` results allreduced.",
);

pub struct GradientsAveraged;

impl Invariant for GradientsAveraged {
    fn code(&self) -> Code {
        GRADIENTS_AVERAGED
    }

    fn check(&self, program: &Program) -> Vec<Decision> {
        if !program.uses_horovod() {
            return Vec::new();
        }
        let calls = program.calls();
        let mut decisions = Vec::new();
        if program.has_pattern(TrainingPattern::Keras) {
            decisions.extend(compiled_optimizers(program, calls));
        }
        if program.has_pattern(TrainingPattern::GradientTape) {
            decisions.extend(tapes(program, calls));
        }
        decisions.extend(graph_optimizers(program, calls));
        decisions.extend(bypassing_gradients(program, calls));
        decisions.extend(optimize_loss(program, calls));
        decisions.extend(hand_written::hand_written_updates(program, calls));
        decisions.extend(trained_elsewhere(program, calls));
        decisions
    }
}

fn decision(verdict: Verdict, range: std::ops::Range<usize>, message: String) -> Decision {
    Decision::new(GRADIENTS_AVERAGED, verdict, range, message)
}

/// The optimizers Keras `compile` calls receive.
fn compiled_optimizers(program: &Program, calls: &[ScopedCall]) -> Vec<Decision> {
    let compiles: Vec<&ScopedCall> = calls
        .iter()
        .filter(|call| call.method() == Some("compile") && is_method_call(call))
        .filter(|call| !calls_super(call))
        .filter(|call| !compiled_only_to_evaluate(program, call))
        .collect();
    let mut decisions = Vec::new();
    for compile in &compiles {
        let line = program.line(compile.range().start);
        // A `compile` naming no optimizer (metrics for an evaluation) decides nothing.
        for argument in optimizer_arguments(compile) {
            decisions.push(optimizer_verdict(program, compile.scope, argument, line));
        }
    }
    if compiles.is_empty()
        && let Some(elsewhere) = compiled_elsewhere(program)
    {
        decisions.extend(elsewhere);
    } else if compiles.is_empty() {
        let fit = program
            .module
            .sites
            .iter()
            .find(|site| site.pattern == TrainingPattern::Keras && !site.is_model_function);
        if let Some(fit) = fit {
            decisions.push(decision(
                Verdict::Unknown,
                fit.range.clone(),
                format!(
                    "the model trained at line {} is compiled where the checker cannot see, so it cannot show its optimizer is wrapped",
                    program.line(fit.range.start)
                ),
            ).with_suggestion("compile the model in this module with `hvd.DistributedOptimizer(...)`, or check by hand that the module compiling it wraps its optimizer"));
        }
    }
    decisions
}

/// A model compiled only to be evaluated (`export_model.compile(...)`, then
/// only `export_model.evaluate(...)`, `.predict(...)`, `.layers`): no
/// optimizer of it takes a step. Every use of its name must be an attribute
/// other than a step (`fit`, `train_on_batch`, `optimizer`); in the compile's
/// own scope, only the uses that see the binding the compile sees count (the
/// name bound to another model further down is another model), and a function
/// binding the name itself holds another.
fn compiled_only_to_evaluate(program: &Program, compile: &ScopedCall) -> bool {
    // What makes the model's optimizer step, read from the model.
    const STEPS: &[&str] = &[
        "fit",
        "fit_generator",
        "train_on_batch",
        "train_step",
        "train_function",
        "make_train_function",
        "optimizer",
    ];
    let Expr::Attribute(attribute) = compile.site.call.func.as_ref() else {
        return false;
    };
    let Expr::Name(model) = attribute.value.as_ref() else {
        return false;
    };
    let name = model.id.as_str();
    let bound = binding_seen(compile.scope, name, compile.range().start);
    // Every read of the name must be an attribute of it (`.predict(...)`,
    // `.layers`): a model passed on or called may be trained elsewhere.
    let (mut reads, mut attributes, mut steps) = (0usize, 0usize, 0usize);
    for (index, scope) in program.module.scopes.iter().enumerate() {
        let binds_its_own = scope.parameters.iter().any(|parameter| parameter == name)
            || scope
                .facts
                .assignments
                .iter()
                .any(|assignment| assignment.name == name);
        if index != compile.scope_index && binds_its_own {
            continue;
        }
        for statement in &scope.facts.statements {
            if index == compile.scope_index
                && let Some(bound) = bound
                && !binding_may_reach(
                    compile.scope,
                    name,
                    bound,
                    crate::python::parse::span(*statement).start,
                )
            {
                continue;
            }
            walk_statement_expressions(statement, &mut |expr| match expr {
                Expr::Name(used) if used.id.as_str() == name && used.ctx.is_load() => reads += 1,
                Expr::Attribute(read) if matches!(read.value.as_ref(), Expr::Name(receiver) if receiver.id.as_str() == name) =>
                {
                    attributes += 1;
                    if STEPS.contains(&read.attr.as_str()) {
                        steps += 1;
                    }
                }
                _ => {}
            });
        }
    }
    reads > 0 && reads == attributes && steps == 0
}

/// The assignment of `name` a use at `at` sees in a scope: the last one
/// starting at or before it, leaving out those in another branch of an `if`
/// than `at` (`model = model.load_weights(...)` when a flag is set,
/// `model.fit(...)` otherwise); `None` when none comes before it.
fn binding_seen(scope: &crate::analysis::training::Scope, name: &str, at: usize) -> Option<usize> {
    scope
        .facts
        .assignments
        .iter()
        .filter(|assignment| assignment.name == name)
        .map(|assignment| crate::python::parse::span(assignment.statement))
        .filter(|range| {
            range.start <= at
                && !crate::analysis::walk::in_other_branches(scope.body, range, &(at..at + 1))
        })
        .map(|range| range.start)
        .max()
}

/// Whether the binding of `name` made at `bound` may still hold at `at`:
/// `at` comes after it, and no assignment between them rebinds the name on
/// every path (`if tpu: model = to_tpu(model)` may not run, so `return
/// model` after it may return the model bound first).
fn binding_may_reach(
    scope: &crate::analysis::training::Scope,
    name: &str,
    bound: usize,
    at: usize,
) -> bool {
    at >= bound
        && !scope
            .facts
            .assignments
            .iter()
            .filter(|assignment| assignment.name == name)
            .map(|assignment| crate::python::parse::span(assignment.statement))
            .filter(|range| range.start > bound && range.start <= at)
            .any(|range| {
                crate::analysis::walk::path_to(scope.body, &range).is_some_and(|path| {
                    path.iter()
                        .map(|statement| crate::python::parse::span(*statement))
                        .filter(|enclosing| *enclosing != range)
                        .all(|enclosing| enclosing.contains(&at))
                })
            })
}

/// `super().compile(...)` inside a model class's own `compile`: the
/// optimizers that step are the class's attributes, judged where they are used.
fn calls_super(call: &ScopedCall) -> bool {
    matches!(call.site.call.func.as_ref(), Expr::Attribute(attribute)
        if matches!(attribute.value.as_ref(), Expr::Call(inner)
            if matches!(inner.func.as_ref(), Expr::Name(name) if name.id.as_str() == "super")))
}

/// A method of an object (`model.compile`), not a function of an imported
/// library module (`re.compile`).
/// The verdicts on the `compile` calls of the package's other modules that
/// use Horovod (a model compiled by a factory in `model.py`); `None` when
/// there are none.
fn compiled_elsewhere(program: &Program) -> Option<Vec<Decision>> {
    let mut decisions = Vec::new();
    for other in program.others().iter().filter(|other| other.uses_horovod()) {
        for compile in other
            .calls()
            .iter()
            .filter(|call| call.method() == Some("compile") && is_method_call(call))
        {
            let line = other.line(compile.range().start);
            for argument in optimizer_arguments(compile) {
                let verdict = optimizer_verdict(other, compile.scope, argument, line).verdict;
                // Placed at the loop of this module: another module's
                // offsets mean nothing here.
                let fit = program
                    .module
                    .sites
                    .first()
                    .map(|site| site.range.clone())
                    .unwrap_or(0..0);
                let path = &other.module.module.source.relative_path;
                decisions.push(match verdict {
                    Verdict::Proven => decision(Verdict::Proven, fit, format!("the model is compiled in {path} (line {line}) with a wrapped optimizer")),
                    _ => decision(Verdict::Unknown, fit, format!("the model may be compiled in {path} (line {line}), whose optimizer the checker cannot show to be wrapped")),
                });
            }
        }
    }
    (!decisions.is_empty()).then_some(decisions)
}

fn is_method_call(call: &ScopedCall) -> bool {
    let Expr::Attribute(attribute) = call.site.call.func.as_ref() else {
        return false;
    };
    call.scope
        .bindings
        .resolve_raw(&attribute.value)
        .is_none_or(|receiver| library::is_tensorflow(&library::canonical_name(&receiver)))
}

/// `optimizer=` (or the first argument), or every `*optimizer*` keyword of a
/// custom `compile(self, d_optimizer, g_optimizer, ...)`.
fn optimizer_arguments<'c>(call: &'c ScopedCall) -> Vec<&'c Expr> {
    let keywords: Vec<&Expr> = call
        .site
        .call
        .keywords
        .iter()
        .filter(|keyword| {
            keyword
                .arg
                .as_ref()
                .is_some_and(|name| name.as_str().contains("optimizer"))
        })
        .map(|keyword| &keyword.value)
        .collect();
    if !keywords.is_empty() {
        return keywords;
    }
    // `compile(loss=..., metrics=...)` passes no optimizer at all.
    call.site.call.args.first().into_iter().collect()
}

/// Whether one optimizer value is wrapped.
fn optimizer_verdict(program: &Program, scope: &Scope, optimizer: &Expr, line: usize) -> Decision {
    let range = span(optimizer);
    if program.is_horovod_value(scope, optimizer) {
        return decision(
            Verdict::Proven,
            range,
            format!("the optimizer at line {line} is wrapped by Horovod"),
        );
    }
    if let Expr::Constant(constant) = optimizer
        && matches!(constant.value, Constant::Str(_))
    {
        return decision(
            Verdict::Violated,
            range,
            format!("the optimizer named by a string at line {line} is not wrapped in `hvd.DistributedOptimizer`: each worker trains its own model"),
        )
        .with_suggestion("build the optimizer object, scaled, and pass `hvd.DistributedOptimizer(optimizer)`");
    }
    if builds_library_optimizer(program, scope, optimizer) {
        return decision(
            Verdict::Violated,
            range,
            format!("the optimizer at line {line} is not wrapped in `hvd.DistributedOptimizer`: each worker trains its own model"),
        )
        .with_suggestion("wrap it: `optimizer = hvd.DistributedOptimizer(optimizer)`");
    }
    decision(
        Verdict::Unknown,
        range,
        format!("the checker cannot follow the optimizer at line {line} to show that it is wrapped in `hvd.DistributedOptimizer`"),
    )
    .with_suggestion("build and wrap the optimizer in the function that compiles or minimises with it")
}

/// A library optimizer built in place, or a name last assigned one.
fn builds_library_optimizer(program: &Program, scope: &Scope, expr: &Expr) -> bool {
    let is_optimizer_call = |expr: &Expr| {
        let Expr::Call(call) = expr else {
            return false;
        };
        crate::analysis::training::callee_name(
            program.analysis.package,
            program.module.module,
            scope,
            &call.func,
        )
        .is_some_and(|callee| {
            matches!(
                library::library_class(&library::canonical_name(&callee)),
                Some(LibraryClass::Optimizer(_))
            )
        })
    };
    if is_optimizer_call(expr) {
        return true;
    }
    let Some(name) = crate::analysis::walk::dotted_name(expr) else {
        return false;
    };
    let assignments: Vec<_> = scope
        .facts
        .assignments
        .iter()
        .filter(|assignment| {
            assignment.name == name && span(assignment.statement).start < span(expr).start
        })
        .collect();
    assignments
        .last()
        .is_some_and(|last| is_optimizer_call(last.value))
}

/// Tapes whose gradients are applied must be wrapped before `gradient`.
fn tapes(program: &Program, calls: &[ScopedCall]) -> Vec<Decision> {
    let mut decisions = Vec::new();
    for site in &program.module.sites {
        if site.pattern != TrainingPattern::GradientTape {
            continue;
        }
        let scope = &program.module.scopes[site.scope];
        let Some(Stmt::With(with)) = scope
            .facts
            .statements
            .iter()
            .find(|statement| span(**statement) == site.range)
            .copied()
        else {
            continue;
        };
        let tape_names: Vec<String> = with
            .items
            .iter()
            .filter_map(|item| item.optional_vars.as_deref())
            .filter_map(crate::analysis::walk::dotted_name)
            .collect();
        for tape in tape_names {
            let gradients: Vec<&ScopedCall> = calls
                .iter()
                .filter(|call| std::ptr::eq(call.scope, scope))
                .filter(|call| {
                    matches!(call.site.call.func.as_ref(), Expr::Attribute(attribute)
                        if attribute.attr.as_str() == "gradient"
                            && crate::analysis::walk::dotted_name(&attribute.value).as_deref() == Some(tape.as_str()))
                })
                .collect();
            let line = program.line(site.range.start);
            if gradients.is_empty() {
                decisions.push(decision(
                    Verdict::Unknown,
                    site.range.clone(),
                    format!("the tape `{tape}` of line {line} is not asked for gradients in its function, so the checker cannot show they are averaged"),
                ));
                continue;
            }
            // The `gradient` calls that read this tape: after its `with`, and
            // before the next tape bound to the same name in the function.
            let next_tape = program
                .module
                .sites
                .iter()
                .filter(|other| {
                    other.scope == site.scope
                        && other.pattern == TrainingPattern::GradientTape
                        && other.range.start > site.range.start
                })
                .map(|other| other.range.start)
                .min()
                .unwrap_or(usize::MAX);
            for gradient in gradients.into_iter().filter(|call| {
                call.range().start > site.range.start && call.range().start < next_tape
            }) {
                let at = gradient.range().start;
                let wrapped = scope.facts.assignments.iter().any(|assignment| {
                    assignment.name == tape
                        && span(assignment.statement).start > site.range.start
                        && span(assignment.statement).end <= at
                        && program.calls_horovod_function(
                            scope,
                            assignment.value,
                            "DistributedGradientTape",
                        )
                });
                decisions.push(if wrapped {
                    decision(Verdict::Proven, gradient.range(), format!("the tape of line {line} is wrapped in `hvd.DistributedGradientTape`"))
                } else {
                    decision(
                        Verdict::Violated,
                        gradient.range(),
                        format!("`{tape}.gradient` at line {} reads a tape that is not wrapped in `hvd.DistributedGradientTape`: each worker applies its own gradients", program.line(at)),
                    )
                    .with_suggestion(format!("add `{tape} = hvd.DistributedGradientTape({tape})` after the `with` block"))
                });
            }
        }
    }
    decisions
}

/// TF1: the receivers of `minimize` and `compute_gradients`.
fn graph_optimizers(program: &Program, calls: &[ScopedCall]) -> Vec<Decision> {
    let mut decisions = Vec::new();
    for call in calls {
        let Expr::Attribute(attribute) = call.site.call.func.as_ref() else {
            continue;
        };
        if !matches!(attribute.attr.as_str(), "minimize" | "compute_gradients") {
            continue;
        }
        let receiver = attribute.value.as_ref();
        let line = program.line(call.range().start);
        // A Keras optimizer's `minimize` in a tape program is a training step too.
        decisions.push(optimizer_verdict(program, call.scope, receiver, line));
    }
    decisions
}

/// `tf.contrib.layers.optimize_loss(loss, global_step, learning_rate,
/// optimizer="Adam")` builds and applies its optimizer inside: unless the
/// optimizer it is given is wrapped, nothing averages the gradients.
fn optimize_loss(program: &Program, calls: &[ScopedCall]) -> Vec<Decision> {
    calls
        .iter()
        .filter(|call| {
            call.callee
                .as_deref()
                .is_some_and(|callee| callee.ends_with("layers.optimize_loss"))
        })
        .map(|call| {
            let line = program.line(call.range().start);
            match Program::argument(call.site.call, "optimizer", 3) {
                Some(optimizer) => optimizer_verdict(program, call.scope, optimizer, line),
                None => decision(
                    Verdict::Violated,
                    call.range(),
                    format!("`optimize_loss` at line {line} builds its own optimizer, which nothing wraps in `hvd.DistributedOptimizer`"),
                ),
            }
        })
        .collect()
}

/// A call the catalogue says trains models in a loop of its own (a
/// scikit-learn wrapper's fit, a reinforcement-learning agent's train): the
/// rewrite does not distribute that path, so each worker runs it alone.
/// When the function building its models compiles with a wrapped optimizer,
/// each worker's copy of that loop issues allreduces that nothing pairs
/// with the others' (a search draws its own candidates in each process).
fn trained_elsewhere(program: &Program, calls: &[ScopedCall]) -> Vec<Decision> {
    calls
        .iter()
        .filter_map(|call| {
            let known = program.known(call);
            let (builder, by) = known.entry()?.effects.iter().find_map(|effect| match effect {
                Effect::TrainsElsewhere { builder, by } => Some((builder.clone(), by.clone())),
                _ => None,
            })?;
            let line = program.line(call.range().start);
            let name = call.callee.as_deref().unwrap_or_default();
            let name = name.rsplit('.').next().unwrap_or(name);
            let builder = builder
                .as_ref()
                .and_then(|argument| argument.of(call.site.call))
                .and_then(|expr| match expr {
                    Expr::Name(builder) => Some(builder.id.as_str()),
                    _ => None,
                });
            let wrapped = builder.is_some_and(|builder| compiles_wrapped(program, builder));
            Some(match (builder, wrapped) {
                (Some(builder), true) => decision(
                    Verdict::Violated,
                    call.range(),
                    format!("`{name}` at line {line} trains the models `{builder}` builds through {by}, which every worker runs on its own: `{builder}` now compiles a Horovod optimizer, whose allreduces nothing pairs across the workers' runs"),
                ),
                (Some(builder), false) => decision(
                    Verdict::Unknown,
                    call.range(),
                    format!("`{name}` at line {line} trains the models `{builder}` builds through {by}, a path the rewrite does not distribute: each worker would train them on its own"),
                ),
                (None, _) => decision(
                    Verdict::Unknown,
                    call.range(),
                    format!("`{name}` at line {line} trains through {by}, a path the rewrite does not distribute: each worker would train its own copy"),
                ),
            }
            .with_suggestion("run that training on one worker, in a program of its own, or leave this module single-GPU"))
        })
        .collect()
}

/// Whether the module's function `name` compiles a model with an optimizer
/// Horovod wraps.
fn compiles_wrapped(program: &Program, name: &str) -> bool {
    program.module.scopes.iter().any(|scope| {
        matches!(scope.function, Some(Stmt::FunctionDef(def)) if def.name.as_str() == name)
            && scope.facts.calls.iter().any(|site| {
                matches!(site.call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "compile")
                    && Program::argument(site.call, "optimizer", 0)
                        .is_some_and(|optimizer| program.is_horovod_value(scope, optimizer))
            })
    })
}

/// `apply_gradients` of gradients from `tf.gradients(...)`: they bypass the
/// wrapped optimizer and must be allreduced.
fn bypassing_gradients(program: &Program, calls: &[ScopedCall]) -> Vec<Decision> {
    let gradients = calls
        .iter()
        .find(|call| call.callee.as_deref() == Some("tensorflow.gradients"));
    let applies = calls
        .iter()
        .any(|call| call.method() == Some("apply_gradients"));
    let (Some(gradients), true) = (gradients, applies) else {
        return Vec::new();
    };
    // A barrier allreduces a constant (`hvd.allreduce(tf.constant(0))`):
    // it averages no gradient.
    let averages_a_value = |call: &&ScopedCall| match call.site.call.args.first() {
        Some(Expr::Constant(_)) | None => false,
        Some(Expr::Call(inner)) => !matches!(inner.func.as_ref(),
            Expr::Attribute(attribute) if attribute.attr.as_str() == "constant"),
        Some(_) => true,
    };
    let allreduced = calls.iter().filter(averages_a_value).any(|call| {
        matches!(
            call.horovod_function(),
            Some("allreduce" | "grouped_allreduce")
        )
    });
    let line = program.line(gradients.range().start);
    vec![if allreduced {
        decision(
            Verdict::Proven,
            gradients.range(),
            format!("the gradients of `tf.gradients` at line {line} are allreduced"),
        )
    } else {
        decision(
            Verdict::Violated,
            gradients.range(),
            format!("the gradients of `tf.gradients` at line {line} reach `apply_gradients` without being allreduced: `hvd.DistributedOptimizer` does not average them"),
        )
        .with_suggestion("average each gradient with `hvd.allreduce(gradient)` before applying it")
    }]
}
