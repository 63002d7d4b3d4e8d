//! Shared pieces of every pattern's rewrite (SPEC 4.1): the Horovod import,
//! the init block, rank-0 guards, learning-rate scaling, step division and
//! removal of the user's own device pinning, plus the edit helpers they use.

use std::collections::HashSet;
use std::ops::Range;

use rustpython_parser::ast::{self, Constant, Expr, Operator, Stmt, UnaryOp};

use crate::analysis::bindings::assigned_names;
use crate::analysis::library::{self, LearningRateArgument, LibraryClass};
use crate::analysis::training::{Analysis, ModuleAnalysis, Scope, TrainingPattern, callee_name};
use crate::analysis::walk::{
    calls_in_statement, for_each_statement, is_scope, nested_bodies, walk_expression,
    walk_statement_expressions,
};
use crate::diagnostics::{Code, Diagnostic};
use crate::python::edit::Edit;
use crate::python::parse::span;
use crate::python::source::{
    indentation_at, line_end_including_newline, line_start, newline_style,
};

/// The rewrite of one training module in progress: the names generated code
/// uses, and the edits and diagnostics produced so far.
pub struct ModuleRewrite<'a> {
    pub analysis: &'a Analysis<'a>,
    pub module: &'a ModuleAnalysis<'a>,
    pub text: &'a str,
    pub pattern: TrainingPattern,
    /// The module's name for the Horovod module (`hvd` unless taken).
    pub hvd: String,
    /// The module's name for tensorflow (`tf`, `tensorflow`, ...).
    pub tf: String,
    pub indent_unit: String,
    pub quote: char,
    pub newline: &'static str,
    /// Names used anywhere in the module, to keep generated names fresh.
    pub taken_names: HashSet<String>,
    /// Whether the module imported Horovod before the rewrite.
    pub had_horovod: bool,
    /// The module's name for `horovod.tensorflow` when a Keras module needs it
    /// too (the tape of a model's own `train_step`).
    pub horovod_tensorflow: Option<String>,
    pub edits: Vec<Edit>,
    pub diagnostics: Vec<Diagnostic>,
    /// Imports to insert after the tensorflow import, in order.
    imports: Vec<String>,
    /// Calls whose added keywords go on lines of their own (the line was too long).
    continued_calls: HashSet<usize>,
    /// Calls (by start offset) a rule already rewrote as a whole.
    pub handled_calls: HashSet<usize>,
    /// The first optimizer or schedule whose learning rate was scaled.
    first_scaled_call: Option<Range<usize>>,
    pub options: super::RuleOptions,
}

/// Lines longer than this get added keyword arguments on a line of their own
/// (black's default length).
const MAX_LINE_LENGTH: usize = 88;

/// The Horovod module each pattern needs (SPEC 4).
pub fn horovod_module(pattern: TrainingPattern) -> &'static str {
    match pattern {
        TrainingPattern::Keras => "horovod.tensorflow.keras",
        TrainingPattern::GradientTape
        | TrainingPattern::Session
        | TrainingPattern::MonitoredSession
        | TrainingPattern::Estimator => "horovod.tensorflow",
    }
}

impl<'a> ModuleRewrite<'a> {
    pub fn new(
        analysis: &'a Analysis<'a>,
        module: &'a ModuleAnalysis<'a>,
        pattern: TrainingPattern,
    ) -> Self {
        let text = module.module.source.text.as_str();
        let bindings = &module.module.bindings;
        let mut taken_names = assigned_names(&module.module.body);
        taken_names.extend(bindings.iter().map(|(name, _)| name.clone()));
        let had_horovod = bindings
            .iter()
            .any(|(_, binding)| library::is_horovod(&binding.qualified));
        // The tape of a Keras model's own `train_step` (a `with` statement, where
        // a delegated `fit` is a call) needs horovod.tensorflow's DistributedGradientTape.
        let is_model_step_tape = |site: &crate::analysis::training::TrainingSite| {
            site.pattern == TrainingPattern::Keras
                && site.is_model_function
                && text[site.range.clone()].starts_with("with")
        };
        let has_model_steps = module.sites.iter().any(is_model_step_tape);
        // A module whose only Keras code is a model's `train_step` needs only the tape.
        let wanted = if has_model_steps && module.sites.iter().all(is_model_step_tape) {
            "horovod.tensorflow"
        } else {
            horovod_module(pattern)
        };
        let mut imports = Vec::new();
        let mut import_horovod = |wanted: &str, candidates: &[&str]| match bindings.name_for(wanted)
        {
            Some(name) => name.to_string(),
            None => {
                let name = fresh_name(candidates, &taken_names);
                taken_names.insert(name.clone());
                imports.push(format!("import {wanted} as {name}"));
                name
            }
        };
        let hvd = import_horovod(wanted, &["hvd", "horovod_", "hvd_"]);
        let horovod_tensorflow = if wanted == "horovod.tensorflow" {
            Some(hvd.clone())
        } else if has_model_steps {
            Some(import_horovod(
                "horovod.tensorflow",
                &["hvd_tf", "horovod_tf"],
            ))
        } else {
            None
        };
        let tf = match bindings.name_for("tensorflow") {
            Some(name) => name.to_string(),
            None => {
                // `tf` taken only by function-level `import tensorflow as tf` may be reused at the top.
                let means_tensorflow = |scope: &Scope| {
                    scope
                        .bindings
                        .get("tf")
                        .map(|binding| library::canonical_name(&binding.qualified) == "tensorflow")
                };
                let tensorflow_only_in_functions = module
                    .scopes
                    .iter()
                    .all(|scope| means_tensorflow(scope) != Some(false))
                    && module
                        .scopes
                        .iter()
                        .any(|scope| means_tensorflow(scope) == Some(true));
                let mut candidates_taken = taken_names.clone();
                if tensorflow_only_in_functions {
                    candidates_taken.remove("tf");
                }
                let name = fresh_name(&["tf", "tensorflow"], &candidates_taken);
                taken_names.insert(name.clone());
                imports.insert(
                    0,
                    if name == "tensorflow" {
                        "import tensorflow".to_string()
                    } else {
                        format!("import tensorflow as {name}")
                    },
                );
                name
            }
        };
        ModuleRewrite {
            analysis,
            module,
            text,
            pattern,
            hvd,
            tf,
            indent_unit: indent_unit(text),
            quote: quote_style(&module.module.body, text),
            newline: newline_style(text),
            taken_names,
            had_horovod,
            horovod_tensorflow,
            edits: Vec::new(),
            diagnostics: Vec::new(),
            imports,
            continued_calls: HashSet::new(),
            handled_calls: HashSet::new(),
            first_scaled_call: None,
            options: super::RuleOptions::default(),
        }
    }

