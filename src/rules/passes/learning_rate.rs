//! Learning-rate scaling: the rate of every optimizer and schedule the module
//! constructs is multiplied by `hvd.size()` (keyword, else positional, else
//! the library default added as a keyword), since N workers average N times
//! fewer gradient steps over the same data. A schedule passed to an optimizer
//! is scaled, not both; a rate that already uses `hvd.size()` is left alone.
//! The rate of an optimizer that drives a loop left whole stays as written:
//! per optimizer where the fits it drives are known (`fits_driven`), else for
//! the whole module.
//!
//! Input: every call of every scope, and the calls patterns already rewrote
//! as a whole (`LearningRateState::handled_calls`). Output: the scaling edits,
//! DST102 when no warm-up is in sight, DST109 for a rate hidden in `**kwargs`.

use std::collections::HashSet;
use std::ops::Range;

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::analysis::index::{AbstractValue, CallSite};
use crate::analysis::library::{self, LearningRateArgument, LibraryClass};
use crate::analysis::training::Scope;
use crate::analysis::walk::is_scope;
use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::edit::Edit;
use crate::python::parse::{span, span_with_decorators};
use crate::rules::rewrite::ModuleRewrite;

pub const LEARNING_RATE_WITHOUT_WARMUP: Code = Code::new(
    "DST102",
    "learning-rate-without-warmup",
    Severity::Info,
    "The learning rate is scaled by the number of workers with no warm-up.",
);

pub const OPTIMIZER_NOT_FOUND: Code = Code::new(
    "DST109",
    "optimizer-not-found",
    Severity::Warning,
    "The optimizer or its learning rate could not be found or resolved.",
);

pub const SCHEDULE_WRAPPED: Code = Code::new(
    "DST119",
    "schedule-wrapped",
    Severity::Info,
    "A learning-rate schedule class of the package cannot be multiplied: it is wrapped in a schedule that multiplies its value by the number of workers.",
);

pub const CODES: &[Code] = &[
    LEARNING_RATE_WITHOUT_WARMUP,
    OPTIMIZER_NOT_FOUND,
    SCHEDULE_WRAPPED,
];

/// What the pass and the patterns that scale a call themselves share.
#[derive(Debug, Default)]
pub struct LearningRateState {
    /// Calls (by start offset) a pattern already rewrote as a whole.
    pub handled_calls: HashSet<usize>,
    /// The name of the schedule wrapper class this module got, once made.
    pub schedule_wrapper: Option<String>,
    /// The first optimizer or schedule whose rate was scaled: where DST102 points.
    pub first_scaled_call: Option<Range<usize>>,
    /// The loops whose work could not be split among the workers.
    left_whole: LoopsLeftWhole,
    /// A warm-up callback was added to a fit: no DST102 advice is needed.
    pub warmup_added: bool,
    /// Why a fit got no warm-up callback, when a pattern knows.
    pub why_no_warmup: Option<String>,
    /// Keras fits (call ranges) over in-memory arrays whose epochs were
    /// divided among the workers.
    pub fits_with_divided_epochs: Vec<Range<usize>>,
}

/// The training loops of a module whose work could not be split: each
/// worker takes as many steps as one GPU did, so the rate of the optimizer
/// driving one stays as written (a scaled rate would only train worse).
#[derive(Debug, Default, Clone)]
pub struct LoopsLeftWhole {
    /// A loop whose optimizer cannot be told apart from the others': every
    /// rate of the module stays as written.
    every_rate: bool,
    /// Keras fits (call ranges): the rates of the optimizers compiled for
    /// them stay as written, the others' follow their own fits.
    fits: Vec<Range<usize>>,
    /// Other loops (statement ranges): the rates of the TF1 optimizers whose
    /// train ops they run stay as written; any other optimizer's too.
    loops: Vec<Range<usize>>,
}

impl LearningRateState {
    /// A loop was left whole: every rate of the module stays as written.
    pub fn leave_rates(&mut self) {
        self.left_whole.every_rate = true;
    }

