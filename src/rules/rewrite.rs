//! The rewrite of one training module in progress: the read-only context,
//! the fresh names and imports generated code needs, and the sink that
//! collects edits and diagnostics. Rules and passes get it mutably; the
//! facts they read come from the context (and through it, the analysis).

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use rustpython_parser::ast::{self, Expr, Stmt};

use super::RuleOptions;
use super::context::RewriteContext;
use super::edit_builders;
use super::importer::{Importer, Names};
use super::passes::learning_rate::LearningRateState;
use super::patterns::Pattern;
use super::stylist::Stylist;
use crate::analysis::training::{Analysis, ModuleAnalysis};
use crate::diagnostics::{Code, Diagnostic};
use crate::python::edit::Edit;
use crate::python::parse::span;

/// Edits and diagnostics, in the order rules produced them. Each edit is
/// recorded with the code of the pass that made it: every edit belongs to
/// a diagnostic of that code when the rewrite is finished.
#[derive(Debug)]
pub struct RewriteSink {
    edits: Vec<Edit>,
    /// The code each edit of `edits` belongs to (same order).
    owners: Vec<Code>,
    pub diagnostics: Vec<Diagnostic>,
    /// The code of the pass running now.
    pub owner: Code,
}

impl Default for RewriteSink {
    fn default() -> Self {
        RewriteSink {
            edits: Vec::new(),
            owners: Vec::new(),
            diagnostics: Vec::new(),
            owner: super::SINGLE_GPU_TRAINING,
        }
    }
}

impl RewriteSink {
    pub fn edit(&mut self, edit: Edit) {
        self.edits.push(edit);
        self.owners.push(self.owner);
    }

    /// How many edits were made so far (a mark for `take_since`).
    pub fn len(&self) -> usize {
        self.edits.len()
    }

    pub fn is_empty(&self) -> bool {
        self.edits.is_empty()
    }

    /// Takes back the edits made since `mark`.
    pub fn take_since(&mut self, mark: usize) -> Vec<Edit> {
        self.owners.truncate(mark);
        self.edits.split_off(mark)
    }

    pub fn extend(&mut self, edits: impl IntoIterator<Item = Edit>) {
        for edit in edits {
            self.edit(edit);
        }
    }

    /// Adds a diagnostic once (two rules may find the same thing).
    pub fn diagnose(&mut self, diagnostic: Diagnostic) {
        if !self.diagnostics.contains(&diagnostic) {
            self.diagnostics.push(diagnostic);
        }
    }
}

pub struct ModuleRewrite<'a> {
    pub context: RewriteContext<'a>,
    pub sink: RewriteSink,
    pub names: Names,
    importer: Importer,
    /// Calls whose added keywords go on lines of their own (the line was too long).
    continued_calls: HashSet<usize>,
    /// Calls written with no argument that got a keyword already.
    keyworded_empty_calls: HashSet<usize>,
    /// What the learning-rate pass shares with patterns that scale a call themselves.
    pub learning_rates: LearningRateState,
    /// Where `hvd.init()` runs (the module's own call, or where the init
    /// block goes); `None` in modules whose code runs inside another
    /// module's loop. Code before it must not ask Horovod anything.
    /// Where the generated imports and the init block go when the module
    /// writes files before its TensorFlow import (see `init_position`).
    pub early_init_at: Option<usize>,
    pub horovod_initialised_at: Option<usize>,
    /// The rewrite gave each worker its own examples by rank (a shard, or a
    /// cursor that starts from the rank): seeds then decide only the noise
    /// and the order within a worker's part.
    pub data_split_by_rank: bool,
    /// Where sources that shuffle with a seed passed to them (or given one
    /// by the rewrite) are called, when the rewrite shards them: their
    /// order depends on TensorFlow's global seed set before them too,
    /// which must then stay the same on every rank.
    pub seeded_orders_sharded: Vec<usize>,
    /// Training loops whose work the rewrite tried to split, and those of
    /// them left whole because every step trains on the same full batch: a
    /// module with only the latter draws nothing a seed could make differ.
    pub loops_seen: usize,
    pub full_batch_loops: usize,
    /// Where the first session that runs a train op initialises its
    /// variables, when the module opens several (a demo session first):
    /// DST200 points at that session, not at the first one.
    pub first_training_session: Option<usize>,
    /// The statements put under a rank-0 guard so far: what runs in them
    /// runs on rank 0 alone, which reads its own writes without waiting.
    pub guarded_ranges: Vec<std::ops::Range<usize>>,
    /// Errors that refuse the module: a training loop found, while
    /// rewriting, to be impossible to make whole. The module then gets no
    /// edits at all.
    pub refusals: Vec<Diagnostic>,
    /// Generated helper functions asked for so far, by the first of their
    /// candidate names: each is defined once per module, before the
    /// earliest top-level statement that uses it, when the rewrite finishes.
    helpers: HashMap<&'static str, PendingHelper>,
}