    pub fn source(&self, range: Range<usize>) -> &'a str {
        &self.text[range]
    }

    pub fn expression_text(&self, expr: &Expr) -> &'a str {
        self.source(span(expr))
    }

    pub fn diagnose(&mut self, diagnostic: Diagnostic) {
        if !self.diagnostics.contains(&diagnostic) {
            self.diagnostics.push(diagnostic);
        }
    }

    /// A string literal in the file's quote style.
    pub fn string(&self, value: &str) -> String {
        format!("{0}{value}{0}", self.quote)
    }

    /// `hvd.size()`, `hvd.rank()` ... in the module's alias.
    pub fn horovod_call(&self, function: &str) -> String {
        format!("{}.{function}()", self.hvd)
    }

    pub fn rank_zero_test(&self) -> String {
        format!("{}.rank() == 0", self.hvd)
    }

    pub fn fresh(&mut self, candidates: &[&str]) -> String {
        let name = fresh_name(candidates, &self.taken_names);
        self.taken_names.insert(name.clone());
        name
    }

    /// Whether an expression calls `<horovod>.<function>(...)` anywhere in it.
    pub fn calls_horovod(&self, expr: &Expr, function: &str) -> bool {
        let mut found = false;
        walk_expression(expr, &mut |inner| {
            if let Expr::Call(call) = inner
                && let Expr::Attribute(attribute) = call.func.as_ref()
                && attribute.attr.as_str() == function
                && self.is_horovod_expression(&attribute.value)
            {
                found = true;
            }
        });
        found
    }

    /// Whether an expression refers to `<horovod>...<attribute>` (`hvd.callbacks.MetricAverageCallback`).
    pub fn calls_horovod_attribute(&self, expr: &Expr, attribute_name: &str) -> bool {
        let mut found = false;
        walk_expression(expr, &mut |inner| {
            if let Expr::Attribute(attribute) = inner
                && attribute.attr.as_str() == attribute_name
                && self.is_horovod_expression(&attribute.value)
            {
                found = true;
            }
        });
        found
    }

    /// Whether `name` is assigned, in `body` (not in nested scopes), a value
    /// that uses `<horovod>...<attribute>` (`tape = hvd.DistributedGradientTape(tape)`):
    /// how rules recognise what an earlier run already added.
    pub fn is_assigned_from_horovod(&self, body: &[Stmt], name: &str, attribute: &str) -> bool {
        let mut found = false;
        for_each_statement(body, false, &mut |stmt| {
            if let Stmt::Assign(assign) = stmt
                && assign.targets.iter().any(
                    |target| matches!(target, Expr::Name(target) if target.id.as_str() == name),
                )
                && self.calls_horovod_attribute(&assign.value, attribute)
            {
                found = true;
            }
        });
        found
    }

    /// Whether a statement already sits under `if hvd.rank() == 0:`.
    pub fn is_guarded(&self, target: &Stmt) -> bool {
        let target = span(target);
        let mut guarded = false;
        for_each_statement(&self.module.module.body, true, &mut |stmt| {
            if let Stmt::If(node) = stmt
                && self.is_rank_zero_test(&node.test)
                && node.body.iter().any(|inner| {
                    let range = span(inner);
                    range.start <= target.start && target.end <= range.end
                })
            {
                guarded = true;
            }
        });
        guarded
    }

    fn is_horovod_expression(&self, expr: &Expr) -> bool {
        match expr {
            Expr::Name(name) if name.id.as_str() == self.hvd => true,
            Expr::Attribute(attribute) if self.is_horovod_expression(&attribute.value) => true,
            _ => self
                .module
                .module
                .bindings
                .resolve_raw(expr)
                .is_some_and(|name| library::is_horovod(&name)),
        }
    }

    /// Whether a statement-level test is `hvd.rank() == 0` (or `local_rank`).
    pub fn is_rank_zero_test(&self, test: &Expr) -> bool {
        let Expr::Compare(compare) = test else {
            return false;
        };
        let operands: Vec<&Expr> = std::iter::once(compare.left.as_ref())
            .chain(compare.comparators.iter())
            .collect();
        matches!(compare.ops.as_slice(), [ast::CmpOp::Eq])
            && operands.iter().any(|operand| {
                self.calls_horovod(operand, "rank") || self.calls_horovod(operand, "local_rank")
            })
            && operands.iter().any(|operand| is_integer(operand, 0))
    }

    // ----- placing text -----

    /// Whether a statement starts its line and no other statement follows on its last line.
    pub fn owns_its_lines(&self, range: &Range<usize>) -> bool {
        let start = line_start(self.text, range.start);
        let before = &self.text[start..range.start];
        let end =
            line_end_including_newline(self.text, range.end.saturating_sub(1).max(range.start));
        let after = self.text[range.end..end].trim_start();
        before.trim().is_empty() && (after.is_empty() || after.starts_with('#'))
    }

    fn indented_lines(&self, indentation: &str, lines: &[String]) -> String {
        let mut block = String::new();
        for line in lines {
            for physical in line.split('\n') {
                if physical.is_empty() {
                    block.push_str(self.newline);
                } else {
                    block.push_str(indentation);
                    block.push_str(physical);
                    block.push_str(self.newline);
                }
            }
        }
        block
    }

    /// Inserts statements after the statement at `range`, at its indentation.
    pub fn insert_after_statement(&mut self, range: &Range<usize>, lines: &[String]) {
        let indentation = indentation_at(self.text, range.start).to_string();
        let offset =
            line_end_including_newline(self.text, range.end.saturating_sub(1).max(range.start));
        let mut block = self.indented_lines(&indentation, lines);
        if offset == self.text.len() && !self.text.ends_with('\n') {
            block.insert_str(0, self.newline);
        }
        self.edits.push(Edit::insertion(offset, block));
    }

    /// Inserts statements before the statement at `range`, at its indentation.
    pub fn insert_before_statement(&mut self, range: &Range<usize>, lines: &[String]) {
        let indentation = indentation_at(self.text, range.start).to_string();
        let offset = line_start(self.text, range.start);
        let block = self.indented_lines(&indentation, lines);
        self.edits.push(Edit::insertion(offset, block));
    }

    /// Puts consecutive statements of one block under a single `if hvd.rank() == 0:`.
    pub fn guard_statements(&mut self, statements: &[&Stmt]) {
        let (Some(first), Some(last)) = (statements.first(), statements.last()) else {
            return;
        };
        let range = span(*first).start..span(*last).end;
        let indentation = indentation_at(self.text, range.start).to_string();
        let first_line = line_start(self.text, range.start);
        let mut multiline_strings = Vec::new();
        for stmt in statements {
            walk_statement_expressions(stmt, &mut |expr| {
                if matches!(
                    expr,
                    Expr::Constant(ast::ExprConstant {
                        value: Constant::Str(_) | Constant::Bytes(_),
                        ..
                    }) | Expr::JoinedStr(_)
                ) && self.source(span(expr)).contains('\n')
                {
                    multiline_strings.push(span(expr));
                }
            });
        }
        self.edits.push(Edit::insertion(
            first_line,
            format!(
                "{indentation}if {}:{}{}",
                self.rank_zero_test(),
                self.newline,
                self.indent_unit
            ),
        ));
        let mut offset = line_end_including_newline(self.text, range.start);
        while offset < range.end {
            let inside_string = multiline_strings
                .iter()
                .any(|string| string.start < offset && offset < string.end);
            let line_end = line_end_including_newline(self.text, offset);
            let blank = self.text[offset..line_end].trim().is_empty();
            if !inside_string && !blank {
                self.edits
                    .push(Edit::insertion(offset, self.indent_unit.clone()));
            }
            offset = line_end;
        }
    }

    /// Deletes a whole statement (its lines), leaving `pass` if its block would be empty.
    pub fn remove_statement(&mut self, range: &Range<usize>, only_statement_in_block: bool) {
        let start = line_start(self.text, range.start);
        let end =
            line_end_including_newline(self.text, range.end.saturating_sub(1).max(range.start));
        if only_statement_in_block {
            let indentation = indentation_at(self.text, range.start).to_string();
            self.edits.push(Edit::replacement(
                start..end,
                format!("{indentation}pass{}", self.newline),
            ));
        } else {
            self.edits.push(Edit::deletion(start..end));
        }
    }

    /// Adds `name=value` to a call, after its last argument, following the
    /// call's layout (one argument per line, or all on one line).
    pub fn add_keyword(&mut self, call: &ast::ExprCall, name: &str, value: &str) {
        let last_argument_end = call
            .args
            .iter()
            .map(|argument| span(argument).end)
            .chain(call.keywords.iter().map(|keyword| span(keyword).end))
            .max();
        let call_range = span(call);
        match last_argument_end {
            None => {
                // `f()`: insert before the closing parenthesis.
                let offset = call_range.end - 1;
                self.edits
                    .push(Edit::insertion(offset, format!("{name}={value}")));
            }
            Some(end) => {
                let first_argument_start = call
                    .args
                    .iter()
                    .map(|argument| span(argument).start)
                    .chain(call.keywords.iter().map(|keyword| span(keyword).start))
                    .min()
                    .unwrap_or(end);
                let open_line = line_start(self.text, span(&*call.func).end);
                let arguments_on_own_lines =
                    line_start(self.text, first_argument_start) != open_line;
                let line_length = {
                    let start = line_start(self.text, end);
                    let stop = line_end_including_newline(self.text, end);
                    self.text[start..stop].trim_end().chars().count()
                };
                let too_long = line_length + name.len() + value.len() + 3 > MAX_LINE_LENGTH;
                // After the last argument: an optional trailing comma, then only a comment?
                let rest_of_line = &self.text[end..line_end_including_newline(self.text, end)];
                let after_comma = rest_of_line.trim_start().strip_prefix(',');
                let line_is_finished = |rest: &str| {
                    let rest = rest.trim();
                    rest.is_empty() || rest.starts_with('#')
                };
                if arguments_on_own_lines {
                    let indentation = indentation_at(self.text, first_argument_start).to_string();
                    let next_line = line_end_including_newline(self.text, end);
                    match after_comma {
                        // `arg,  # comment`: the new argument gets a line of its own below.
                        Some(rest) if line_is_finished(rest) => self.edits.push(Edit::insertion(
                            next_line,
                            format!("{indentation}{name}={value},{}", self.newline),
                        )),
                        None if line_is_finished(rest_of_line)
                            && rest_of_line.trim_start().starts_with('#') =>
                        {
                            self.edits.push(Edit::insertion(end, ","));
                            self.edits.push(Edit::insertion(
                                next_line,
                                format!("{indentation}{name}={value}{}", self.newline),
                            ));
                        }
                        _ => self.edits.push(Edit::insertion(
                            end,
                            format!(",{}{indentation}{name}={value}", self.newline),
                        )),
                    }
                } else if (too_long || self.continued_calls.contains(&call_range.start))
                    && line_start(self.text, end) == open_line
                {
                    self.continued_calls.insert(call_range.start);
                    // Continue under the first argument, as PEP 8's aligned style does.
                    let column = self.text[open_line..first_argument_start].chars().count();
                    let alignment = " ".repeat(column);
                    self.edits.push(Edit::insertion(
                        end,
                        format!(",{}{alignment}{name}={value}", self.newline),
                    ));
                } else {
                    self.edits
                        .push(Edit::insertion(end, format!(", {name}={value}")));
                }
            }
        }
    }

    /// `expr * hvd.size()`, parenthesised where precedence needs it.
    pub fn scaled(&self, expr: &Expr) -> String {
        format!(
            "{} * {}",
            self.operand_text(expr),
            self.horovod_call("size")
        )
    }

    /// A step count divided among workers: `n // hvd.size()` for a literal,
    /// `max(1, n // hvd.size())` otherwise (SPEC 4.1).
    /// `max(1, n // hvd.size())`: at least one step, even a literal `3` on
    /// eight workers (`steps_per_epoch=0` stops Keras with empty logs, and
    /// `validation_steps=0` silently drops validation).
    pub fn divided(&self, expr: &Expr) -> String {
        format!(
            "max(1, {} // {})",
            self.operand_text(expr),
            self.horovod_call("size")
        )
    }

    fn operand_text(&self, expr: &Expr) -> String {
        let text = self.expression_text(expr);
        if binds_at_least_as_tightly_as_multiplication(expr) {
            text.to_string()
        } else {
            format!("({text})")
        }
    }

    /// Replaces an expression with its scaled form.
    pub fn scale_expression(&mut self, expr: &Expr) {
        if self.calls_horovod(expr, "size") {
            return;
        }
        let range = span(expr);
        let replacement = self.scaled(expr);
        self.edits.push(Edit::replacement(range, replacement));
    }

    /// Replaces a step count with its divided form.
    pub fn divide_expression(&mut self, expr: &Expr) {
        if self.calls_horovod(expr, "size") {
            return;
        }
        let replacement = self.divided(expr);
        self.edits.push(Edit::replacement(span(expr), replacement));
    }

    // ----- the parts every pattern shares -----

    /// The Horovod import (and a tensorflow import when the module has none
    /// at its top), right after the module's tensorflow import.
    pub fn add_imports(&mut self) {
        if self.imports.is_empty() {
            return;
        }
        let body = &self.module.module.body;
        let anchor = body
            .iter()
            .filter(|stmt| matches!(stmt, Stmt::Import(_) | Stmt::ImportFrom(_)))
            .find(|stmt| imports_tensorflow(stmt))
            .or_else(|| last_import(body))
            .map(span);
        let lines = self.imports.clone();
        match anchor {
            Some(range) => self.insert_after_statement(&range, &lines),
            None => {
                let offset = after_docstring_and_future(body, self.text);
                let block = self.indented_lines("", &lines);
                self.edits.push(Edit::insertion(offset, block));
            }
        }
    }

    /// `hvd.init()` and GPU pinning after the module's import block (SPEC 4.1).
    pub fn add_init_block(&mut self) {
        let body = &self.module.module.body;
        let mut initialised = false;
        for_each_statement(body, true, &mut |stmt| {
            for call in calls_in_statement(stmt) {
                if let Expr::Attribute(attribute) = call.func.as_ref()
                    && attribute.attr.as_str() == "init"
                    && self.is_horovod_expression(&attribute.value)
                {
                    initialised = true;
                }
            }
        });
        if initialised {
            return;
        }
        if self.module.sites.iter().all(|site| site.is_model_function) {
            // A model_fn or a step function runs inside a loop of another module,
            // after that module's hvd.init().
            return;
        }
        let (tf, hvd) = (self.tf.clone(), self.hvd.clone());
        if matches!(
            self.pattern,
            TrainingPattern::Session
                | TrainingPattern::MonitoredSession
                | TrainingPattern::Estimator
        ) {
            // TF1 pins the GPU through the session's ConfigProto instead.
            let lines = vec![String::new(), format!("{hvd}.init()")];
            match init_anchor(body).map(span) {
                Some(range) => self.insert_after_statement(&range, &lines),
                None => {
                    let offset = after_docstring_and_future(body, self.text);
                    let block = self.indented_lines("", &lines[1..]);
                    self.edits.push(Edit::insertion(offset, block));
                }
            }
            return;
        }
        let gpus = self.fresh(&["gpus", "hvd_gpus"]);
        let gpu = self.fresh(&["gpu", "hvd_gpu"]);
        let gpu_string = self.string("GPU");
        let unit = self.indent_unit.clone();
        let lines = vec![
            String::new(),
            format!("{hvd}.init()"),
            format!("{gpus} = {tf}.config.experimental.list_physical_devices({gpu_string})"),
            format!(
                "for {gpu} in {gpus}:\n{unit}{tf}.config.experimental.set_memory_growth({gpu}, True)"
            ),
            format!(
                "if {gpus}:\n{unit}{tf}.config.experimental.set_visible_devices({gpus}[{hvd}.local_rank()], {gpu_string})"
            ),
        ];
        match init_anchor(body).map(span) {
            Some(range) => {
                let mut lines = lines;
                let next_offset =
                    line_end_including_newline(self.text, range.end.saturating_sub(1));
                if !self.text[next_offset..].starts_with(['\n', '\r'])
                    && next_offset < self.text.len()
                {
                    lines.push(String::new());
                }
                self.insert_after_statement(&range, &lines);
            }
            None => {
                let offset = after_docstring_and_future(body, self.text);
                let mut block = self.indented_lines("", &lines[1..]);
                block.push_str(self.newline);
                self.edits.push(Edit::insertion(offset, block));
            }
        }
    }

    /// Scales the learning rate of every optimizer and schedule the module
    /// constructs (SPEC 4.1). A schedule passed to an optimizer is scaled, not both.
    pub fn scale_learning_rates(&mut self) {
        let module = self.module;
        let is_schedule = |class| matches!(class, LibraryClass::Schedule(_));
        let top_level_schedules = names_bound_to(self, &module.scopes[0], is_schedule);
        for scope in &module.scopes {
            let mut schedule_names = names_bound_to(self, scope, is_schedule);
            schedule_names.extend(top_level_schedules.iter().cloned());
            for_each_statement(scope.body, false, &mut |stmt| {
                if is_scope(stmt) {
                    return;
                }
                for call in calls_in_statement(stmt) {
                    if self.handled_calls.contains(&span(call).start) {
                        continue;
                    }
                    self.scale_call_learning_rate(scope, call, &schedule_names);
                }
            });
        }
        let mentions_warmup = self.text.contains("Warmup") || self.text.contains("warmup");
        if let Some(range) = self.first_scaled_call.clone()
            && !mentions_warmup
            && !self.had_horovod
        {
            let suggestion = match self.pattern {
                TrainingPattern::Keras => format!(
                    "add `{}.callbacks.LearningRateWarmupCallback(initial_lr=<scaled rate>, warmup_epochs=5)` to the callbacks",
                    self.hvd
                ),
                _ => "ramp the rate up from the single-worker value over the first epochs"
                    .to_string(),
            };
            self.diagnose(
                Diagnostic::new(
                    Code::LearningRateWithoutWarmup,
                    range,
                    "learning rate multiplied by hvd.size() with no warm-up; a large scaled rate can diverge in the first epochs",
                )
                .with_suggestion(suggestion),
            );
        }
    }

    /// Scales the learning rate one optimizer or schedule construction passes
    /// (or adds the scaled default). Returns whether it did.
    pub fn scale_call_learning_rate(
        &mut self,
        scope: &Scope,
        call: &ast::ExprCall,
        schedule_names: &HashSet<String>,
    ) -> bool {
        let Some(class) = self.library_class_of_call(scope, call) else {
            return false;
        };
        let (LibraryClass::Optimizer(argument) | LibraryClass::Schedule(argument)) = class else {
            return false;
        };
        let is_schedule = matches!(class, LibraryClass::Schedule(_));
        if let Some(value) = learning_rate_value(call, &argument) {
            let value_is_schedule = match value {
                Expr::Call(inner) => matches!(
                    self.library_class_of_call(scope, inner),
                    Some(LibraryClass::Schedule(_))
                ),
                Expr::Name(name) => schedule_names.contains(name.id.as_str()),
                _ => false,
            };
            if value_is_schedule || self.calls_horovod(value, "size") {
                return false;
            }
            if is_schedule && argument.keyword == "values" {
                self.scale_each(value);
            } else {
                self.scale_expression(value);
            }
            self.first_scaled_call.get_or_insert(span(call));
            true
        } else if let Some(unpacked) = call.keywords.iter().find(|keyword| keyword.arg.is_none()) {
            // `Adam(**config)`: the rate may be in the dict, and a second one is a TypeError.
            let text = self.expression_text(&unpacked.value).to_string();
            let size = self.horovod_call("size");
            self.diagnose(
                Diagnostic::new(Code::OptimizerNotFound, span(call), format!("the learning rate of this optimizer may be in `**{text}`, so it was not scaled by {size}"))
                    .with_suggestion(format!("multiply the `{}` given in `{text}` by `{size}`", argument.keyword)),
            );
            false
        } else if let Some(default) = argument.default {
            let value = format!("{default} * {}", self.horovod_call("size"));
            self.add_keyword(call, argument.keyword, &value);
            self.first_scaled_call.get_or_insert(span(call));
            true
        } else {
            false
        }
    }

    /// The text of a call with its learning rate scaled, for rules that move
    /// the call elsewhere (the chained TF1 `Optimizer(...).minimize(...)`).
    /// The call is marked handled so the module-wide scaling skips it.
    pub fn scaled_call_text(&mut self, scope: &Scope, call: &ast::ExprCall) -> String {
        let mark = self.edits.len();
        self.scale_call_learning_rate(scope, call, &HashSet::new());
        let range = span(call);
        let local: Vec<Edit> = self
            .edits
            .drain(mark..)
            .map(|edit| {
                Edit::replacement(
                    edit.range.start - range.start..edit.range.end - range.start,
                    edit.content,
                )
            })
            .collect();
        self.handled_calls.insert(range.start);
        crate::python::edit::apply_edits(&self.text[range], &local)
            .unwrap_or_else(|_| self.text[span(call)].to_string())
    }

    /// Inserts `.shard(hvd.size(), hvd.rank())` right after the source of the
    /// tf.data pipeline `dataset` names (or is), so that each worker reads its
    /// own part. Returns whether it found a pipeline to shard.
    pub fn shard_dataset(&mut self, scope: &Scope, dataset: &Expr) -> bool {
        let pipeline: Option<&Expr> = match dataset {
            Expr::Name(name) => {
                let mut value = None;
                for candidate in [scope, &self.module.scopes[0]] {
                    for_each_statement(candidate.body, false, &mut |stmt| {
                        if let Stmt::Assign(assign) = stmt
                            && value.is_none()
                            && assign.targets.iter().any(|target| matches!(target, Expr::Name(target) if target.id == name.id))
                            && self.dataset_source(candidate, &assign.value).is_some()
                        {
                            value = Some(assign.value.as_ref());
                        }
                    });
                    if value.is_some() {
                        break;
                    }
                }
                value
            }
            other => Some(other),
        };
        let Some(source) = pipeline.and_then(|pipeline| self.dataset_source(scope, pipeline))
        else {
            return false;
        };
        let shard = format!(
            ".shard({}, {})",
            self.horovod_call("size"),
            self.horovod_call("rank")
        );
        self.edits.push(Edit::insertion(source.end, shard));
        true
    }

    /// The range of the call that creates a tf.data pipeline inside `expr`.
    fn dataset_source(&self, scope: &Scope, expr: &Expr) -> Option<Range<usize>> {
        let mut found = None;
        walk_expression(expr, &mut |inner| {
            if found.is_none()
                && let Expr::Call(call) = inner
                && callee_name(self.analysis.package, self.module.module, scope, &call.func)
                    .is_some_and(|callee| {
                        matches!(
                            callee.as_str(),
                            "tensorflow.data.Dataset.from_tensor_slices"
                                | "tensorflow.data.Dataset.from_tensors"
                                | "tensorflow.data.Dataset.from_generator"
                                | "tensorflow.data.Dataset.range"
                                | "tensorflow.data.Dataset.list_files"
                                | "tensorflow.data.TFRecordDataset"
                                | "tensorflow.data.TextLineDataset"
                        )
                    })
            {
                found = Some(span(call));
            }
        });
        found
    }

    /// Scales each element of a list literal (`PiecewiseConstantDecay` values).
    fn scale_each(&mut self, value: &Expr) {
        match value {
            Expr::List(list) => {
                for element in &list.elts {
                    self.scale_expression(element);
                }
            }
            other => {
                let text = self.expression_text(other);
                let replacement = format!(
                    "[value * {} for value in {text}]",
                    self.horovod_call("size")
                );
                self.edits.push(Edit::replacement(span(other), replacement));
            }
        }
    }

    pub fn library_class_of_call(
        &self,
        scope: &Scope,
        call: &ast::ExprCall,
    ) -> Option<LibraryClass> {
        let callee = callee_name(self.analysis.package, self.module.module, scope, &call.func)?;
        library::library_class(&callee)
    }

    /// Removes the user's own device pinning: Horovod pins devices now.
    pub fn remove_device_pinning(&mut self) {
        let module = self.module;
        for scope in &module.scopes {
            self.remove_device_pinning_in(scope, scope.body);
        }
    }

    fn remove_device_pinning_in(&mut self, scope: &Scope, body: &[Stmt]) {
        let removable: Vec<bool> = body
            .iter()
            .map(|stmt| self.is_device_pinning(scope, stmt))
            .collect();
        let all_removed = removable.iter().all(|removable| *removable);
        for (index, stmt) in body.iter().enumerate() {
            if removable[index] {
                let range = span(stmt);
                if !self.owns_its_lines(&range) {
                    continue;
                }
                let keep_pass = all_removed
                    && index == body.len() - 1
                    && !std::ptr::eq(body, self.module.module.body.as_slice());
                self.remove_statement(&range, keep_pass);
                self.diagnose(Diagnostic::new(
                    Code::DevicePinningRemoved,
                    range,
                    format!(
                        "removed `{}`: Horovod pins one GPU per process with hvd.local_rank()",
                        first_line(self.source(span(stmt)))
                    ),
                ));
            } else if !is_scope(stmt) {
                for nested in nested_bodies(stmt) {
                    self.remove_device_pinning_in(scope, nested);
                }
            }
        }
    }

    fn is_device_pinning(&self, scope: &Scope, stmt: &Stmt) -> bool {
        match stmt {
            Stmt::Assign(assign) => assign.targets.iter().any(|target| {
                if let Expr::Subscript(subscript) = target
                    && scope.bindings.resolve_raw(&subscript.value).as_deref() == Some("os.environ")
                {
                    return is_string(&subscript.slice, "CUDA_VISIBLE_DEVICES");
                }
                false
            }),
            Stmt::Expr(expression) => {
                let Expr::Call(call) = expression.value.as_ref() else {
                    return false;
                };
                let Some(callee) = scope.bindings.resolve(&call.func) else {
                    return false;
                };
                match callee.as_str() {
                    "tensorflow.config.experimental.set_visible_devices"
                    | "tensorflow.config.set_visible_devices" => !call
                        .args
                        .iter()
                        .chain(call.keywords.iter().map(|k| &k.value))
                        .any(|argument| self.calls_horovod(argument, "local_rank")),
                    "os.environ.setdefault" | "os.putenv" => call
                        .args
                        .first()
                        .is_some_and(|key| is_string(key, "CUDA_VISIBLE_DEVICES")),
                    _ => false,
                }
            }
            _ => false,
        }
    }

    /// Puts the statements that must run once (prints, saves, summaries) under
    /// `if hvd.rank() == 0:` (SPEC 4.1). Loading stays on every rank.
    pub fn guard_rank_zero_statements(&mut self) {
        let module = self.module;
        let top_level_checkpoints =
            self.names_assigned_from(&module.scopes[0], is_checkpoint_class);
        for (index, scope) in module.scopes.iter().enumerate() {
            let mut checkpoints = self.names_assigned_from(scope, is_checkpoint_class);
            checkpoints.extend(top_level_checkpoints.iter().cloned());
            self.guard_block(index, scope, scope.body, &checkpoints);
        }
    }

    fn guard_block(
        &mut self,
        scope_index: usize,
        scope: &Scope,
        body: &[Stmt],
        checkpoints: &HashSet<String>,
    ) {
        let mut group: Vec<&Stmt> = Vec::new();
        for stmt in body {
            if self.must_run_on_rank_zero(scope_index, scope, stmt, checkpoints) {
                if self.owns_its_lines(&span(stmt)) {
                    group.push(stmt);
                    continue;
                }
                self.diagnose(
                    Diagnostic::new(Code::StatementNotGuarded, span(stmt), "this statement should run on rank 0 only, but it shares its line with other code")
                        .with_suggestion(format!("put it on its own line under `if {}:`", self.rank_zero_test())),
                );
            }
            if !group.is_empty() {
                self.guard_group(scope, &group);
                group.clear();
            }
            if let Stmt::Assign(assign) = stmt {
                self.guard_summary_writer(scope, assign);
            }
            if is_scope(stmt) {
                continue;
            }
            if let Stmt::If(node) = stmt
                && self.is_rank_zero_test(&node.test)
            {
                self.guard_block(scope_index, scope, &node.orelse, checkpoints);
                continue;
            }
            for nested in nested_bodies(stmt) {
                self.guard_block(scope_index, scope, nested, checkpoints);
            }
        }
        if !group.is_empty() {
            self.guard_group(scope, &group);
        }
    }

    /// Guards a run of rank-0 statements. A save whose result is assigned
    /// (`path = manager.save()`) joins only when the names it assigns are not
    /// used after the run: other ranks would not have them.
    fn guard_group(&mut self, scope: &Scope, group: &[&Stmt]) {
        let group_end = group.last().map_or(0, |last| span(*last).end);
        // Names the scope reads after the run (code, not comments or strings).
        let mut read_later = HashSet::new();
        for_each_statement(scope.body, false, &mut |stmt| {
            walk_statement_expressions(stmt, &mut |expr| {
                if let Expr::Name(name) = expr
                    && span(expr).start >= group_end
                {
                    read_later.insert(name.id.to_string());
                }
            });
        });
        let mut run: Vec<&Stmt> = Vec::new();
        for stmt in group {
            let used_later = match stmt {
                Stmt::Assign(assign) => assign.targets.iter().find_map(|target| match target {
                    Expr::Name(name) => read_later
                        .contains(name.id.as_str())
                        .then(|| name.id.to_string()),
                    other => Some(self.source(span(other)).to_string()),
                }),
                _ => None,
            };
            match used_later {
                None => run.push(stmt),
                Some(name) => {
                    self.diagnose(
                        Diagnostic::new(Code::StatementNotGuarded, span(*stmt), format!("this save runs on every rank because `{name}`, which it assigns, is used further down; every worker writes the same files"))
                            .with_suggestion(format!("move the uses of `{name}` under `if {}:` with the save", self.rank_zero_test())),
                    );
                    if !run.is_empty() {
                        self.guard_statements(&run);
                        run.clear();
                    }
                }
            }
        }
        if !run.is_empty() {
            self.guard_statements(&run);
        }
        self.barrier_before_reading_back(scope, group, group_end);
    }

    /// A save moved to rank 0 and read back further down (`load_model`,
    /// `restore`, `latest_checkpoint`...) would be read by the other ranks
    /// before rank 0 has written it: wait for rank 0 right after the save.
    fn barrier_before_reading_back(&mut self, scope: &Scope, group: &[&Stmt], group_end: usize) {
        const SAVES: &[&str] = &["save", "save_weights", "write"];
        const READS: &[&str] = &[
            "load_model",
            "load_weights",
            "restore",
            "latest_checkpoint",
            "load",
        ];
        let method_of = |call: &ast::ExprCall| -> Option<String> {
            match call.func.as_ref() {
                Expr::Attribute(attribute) => Some(attribute.attr.to_string()),
                Expr::Name(name) => Some(name.id.to_string()),
                _ => None,
            }
        };
        let save = group.iter().find_map(|stmt| {
            calls_in_statement(stmt)
                .into_iter()
                .find(|call| method_of(call).is_some_and(|method| SAVES.contains(&method.as_str())))
        });
        let Some(save) = save else {
            return;
        };
        let mut reads_back = false;
        for_each_statement(scope.body, false, &mut |stmt| {
            if span(stmt).start >= group_end
                && calls_in_statement(stmt).into_iter().any(|call| {
                    method_of(call).is_some_and(|method| READS.contains(&method.as_str()))
                })
            {
                reads_back = true;
            }
        });
        if !reads_back || self.text[group_end..].contains("save_barrier") {
            return;
        }
        let barrier = match self.pattern {
            TrainingPattern::Keras => format!("{}.allreduce(0, name=\"save_barrier\")", self.hvd),
            TrainingPattern::GradientTape => format!(
                "{}.allreduce({}.constant(0), name=\"save_barrier\")",
                self.hvd, self.tf
            ),
            // Graph mode: the barrier runs in the session that saved.
            _ => match save.args.first() {
                Some(Expr::Name(session)) => format!(
                    "{}.run({}.allreduce({}.constant(0), name=\"save_barrier\"))",
                    session.id, self.hvd, self.tf
                ),
                _ => return,
            },
        };
        let last = group.last().map_or(0..0, |last| span(*last));
        let first = group.first().map_or(0..0, |first| span(*first));
        let line = format!("{barrier}  # rank 0 has written it before anyone reads it back");
        self.insert_after_statement(&(first.start..last.end), &[line]);
    }

    fn must_run_on_rank_zero(
        &mut self,
        scope_index: usize,
        scope: &Scope,
        stmt: &Stmt,
        checkpoints: &HashSet<String>,
    ) -> bool {
        // Saves return a path, so `path = manager.save()` counts too.
        let (call, assigned) = match stmt {
            Stmt::Expr(expression) => (expression.value.as_ref(), false),
            Stmt::Assign(assign) => (assign.value.as_ref(), true),
            _ => return false,
        };
        let Expr::Call(call) = call else {
            return false;
        };
        if assigned {
            return self.is_checkpoint_save(scope, call, checkpoints);
        }
        if let Expr::Name(name) = call.func.as_ref()
            && name.id.as_str() == "print"
            && !scope.bindings.is_bound("print")
        {
            return self.print_without_side_effects(call);
        }
        if let Some(callee) = scope.bindings.resolve(&call.func) {
            if callee == "tensorflow.print" {
                return self.print_without_side_effects(call);
            }
            if let Some(function) = callee.strip_prefix("tensorflow.summary.") {
                return matches!(
                    function,
                    "scalar" | "histogram" | "image" | "text" | "audio" | "write"
                );
            }
        }
        if self.is_checkpoint_save(scope, call, checkpoints) {
            return true;
        }
        let Expr::Attribute(attribute) = call.func.as_ref() else {
            return false;
        };
        let Some(receiver) = crate::analysis::walk::dotted_name(&attribute.value) else {
            return false;
        };
        let receiver = receiver.as_str();
        let method = attribute.attr.as_str();
        let is_model = self.module.models[scope_index].contains(receiver)
            || self
                .module
                .assumed_models
                .iter()
                .any(|(index, name, _)| *index == scope_index && name == receiver);
        is_model && matches!(method, "summary" | "save" | "save_weights")
    }

    /// `ckpt.save(...)`, `manager.save()`, `saver.save(...)`, and the chained
    /// `tf.train.Saver().save(...)`: they write files, which one worker must own.
    fn is_checkpoint_save(
        &self,
        scope: &Scope,
        call: &ast::ExprCall,
        checkpoints: &HashSet<String>,
    ) -> bool {
        let Expr::Attribute(attribute) = call.func.as_ref() else {
            return false;
        };
        if !matches!(attribute.attr.as_str(), "save" | "write") {
            return false;
        }
        let known = match attribute.value.as_ref() {
            Expr::Call(constructor) => callee_name(
                self.analysis.package,
                self.module.module,
                scope,
                &constructor.func,
            )
            .is_some_and(|callee| is_checkpoint_class(&callee)),
            receiver => crate::analysis::walk::dotted_name(receiver)
                .is_some_and(|receiver| checkpoints.contains(receiver.as_str())),
        };
        // A saver made elsewhere (returned by a graph-building function) still
        // shows itself: `saver.save(sess, path)` takes the session first.
        known
            || (attribute.attr.as_str() == "save"
                && matches!(call.args.first(), Some(Expr::Name(first))
                    if super::tf1::session_names(self, scope).contains(first.id.as_str())))
    }

    fn print_without_side_effects(&mut self, call: &ast::ExprCall) -> bool {
        let mut side_effect = None;
        for argument in call
            .args
            .iter()
            .chain(call.keywords.iter().map(|keyword| &keyword.value))
        {
            walk_expression(argument, &mut |expr| {
                let has_effect = match expr {
                    Expr::NamedExpr(_) => true,
                    Expr::Call(inner) => match inner.func.as_ref() {
                        Expr::Name(name) => matches!(name.id.as_str(), "next" | "input"),
                        Expr::Attribute(attribute) => matches!(
                            attribute.attr.as_str(),
                            "pop"
                                | "popleft"
                                | "popitem"
                                | "append"
                                | "extend"
                                | "send"
                                | "update"
                                | "write"
                                | "assign"
                                | "assign_add"
                                | "assign_sub"
                                | "apply_gradients"
                                | "run"
                                | "step"
                                | "save"
                        ),
                        _ => false,
                    },
                    _ => false,
                };
                if has_effect && side_effect.is_none() {
                    side_effect = Some(span(expr));
                }
            });
        }
        match side_effect {
            None => true,
            Some(range) => {
                let effect = self.source(range).to_string();
                self.diagnose(
                    Diagnostic::new(
                        Code::PrintWithSideEffects,
                        span(call),
                        format!("`{effect}` inside this print has side effects; guarding the print would run them on rank 0 only, so it was left on every rank"),
                    )
                    .with_suggestion(format!("compute the value before the print, then put the print under `if {}:`", self.rank_zero_test())),
                );
                false
            }
        }
    }

    /// `writer = tf.summary.create_file_writer(d)` -> a real writer on rank 0, a no-op one elsewhere.
    fn guard_summary_writer(&mut self, scope: &Scope, assign: &ast::StmtAssign) {
        let Expr::Call(call) = assign.value.as_ref() else {
            return;
        };
        if scope.bindings.resolve(&call.func).as_deref()
            != Some("tensorflow.summary.create_file_writer")
        {
            return;
        }
        let value = self.expression_text(&assign.value);
        let replacement = format!(
            "{value} if {} else {}.summary.create_noop_writer()",
            self.rank_zero_test(),
            self.tf
        );
        self.edits
            .push(Edit::replacement(span(assign.value.as_ref()), replacement));
    }

    /// Names in one scope assigned from a call whose canonical callee matches.
    pub fn names_assigned_from(
        &self,
        scope: &Scope,
        matches_callee: impl Fn(&str) -> bool,
    ) -> HashSet<String> {
        let mut names = HashSet::new();
        for_each_statement(scope.body, false, &mut |stmt| {
            if let Stmt::Assign(assign) = stmt
                && let Expr::Call(call) = assign.value.as_ref()
                && callee_name(self.analysis.package, self.module.module, scope, &call.func)
                    .is_some_and(|callee| matches_callee(&callee))
            {
                for target in &assign.targets {
                    if let Expr::Name(name) = target {
                        names.insert(name.id.to_string());
                    }
                }
            }
        });
        names
    }

    /// The edits and diagnostics, diagnostics in source order.
    pub fn finish(mut self) -> (Vec<Edit>, Vec<Diagnostic>) {
        self.drop_unused_tensorflow_import();
        self.diagnostics
            .sort_by_key(|diagnostic| (diagnostic.range.start, diagnostic.code));
        (self.edits, self.diagnostics)
    }

    /// A module without a tensorflow import gets one only when generated
    /// code uses it (a `fit` delegated from another module needs only `hvd`).
    fn drop_unused_tensorflow_import(&mut self) {
        let tensorflow_line = self
            .imports
            .iter()
            .find(|line| *line == "import tensorflow" || line.starts_with("import tensorflow as "));
        let Some(line) = tensorflow_line.cloned() else {
            return;
        };
        let used = format!("{}.", self.tf);
        let block_line = format!("{line}{}", self.newline);
        let generated_uses_it = self
            .edits
            .iter()
            .any(|edit| edit.content.replace(&block_line, "").contains(&used));
        if !generated_uses_it {
            for edit in &mut self.edits {
                if edit.range.is_empty() && edit.content.contains(&block_line) {
                    edit.content = edit.content.replacen(&block_line, "", 1);
                    break;
                }
            }
        }
    }
}