    /// A Keras fit was left whole: the optimizers it is compiled with keep
    /// their rates.
    pub fn leave_rate_of_fit(&mut self, fit: Range<usize>) {
        if !self.left_whole.fits.contains(&fit) {
            self.left_whole.fits.push(fit);
        }
    }

    /// A loop was left whole: the optimizers driving it keep their rates
    /// (every optimizer but those whose loops the tool can name).
    pub fn leave_rate_of_loop(&mut self, loop_range: Range<usize>) {
        if !self.left_whole.loops.contains(&loop_range) {
            self.left_whole.loops.push(loop_range);
        }
    }

    /// Whether some loop of the module was left whole.
    pub fn work_not_split(&self) -> bool {
        self.left_whole.every_rate
            || !self.left_whole.fits.is_empty()
            || !self.left_whole.loops.is_empty()
    }

    /// Whether a TF1 optimizer whose train ops run in exactly these loops
    /// (statement ranges, outer ones included) keeps its rate.
    pub fn rate_stays_for_loops(&self, driven: &[Range<usize>]) -> bool {
        self.left_whole.every_rate
            || !self.left_whole.fits.is_empty()
            || driven
                .iter()
                .any(|loop_range| self.left_whole.loops.contains(loop_range))
    }

    /// The loops left whole, for a second proposal that knows them all
    /// before it scales any rate.
    pub fn loops_left_whole(&self) -> LoopsLeftWhole {
        self.left_whole.clone()
    }

    pub fn remember(&mut self, left_whole: LoopsLeftWhole) {
        self.left_whole = left_whole;
    }

    /// Whether an optimizer that drives exactly these fits (`None`: fits the
    /// tool cannot name) keeps its rate.
    pub fn rate_stays_for(&self, fits: Option<&[Range<usize>]>) -> bool {
        match fits {
            _ if !self.work_not_split() => false,
            _ if self.left_whole.every_rate || !self.left_whole.loops.is_empty() => true,
            Some(fits) if !fits.is_empty() => {
                fits.iter().any(|fit| self.left_whole.fits.contains(fit))
            }
            _ => true,
        }
    }
}

/// Scales every optimizer and schedule construction the patterns left alone.
pub fn run(rewrite: &mut ModuleRewrite) {
    // A module that already uses Horovod chose its rates (Horovod's own
    // benchmarks keep theirs); one whose work is not split must keep them.
    if rewrite.had_horovod {
        return;
    }
    let module = rewrite.module;
    let schedules_of = |scope: &Scope| -> HashSet<String> {
        scope
            .facts
            .names_holding(AbstractValue::Schedule)
            .map(String::from)
            .collect()
    };
    let top_level_schedules = schedules_of(&module.scopes[0]);
    for scope in &module.scopes {
        let mut schedule_names = schedules_of(scope);
        schedule_names.extend(top_level_schedules.iter().cloned());
        for site in &scope.facts.calls {
            let handled = rewrite
                .learning_rates
                .handled_calls
                .contains(&span(site.call).start);
            if is_scope(site.statement) || handled {
                continue;
            }
            // Only a schedule can be something else's; the check reads the whole module.
            let is_schedule = matches!(
                rewrite.library_class_of_call(scope, site.call),
                Some(LibraryClass::Schedule(_))
            );
            if is_schedule && is_schedule_of_something_else(rewrite, site) {
                continue;
            }
            scale_call_learning_rate(rewrite, scope, site.call, &schedule_names);
        }
    }
    let mentions_warmup = rewrite.mentions_any(&|name| name.to_lowercase().contains("warmup"));
    if let Some(range) = rewrite.learning_rates.first_scaled_call.clone()
        && !mentions_warmup
        && !rewrite.learning_rates.warmup_added
        && !rewrite.had_horovod
    {
        // A schedule sets the rate at every step: Horovod's warm-up callback,
        // which sets the optimizer's rate, cannot ramp it.
        let scaled_schedule = rewrite.module.scopes.iter().any(|scope| {
            scope.facts.call_at(&range).is_some_and(|site| {
                matches!(
                    rewrite.library_class_of_call(scope, site.call),
                    Some(LibraryClass::Schedule(_))
                )
            })
        });
        let suggestion = match scaled_schedule {
            true => "the scaled rate comes from a schedule, which sets the rate at every step (a warm-up callback cannot ramp it): start the schedule from the single-worker rate and ramp it up over its first steps (a schedule of your own that wraps it)".to_string(),
            false => rewrite.plugin.warmup_suggestion(&rewrite.hvd),
        };
        rewrite.diagnose(
            Diagnostic::new(
                LEARNING_RATE_WITHOUT_WARMUP,
                range,
                match &rewrite.learning_rates.why_no_warmup {
                    Some(why) => format!("learning rate multiplied by hvd.size() with no warm-up ({why}); a large scaled rate can diverge in the first epochs"),
                    None => "learning rate multiplied by hvd.size() with no warm-up; a large scaled rate can diverge in the first epochs".to_string(),
                },
            )
            .with_suggestion(suggestion),
        );
    }
}