/// A generated helper function: its name, its definition, the earliest
/// top-level statement that uses it, and the pass it belongs to.
struct PendingHelper {
    name: String,
    lines: Vec<String>,
    before: Range<usize>,
    owner: Code,
}

impl<'a> std::ops::Deref for ModuleRewrite<'a> {
    type Target = RewriteContext<'a>;

    fn deref(&self) -> &RewriteContext<'a> {
        &self.context
    }
}

impl<'a> ModuleRewrite<'a> {
    pub fn new(
        analysis: &'a Analysis<'a>,
        module: &'a ModuleAnalysis<'a>,
        plugin: &'static dyn Pattern,
        options: RuleOptions,
    ) -> Self {
        let text = module.module.source.text.as_str();
        let bindings = &module.module.bindings;
        let mut names = Names::of_module(module);
        let mut importer = Importer::default();
        let had_horovod = module.module.binds_horovod();
        let wanted = plugin.horovod_module_for(analysis, module);
        let hvd = importer.bind(bindings, wanted, &["hvd", "horovod_", "hvd_"], &mut names);
        let horovod_tensorflow = if wanted == "horovod.tensorflow" {
            Some(hvd.clone())
        } else if plugin.needs_horovod_tensorflow(module, text) {
            let candidates = ["hvd_tf", "horovod_tf"];
            Some(importer.bind(bindings, "horovod.tensorflow", &candidates, &mut names))
        } else {
            None
        };
        importer.early_init_at = super::init_position::before_early_preparation(analysis, module);
        let early_init_at = importer.early_init_at;
        let tf = importer.bind_tensorflow(module, &mut names);
        // Standalone Keras 2 before 2.4 takes only its own optimizers, not
        // tf.keras ones: optimizers the rewrite builds come from it.
        let keras =
            (wanted == "horovod.keras").then(|| match bindings.name_for_as_imported("keras") {
                Some(name) => name.to_string(),
                None => importer.bind(bindings, "keras", &["keras", "keras_"], &mut names),
            });
        let context = RewriteContext {
            analysis,
            module,
            text,
            pattern: plugin.pattern(),
            plugin,
            hvd,
            tf,
            keras,
            horovod_tensorflow,
            stylist: Stylist::detect(text, &module.module.body),
            had_horovod,
            options,
        };
        ModuleRewrite {
            context,
            sink: RewriteSink::default(),
            names,
            importer,
            continued_calls: HashSet::new(),
            keyworded_empty_calls: HashSet::new(),
            learning_rates: LearningRateState::default(),
            early_init_at,
            horovod_initialised_at: None,
            data_split_by_rank: false,
            seeded_orders_sharded: Vec::new(),
            loops_seen: 0,
            full_batch_loops: 0,
            first_training_session: None,
            guarded_ranges: Vec::new(),
            refusals: Vec::new(),
            helpers: HashMap::new(),
        }
    }

    /// Leaves the module as written, for the reason `diagnostic` gives.
    pub fn refuse(&mut self, diagnostic: Diagnostic) {
        self.refusals.push(diagnostic);
    }

    pub fn diagnose(&mut self, diagnostic: Diagnostic) {
        self.sink.diagnose(diagnostic);
    }

    pub fn edit(&mut self, edit: Edit) {
        self.sink.edit(edit);
    }

    pub fn fresh(&mut self, candidates: &[&str]) -> String {
        self.names.fresh(candidates)
    }

    /// Whether generated code at `offset` (at the top level) can use the
    /// module's tensorflow name: it is bound above, or the generated
    /// imports bind it again where they go.
    pub fn tensorflow_bound_at(&self, offset: usize) -> bool {
        self.importer.early_tensorflow
            || self
                .module
                .module
                .bindings
                .get(&self.tf)
                .is_none_or(|binding| {
                    binding.statement.start < offset
                        || imported_above(
                            &self.module.module.body,
                            &self.tf,
                            &binding.qualified,
                            offset,
                        )
                })
    }