/// Names in one scope assigned from a constructor of a matching library class.
pub fn names_bound_to(
    rewrite: &ModuleRewrite,
    scope: &Scope,
    matches_class: impl Fn(LibraryClass) -> bool,
) -> HashSet<String> {
    let mut names = HashSet::new();
    for_each_statement(scope.body, false, &mut |stmt| {
        if let Stmt::Assign(assign) = stmt
            && let Expr::Call(call) = assign.value.as_ref()
            && rewrite
                .library_class_of_call(scope, call)
                .is_some_and(&matches_class)
        {
            for target in &assign.targets {
                if let Expr::Name(name) = target {
                    names.insert(name.id.to_string());
                }
            }
        }
    });
    names
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

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default().trim_end()
}

pub fn is_string(expr: &Expr, value: &str) -> bool {
    matches!(expr, Expr::Constant(ast::ExprConstant { value: Constant::Str(text), .. }) if text == value)
}

pub fn is_integer(expr: &Expr, value: u32) -> bool {
    matches!(expr, Expr::Constant(ast::ExprConstant { value: Constant::Int(number), .. }) if *number == value.into())
}

fn binds_at_least_as_tightly_as_multiplication(expr: &Expr) -> bool {
    match expr {
        Expr::Name(_)
        | Expr::Attribute(_)
        | Expr::Call(_)
        | Expr::Subscript(_)
        | Expr::List(_)
        | Expr::Tuple(_)
        | Expr::Dict(_)
        | Expr::Set(_)
        | Expr::ListComp(_)
        | Expr::DictComp(_)
        | Expr::SetComp(_)
        | Expr::GeneratorExp(_)
        | Expr::JoinedStr(_) => true,
        Expr::Constant(_) => true,
        Expr::UnaryOp(unary) => unary.op != UnaryOp::Not,
        Expr::BinOp(binary) => matches!(
            binary.op,
            Operator::Mult
                | Operator::Div
                | Operator::FloorDiv
                | Operator::Mod
                | Operator::MatMult
                | Operator::Pow
        ),
        _ => false,
    }
}