/// A schedule assigned to a name the code calls itself (`epsilon(step)`)
/// and never hands to anything: an exploration rate or another quantity
/// that decays, not a learning rate, so it is not scaled.
pub(super) fn is_schedule_of_something_else(rewrite: &ModuleRewrite, site: &CallSite) -> bool {
    let Stmt::Assign(assign) = site.statement else {
        return false;
    };
    if span(assign.value.as_ref()) != span(site.call) {
        return false;
    }
    let [Expr::Name(target)] = assign.targets.as_slice() else {
        return false;
    };
    let name = target.id.as_str();
    let is_name = |expr: &Expr| matches!(expr, Expr::Name(used) if used.id.as_str() == name);
    let calls_it = |expr: &Expr| matches!(expr, Expr::Call(call) if is_name(&call.func));
    let (mut called, mut handed_on) = (false, false);
    for scope in &rewrite.module.scopes {
        for other in &scope.facts.calls {
            let call = other.call;
            called |= is_name(&call.func);
            handed_on |= call.args.iter().any(is_name)
                || call.keywords.iter().any(|keyword| is_name(&keyword.value));
            // `optimizer.learning_rate.assign(schedule(step))`, `Adam(lr=schedule(0))`.
            let sets_a_rate = matches!(call.func.as_ref(), Expr::Attribute(attribute)
                if matches!(attribute.attr.as_str(), "assign" | "set_value"));
            handed_on |= sets_a_rate && call.args.iter().any(calls_it);
            handed_on |= call.keywords.iter().any(|keyword| {
                keyword
                    .arg
                    .as_ref()
                    .is_some_and(|arg| matches!(arg.as_str(), "learning_rate" | "lr"))
                    && calls_it(&keyword.value)
            });
        }
    }
    called && !handed_on
}