    /// Whether a statement starts its line and no other statement follows on its last line.
    pub fn owns_its_lines(&self, range: &Range<usize>) -> bool {
        edit_builders::owns_its_lines(self.text, range)
    }

    /// Inserts statements after the statement at `range`, at its indentation.
    pub fn insert_after_statement(&mut self, range: &Range<usize>, lines: &[String]) {
        let edit = edit_builders::insert_after_statement(self.text, &self.stylist, range, lines);
        self.sink.edit(edit);
    }

    /// Inserts statements before the statement at `range`, at its indentation.
    pub fn insert_before_statement(&mut self, range: &Range<usize>, lines: &[String]) {
        let edit = edit_builders::insert_before_statement(self.text, &self.stylist, range, lines);
        self.sink.edit(edit);
    }

    /// The name of a generated helper function, defined once, right
    /// before the earliest top-level statement that holds a `site` it was
    /// asked for at (after the imports and `hvd.init()`, which come before
    /// any training). `lines` gives its definition under a fresh name.
    pub fn helper(
        &mut self,
        candidates: &[&'static str],
        site: usize,
        lines: impl FnOnce(&str, &Self) -> Vec<String>,
    ) -> String {
        let top_level = self
            .module
            .module
            .body
            .iter()
            .map(span)
            .find(|statement| statement.contains(&site))
            .unwrap_or(site..site);
        if let Some(pending) = self.helpers.get_mut(candidates[0]) {
            if top_level.start < pending.before.start {
                pending.before = top_level;
            }
            return pending.name.clone();
        }
        let name = self.fresh(candidates);
        let definition = lines(&name, self);
        let owner = self.sink.owner;
        self.helpers.insert(
            candidates[0],
            PendingHelper {
                name: name.clone(),
                lines: definition,
                before: top_level,
                owner,
            },
        );
        name
    }

    /// Defines the helpers asked for, each before its earliest use, with
    /// two blank lines around it as PEP 8 has them.
    fn define_helpers(&mut self) {
        let mut helpers: Vec<PendingHelper> =
            self.helpers.drain().map(|(_, helper)| helper).collect();
        helpers.sort_by(|a, b| a.name.cmp(&b.name));
        for mut helper in helpers {
            // The comment lines right above a statement stay with it.
            if self.module.module.source.notebook.is_none() {
                let start = leading_comment_start(self.text, helper.before.start);
                helper.before = start..helper.before.end;
            }
            let before = self.text[..helper.before.start].trim_end_matches([' ', '\t']);
            let newlines = before.len() - before.trim_end_matches('\n').len();
            let missing = match before.trim().is_empty() {
                true => 0,
                false => 3usize.saturating_sub(newlines),
            };
            let mut definition = vec![String::new(); missing];
            definition.extend(helper.lines);
            definition.extend([String::new(), String::new()]);
            self.run_pass(helper.owner, |rewrite| {
                rewrite.insert_before_statement(&helper.before, &definition)
            });
        }
    }

    /// Puts consecutive statements of one block under a single `if hvd.rank() == 0:`.
    pub fn guard_statements(&mut self, statements: &[&Stmt]) {
        let test = self.rank_zero_test();
        // A guard never spans notebook cells: each cell must parse alone.
        let notebook = self.module.module.source.notebook.clone();
        let cell = |statement: &&Stmt| {
            notebook
                .as_ref()
                .and_then(|notebook| notebook.cell_number_at(span(*statement).start))
        };
        for run in statements.chunk_by(|first, second| cell(first) == cell(second)) {
            if let (Some(first), Some(last)) = (run.first(), run.last()) {
                self.guarded_ranges
                    .push(span(*first).start..span(*last).end);
            }
            let edits = edit_builders::guard_statements(self.text, &self.stylist, run, &test);
            self.sink.extend(edits);
        }
    }

    /// Adds `name=value` to a call, after its last argument, following the call's layout.
    pub fn add_keyword(&mut self, call: &ast::ExprCall, name: &str, value: &str) {
        let start = span(call).start;
        let had_no_arguments = call.args.is_empty() && call.keywords.is_empty();
        // A second keyword for a call that had none follows the first.
        if had_no_arguments && !self.keyworded_empty_calls.insert(start) {
            let closing = span(call).end - 1;
            self.sink
                .edit(Edit::insertion(closing, format!(", {name}={value}")));
            return;
        }
        let continued = self.continued_calls.contains(&start);
        let added =
            edit_builders::add_keyword(self.text, &self.stylist, call, name, value, continued);
        if added.continued {
            self.continued_calls.insert(start);
        }
        self.sink.extend(added.edits);
    }

    /// Replaces an expression with its scaled form, unless it already involves the worker count.
    pub fn scale_expression(&mut self, expr: &Expr) {
        if self.uses_worker_count(expr) {
            return;
        }
        let replacement = self.scaled(expr);
        self.sink.edit(Edit::replacement(span(expr), replacement));
    }

    /// Replaces a step count with its divided form, unless it already involves the worker count.
    pub fn divide_expression(&mut self, expr: &Expr) {
        if self.uses_worker_count(expr) {
            return;
        }
        let replacement = self.divided(expr);
        self.sink.edit(Edit::replacement(span(expr), replacement));
    }

    /// Runs a pass whose edits belong to `code`.
    pub fn run_pass(&mut self, code: Code, pass: impl FnOnce(&mut ModuleRewrite<'a>)) {
        let previous = std::mem::replace(&mut self.sink.owner, code);
        pass(self);
        self.sink.owner = previous;
    }

    /// The diagnostics, in source order, each with the edits it explains:
    /// every edit belongs to a diagnostic of the code of the pass that made
    /// it (the first one of that code, or the module's `SINGLE_GPU_TRAINING`
    /// diagnostic, which `owner` describes). The imports come first among
    /// edits at the same offset (before the init block).
    pub fn finish(mut self, owner: Diagnostic) -> Vec<Diagnostic> {
        self.define_helpers();
        let ModuleRewrite {
            context,
            sink,
            importer,
            ..
        } = self;
        let RewriteSink {
            edits,
            owners,
            mut diagnostics,
            ..
        } = sink;
        let generated: Vec<Edit> = edits
            .iter()
            .chain(diagnostics.iter().flat_map(|diagnostic| &diagnostic.fix))
            .cloned()
            .collect();
        let body = &context.module.module.body;
        let imports = importer.edit(context.text, body, &context.stylist, &generated);
        let mut owner = owner;
        owner.fix.extend(imports);
        for (edit, code) in edits.into_iter().zip(owners) {
            match diagnostics
                .iter_mut()
                .find(|diagnostic| diagnostic.code == code)
            {
                Some(diagnostic) => diagnostic.fix.push(edit),
                None => owner.fix.push(edit),
            }
        }
        if !owner.fix.is_empty() {
            diagnostics.push(owner);
        }
        diagnostics.sort_by_key(|diagnostic| (diagnostic.range.start, diagnostic.code));
        diagnostics
    }
}

/// Where the comment lines directly above the line at `offset` start (the
/// line itself when there are none).
fn leading_comment_start(text: &str, offset: usize) -> usize {
    let mut start = text[..offset].rfind('\n').map_or(0, |newline| newline + 1);
    let indent = &text[start..offset];
    if !indent.trim().is_empty() {
        return start;
    }
    while start > 0 {
        let previous = text[..start - 1]
            .rfind('\n')
            .map_or(0, |newline| newline + 1);
        // A comment at another indentation belongs to other code: inserting
        // above it would put the statement at the comment's indentation.
        let line = &text[previous..start];
        if !line.trim_start().starts_with('#') || !line.starts_with(indent) {
            break;
        }
        if line[indent.len()..].starts_with([' ', '\t']) {
            break;
        }
        start = previous;
    }
    start
}

/// Whether a top-level import above `offset` binds `name` to `module`: a
/// notebook importing tensorflow again in a later cell has it bound from its
/// first import on (the name's binding is its last).
fn imported_above(body: &[Stmt], name: &str, module: &str, offset: usize) -> bool {
    body.iter()
        .take_while(|stmt| span(*stmt).start < offset)
        .any(|stmt| match stmt {
            Stmt::Import(import) => import.names.iter().any(|alias| {
                alias.name.as_str() == module
                    && alias.asname.as_ref().map_or_else(
                        || module.split('.').next() == Some(name),
                        |asname| asname.as_str() == name,
                    )
            }),
            _ => false,
        })
}