/// Classes whose `save` writes checkpoint files.
fn is_checkpoint_class(callee: &str) -> bool {
    let callee = callee
        .strip_prefix("tensorflow.compat.v1.")
        .map_or(callee.to_string(), |rest| format!("tensorflow.{rest}"));
    matches!(
        callee.as_str(),
        "tensorflow.train.Checkpoint"
            | "tensorflow.train.CheckpointManager"
            | "tensorflow.train.Saver"
    )
}

fn imports_tensorflow(stmt: &Stmt) -> bool {
    match stmt {
        Stmt::Import(import) => import.names.iter().any(|alias| {
            let name = alias.name.as_str();
            name == "tensorflow" || name.starts_with("tensorflow.")
        }),
        Stmt::ImportFrom(import) => import.module.as_deref().is_some_and(|module| {
            import.level.is_none_or(|level| level.to_u32() == 0)
                && (module == "tensorflow" || module.starts_with("tensorflow."))
        }),
        _ => false,
    }
}

/// Where the init block goes: after the run of top-level imports that holds
/// the tensorflow import (code further down, even above a late import, may
/// use `hvd`); the last top-level import when tensorflow is imported elsewhere.
fn init_anchor(body: &[Stmt]) -> Option<&Stmt> {
    let Some(first) = body.iter().position(imports_tensorflow) else {
        return last_import(body);
    };
    let run = body[first..]
        .iter()
        .take_while(|stmt| is_import_statement(stmt))
        .count();
    body.get(first + run - 1)
}