/// Scales the learning rate one optimizer or schedule construction passes
/// (or adds the scaled default). Returns whether it did.
pub fn scale_call_learning_rate(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    call: &ast::ExprCall,
    schedule_names: &HashSet<String>,
) -> bool {
    if rewrite.learning_rates.work_not_split() {
        let stays = match super::loops_driven::loops_driven_by(rewrite, scope, call) {
            Some(loops) => rewrite.learning_rates.rate_stays_for_loops(&loops),
            None => {
                let fits = super::fits_driven::fits_driven_by(rewrite, scope, call);
                rewrite.learning_rates.rate_stays_for(fits.as_deref())
            }
        };
        if stays {
            return false;
        }
    }
    let Some(class) = rewrite.library_class_of_call(scope, call) else {
        return false;
    };
    let (LibraryClass::Optimizer(argument) | LibraryClass::Schedule(argument)) = class else {
        return false;
    };
    let is_schedule = matches!(class, LibraryClass::Schedule(_));
    if let Some(value) = learning_rate_value(call, &argument) {
        let value_is_schedule = match value {
            Expr::Call(inner) => matches!(
                rewrite.library_class_of_call(scope, inner),
                Some(LibraryClass::Schedule(_))
            ),
            Expr::Name(name) => schedule_names.contains(name.id.as_str()),
            _ => false,
        };
        if !is_schedule && let Some(class) = package_schedule_class(rewrite, scope, value) {
            return wrap_package_schedule(rewrite, scope, call, value, &class);
        }
        if value_is_schedule || rewrite.uses_worker_count(value) {
            return false;
        }
        if is_schedule && argument.keyword == "values" {
            scale_each(rewrite, value);
        } else {
            rewrite.scale_expression(value);
        }
        rewrite
            .learning_rates
            .first_scaled_call
            .get_or_insert(span(call));
        true
    } else if let Some(unpacked) = call.keywords.iter().find(|keyword| keyword.arg.is_none()) {
        // `Adam(**config)`: the rate may be in the dict, and a second one is a TypeError.
        let text = rewrite.expression_text(&unpacked.value).to_string();
        let size = rewrite.horovod_call("size");
        rewrite.diagnose(
            Diagnostic::new(OPTIMIZER_NOT_FOUND, span(call), format!("the learning rate of this optimizer may be in `**{text}`, so it was not scaled by {size}"))
                .with_suggestion(format!("multiply the `{}` given in `{text}` by `{size}`", argument.keyword)),
        );
        false
    } else if let Some(default) = argument.default {
        let value = format!("{default} * {}", rewrite.horovod_call("size"));
        rewrite.add_keyword(call, argument.keyword, &value);
        rewrite
            .learning_rates
            .first_scaled_call
            .get_or_insert(span(call));
        true
    } else {
        false
    }
}

/// The text of a call with its learning rate scaled, for rules that move
/// the call elsewhere (the chained TF1 `Optimizer(...).minimize(...)`).
/// The call is marked handled so the module-wide scaling skips it.
pub fn scaled_call_text(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    call: &ast::ExprCall,
) -> String {
    let mark = rewrite.sink.len();
    scale_call_learning_rate(rewrite, scope, call, &HashSet::new());
    let range = span(call);
    let local: Vec<Edit> = rewrite
        .sink
        .take_since(mark)
        .into_iter()
        .map(|edit| {
            Edit::replacement(
                edit.range.start - range.start..edit.range.end - range.start,
                edit.content,
            )
        })
        .collect();
    rewrite.learning_rates.handled_calls.insert(range.start);
    crate::python::edit::apply_edits(&rewrite.text[range], &local)
        .unwrap_or_else(|_| rewrite.text[span(call)].to_string())
}

/// Scales each element of a list literal (`PiecewiseConstantDecay` values).
fn scale_each(rewrite: &mut ModuleRewrite, value: &Expr) {
    match value {
        Expr::List(list) => {
            for element in &list.elts {
                rewrite.scale_expression(element);
            }
        }
        other => {
            let text = rewrite.expression_text(other);
            let replacement = format!(
                "[value * {} for value in {text}]",
                rewrite.horovod_call("size")
            );
            rewrite.edit(Edit::replacement(span(other), replacement));
        }
    }
}
/// The learning-rate argument a call passes, by keyword or position.
pub fn learning_rate_value<'e>(
    call: &'e ast::ExprCall,
    argument: &LearningRateArgument,
) -> Option<&'e Expr> {
    let by_keyword = call.keywords.iter().find(|keyword| {
        keyword.arg.as_ref().is_some_and(|name| {
            name.as_str() == argument.keyword || Some(name.as_str()) == argument.legacy_keyword
        })
    });
    if let Some(keyword) = by_keyword {
        return Some(&keyword.value);
    }
    call.args.get(argument.position).filter(|_| {
        !call
            .args
            .iter()
            .take(argument.position + 1)
            .any(|a| matches!(a, Expr::Starred(_)))
    })
}