/// The last top-level import statement (a `try:` of imports counts as one).
pub fn last_import(body: &[Stmt]) -> Option<&Stmt> {
    body.iter().rev().find(|stmt| is_import_statement(stmt))
}

/// An import, or a `try:` made only of imports (the optional-dependency idiom).
fn is_import_statement(stmt: &Stmt) -> bool {
    match stmt {
        Stmt::Import(_) | Stmt::ImportFrom(_) => true,
        Stmt::Try(node) => {
            !node.body.is_empty()
                && node
                    .body
                    .iter()
                    .all(|inner| matches!(inner, Stmt::Import(_) | Stmt::ImportFrom(_)))
        }
        _ => false,
    }
}

/// Offset after the module docstring and `from __future__` imports.
fn after_docstring_and_future(body: &[Stmt], text: &str) -> usize {
    let mut offset = 0;
    for stmt in body {
        let is_docstring = matches!(stmt, Stmt::Expr(expression) if matches!(expression.value.as_ref(), Expr::Constant(ast::ExprConstant { value: Constant::Str(_), .. })));
        let is_future = matches!(stmt, Stmt::ImportFrom(import) if import.module.as_deref() == Some("__future__"));
        if (is_docstring && offset == 0) || is_future {
            offset = line_end_including_newline(text, span(stmt).end.saturating_sub(1));
        } else {
            break;
        }
    }
    offset
}

pub fn fresh_name(candidates: &[&str], taken: &HashSet<String>) -> String {
    for candidate in candidates {
        if !taken.contains(*candidate) {
            return (*candidate).to_string();
        }
    }
    let base = candidates.first().copied().unwrap_or("name");
    (2..)
        .map(|number| format!("{base}{number}"))
        .find(|name| !taken.contains(name))
        .expect("some numbered name is free")
}

/// The indentation one level adds in this file: the step after the first
/// block opener (4 spaces when the file has no block).
fn indent_unit(text: &str) -> String {
    let mut opener_indentation: Option<usize> = None;
    for line in text.lines() {
        let trimmed = line.trim_start_matches([' ', '\t']);
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let width = line.len() - trimmed.len();
        if let Some(opener) = opener_indentation
            && width > opener
        {
            return line[opener..width].to_string();
        }
        opener_indentation = None;
        let code = trimmed.split('#').next().unwrap_or_default().trim_end();
        if code.ends_with(':') && !code.starts_with(['"', '\'']) {
            opener_indentation = Some(width);
        }
    }
    "    ".to_string()
}

/// The quote character most string literals of the file use.
fn quote_style(body: &[Stmt], text: &str) -> char {
    let (mut single, mut double) = (0usize, 0usize);
    for_each_statement(body, true, &mut |stmt| {
        walk_statement_expressions(stmt, &mut |expr| {
            if let Expr::Constant(ast::ExprConstant {
                value: Constant::Str(_),
                ..
            }) = expr
            {
                let literal = &text[span(expr)];
                match literal
                    .trim_start_matches(|c: char| c.is_ascii_alphabetic())
                    .chars()
                    .next()
                {
                    Some('\'') => single += 1,
                    Some('"') => double += 1,
                    _ => {}
                }
            }
        });
    });
    if single > double { '\'' } else { '"' }
}