/// The package class of a schedule given as a learning rate
/// (`Adam(CustomSchedule(d_model))`, or a name assigned one): a
/// `LearningRateSchedule` subclass that `* hvd.size()` would break.
fn package_schedule_class(rewrite: &ModuleRewrite, scope: &Scope, value: &Expr) -> Option<String> {
    let callee = match value {
        Expr::Call(inner) => rewrite.callee(scope, &inner.func)?,
        Expr::Name(_) => rewrite.assignment_of(value)?.callee.clone()?,
        _ => return None,
    };
    let package = rewrite.analysis.package;
    let is_library = matches!(
        library::library_class(&callee),
        Some(LibraryClass::Schedule(_))
    );
    (!is_library && package.is_subclass(&callee, library::KERAS_SCHEDULE)).then_some(callee)
}

/// Wraps a package schedule in a schedule that multiplies its value by the
/// number of workers, defined once before the optimizer's statement.
fn wrap_package_schedule(
    rewrite: &mut ModuleRewrite,
    scope: &Scope,
    call: &ast::ExprCall,
    value: &Expr,
    class: &str,
) -> bool {
    let class_name = class.rsplit('.').next().unwrap_or(class);
    let scales_itself = rewrite
        .module
        .module
        .definition(class_name)
        .is_some_and(|definition| {
            let mut scales = false;
            crate::analysis::walk::for_each_statement(
                std::slice::from_ref(definition),
                true,
                &mut |statement| {
                    crate::analysis::walk::walk_statement_expressions(statement, &mut |expr| {
                        scales |= rewrite.calls_horovod(expr, "size");
                    });
                },
            );
            scales
        });
    let Some(site) = scope.facts.call_at(&span(call)) else {
        return false;
    };
    if scales_itself {
        return false;
    }
    let wrapper = match rewrite.learning_rates.schedule_wrapper.clone() {
        Some(wrapper) => wrapper,
        None => define_schedule_wrapper(rewrite, site.statement),
    };
    let value_text = rewrite.expression_text(value).to_string();
    rewrite.edit(Edit::replacement(
        span(value),
        format!("{wrapper}({value_text})"),
    ));
    rewrite
        .learning_rates
        .first_scaled_call
        .get_or_insert(span(call));
    rewrite.diagnose(Diagnostic::new(
        SCHEDULE_WRAPPED,
        span(value),
        format!("`{value_text}` is a schedule of this package, which `* hvd.size()` would break: it is wrapped in `{wrapper}`, which multiplies its value by the number of workers"),
    ));
    true
}

fn define_schedule_wrapper(rewrite: &mut ModuleRewrite, before: &ast::Stmt) -> String {
    let wrapper = rewrite.fresh(&["ScaledLearningRate", "HorovodScaledLearningRate"]);
    let (tf, hvd) = (rewrite.tf.clone(), rewrite.hvd.clone());
    let unit = rewrite.stylist.indent_unit.clone();
    let lines = [
        format!("@{tf}.keras.utils.register_keras_serializable(package=\"distribute\")"),
        format!("class {wrapper}({tf}.keras.optimizers.schedules.LearningRateSchedule):"),
        format!("{unit}\"\"\"A schedule's rate times the number of Horovod workers.\"\"\""),
        String::new(),
        format!("{unit}made = {{}}"),
        String::new(),
        format!("{unit}def __init__(self, schedule):"),
        format!("{unit}{unit}super().__init__()"),
        format!("{unit}{unit}self.schedule = schedule"),
        format!("{unit}{unit}{wrapper}.made[id(self)] = self"),
        String::new(),
        format!("{unit}def __call__(self, step):"),
        format!("{unit}{unit}return self.schedule(step) * {hvd}.size()"),
        String::new(),
        format!("{unit}def get_config(self):"),
        format!("{unit}{unit}# Optimizers copy their schedule through its config (Horovod's"),
        format!("{unit}{unit}# DistributedOptimizer does): the schedule is kept by identity."),
        format!("{unit}{unit}return {{\"made\": id(self)}}"),
        String::new(),
        format!("{unit}@classmethod"),
        format!("{unit}def from_config(cls, config):"),
        format!("{unit}{unit}return cls.made[config[\"made\"]]"),
        String::new(),
        String::new(),
    ];
    rewrite.insert_before_statement(&span_with_decorators(before), &lines);
    rewrite.learning_rates.schedule_wrapper = Some(wrapper.clone());
    wrapper
}