/// Divides the step count of the loop that drives training (`range(n)`,
/// `dataset.take(n)`, `while step < n`, or `if step >= n: break` inside it).
pub fn divide_loop_steps(rewrite: &mut ModuleRewrite, loop_statement: &Stmt) {
    let limits = step_limits(loop_statement);
    if !limits.is_empty() {
        for limit in limits {
            rewrite.divide_expression(limit);
        }
        return;
    }
    let Stmt::For(for_loop) = loop_statement else {
        return;
    };
    let mut iterable = for_loop.iter.as_ref();
    if let Expr::Call(call) = iterable
        && matches!(call.func.as_ref(), Expr::Name(name) if name.id.as_str() == "enumerate")
        && let Some(inner) = call.args.first()
    {
        iterable = inner;
    }
    if let Expr::Call(call) = iterable {
        let is_range =
            matches!(call.func.as_ref(), Expr::Name(name) if name.id.as_str() == "range");
        let is_take = matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "take");
        if (is_range || is_take) && call.args.len() == 1 {
            rewrite.divide_expression(&call.args[0]);
            return;
        }
    }
    if !rewrite.text.contains(".shard(")
        && rewrite.options.shard_datasets
        && rewrite.shard_dataset(
            &rewrite.module.scopes[rewrite.module.scope_at(span(loop_statement).start)],
            iterable,
        )
    {
        return;
    }
    if !rewrite.text.contains(".shard(") {
        let iterable_text = rewrite.expression_text(&for_loop.iter).to_string();
        rewrite.diagnose(
            Diagnostic::new(
                Code::DatasetNotSharded,
                span(for_loop.iter.as_ref()),
                format!("every worker iterates all of `{iterable_text}` and no step count divides the work, so more workers bring no speed-up"),
            )
            .with_suggestion(format!(
                "shard the dataset with `.shard({0}, {1})` before batching, or iterate `.take(<steps> // {0})`",
                rewrite.horovod_call("size"),
                rewrite.horovod_call("rank")
            )),
        );
    }
}

/// The step limits a loop stops at, by a counter it increments
/// (`step += 1`): `while step < n:`, and `if step >= n: ... break` in its
/// body (not in nested loops or functions).
fn step_limits<'a>(loop_statement: &'a Stmt) -> Vec<&'a Expr> {
    // The counter is one the loop advances: `i += 1`, or a step count read
    // back (`_, step = sess.run([train_op, global_step])`) whose name says so.
    // `if loss > 1e3: break` or `total += loss` are not step limits.
    let names_a_step = |name: &str| {
        let name = name.to_lowercase();
        name.contains("step") || name.contains("iter")
    };
    let mut advanced: HashSet<String> = HashSet::new();
    for_each_statement(
        std::slice::from_ref(loop_statement),
        false,
        &mut |stmt| match stmt {
            Stmt::AugAssign(assign) => {
                let by_a_count = matches!(
                    assign.value.as_ref(),
                    Expr::Constant(ast::ExprConstant {
                        value: Constant::Int(_),
                        ..
                    })
                );
                advanced.extend(
                    crate::analysis::walk::target_names(&assign.target)
                        .into_iter()
                        .filter(|name| by_a_count || names_a_step(name))
                        .map(String::from),
                );
            }
            Stmt::Assign(assign) => {
                for target in &assign.targets {
                    advanced.extend(
                        crate::analysis::walk::target_names(target)
                            .into_iter()
                            .filter(|name| names_a_step(name))
                            .map(String::from),
                    );
                }
            }
            _ => {}
        },
    );
    let increments = |counter: &str| advanced.contains(counter);
    // `counter OP limit`, either way round, that is true once the counter
    // reaches the limit (`reached`: >=, >, ==) or while it is below (<, <=, !=).
    let limit_of = |test: &'a Expr, reached: bool| -> Option<&'a Expr> {
        use ast::CmpOp;
        let Expr::Compare(compare) = test else {
            return None;
        };
        let ([operator], [right]) = (compare.ops.as_slice(), compare.comparators.as_slice()) else {
            return None;
        };
        let is_counter =
            |expr: &Expr| matches!(expr, Expr::Name(name) if increments(name.id.as_str()));
        let (limit, counter_on_left) = if is_counter(&compare.left) {
            (right, true)
        } else if is_counter(right) {
            (compare.left.as_ref(), false)
        } else {
            return None;
        };
        let true_at_limit = match (operator, counter_on_left) {
            (CmpOp::GtE | CmpOp::Gt | CmpOp::Eq, true)
            | (CmpOp::LtE | CmpOp::Lt | CmpOp::Eq, false) => true,
            (CmpOp::Lt | CmpOp::LtE | CmpOp::NotEq, true)
            | (CmpOp::Gt | CmpOp::GtE | CmpOp::NotEq, false) => false,
            _ => return None,
        };
        (true_at_limit == reached).then_some(limit)
    };
    let mut limits = Vec::new();
    let body = match loop_statement {
        Stmt::While(while_loop) => {
            limits.extend(limit_of(&while_loop.test, false));
            &while_loop.body
        }
        Stmt::For(for_loop) => &for_loop.body,
        _ => return limits,
    };
    fn breaks(body: &[Stmt]) -> bool {
        body.iter().any(|stmt| match stmt {
            Stmt::Break(_) => true,
            Stmt::If(node) => breaks(&node.body),
            _ => false,
        })
    }
    fn visit<'a>(body: &'a [Stmt], found: &mut Vec<&'a ast::StmtIf>) {
        for stmt in body {
            match stmt {
                Stmt::If(node) => {
                    found.push(node);
                    visit(&node.body, found);
                    visit(&node.orelse, found);
                }
                Stmt::With(node) => visit(&node.body, found),
                Stmt::Try(node) => visit(&node.body, found),
                _ => {}
            }
        }
    }
    let mut ifs = Vec::new();
    visit(body, &mut ifs);
    for node in ifs {
        if breaks(&node.body)
            && let Some(limit) = limit_of(&node.test, true)
        {
            limits.push(limit);
        }
    }
    limits
}

pub use crate::analysis::training::calls_in_scope;

pub fn find_call<'a>(
    scope: &Scope<'a>,
    range: &std::ops::Range<usize>,
) -> Option<(&'a Stmt, &'a ast::ExprCall)> {
    calls_in_scope(scope)
        .into_iter()
        .find(|(_, call)| span(*call) == *range)
}
