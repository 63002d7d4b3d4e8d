//! What one call does, by the catalogue: through its resolved callee, the
//! type of its receiver (`Image.fromarray(a).save(p)`, `img.save(p)` after
//! `img = Image.open(q)`, `model.save(p)` of a Keras model), or what its
//! name says when nothing else is known. Calls of the package's own
//! functions are named, not judged: their summaries say what they do.

use rustpython_parser::ast::{self, Expr};

use super::catalogue::{Catalogue, Effect, Entry, NameRule};
use super::index::CallSite;
use super::training::effect_summaries::happens_on_storage;
use super::training::{Analysis, ModuleAnalysis, Scope, callee_name};
use super::walk::dotted_name;
use crate::analysis::package::Package;
use crate::python::parse::span;

/// What the analysis knows of one call.
#[derive(Debug, Clone, Copy)]
pub enum Known<'c> {
    /// A catalogued callable, by the name it was found under.
    Catalogued(&'c Entry),
    /// An uncatalogued library call whose name says what it does.
    ByName(&'c NameRule),
    /// Nothing: a harmless or unknown call.
    Nothing,
}

impl<'c> Known<'c> {
    pub fn entry(&self) -> Option<&'c Entry> {
        match self {
            Known::Catalogued(entry) => Some(entry),
            _ => None,
        }
    }
}

/// The call's resolved callee: a dotted library name, the qualified name of
/// a package function (methods through `self` included), or `builtins.x`.
pub fn resolved_callee(
    analysis: &Analysis,
    module: &ModuleAnalysis,
    scope_index: usize,
    func: &Expr,
) -> Option<String> {
    let scope = &module.scopes[scope_index];
    if let Some(callee) = callee_name(analysis.package, module.module, scope, func) {
        return Some(callee);
    }
    match func {
        Expr::Name(name) if !scope.bindings.is_bound(name.id.as_str()) => {
            Some(format!("builtins.{}", name.id))
        }
        Expr::Attribute(attribute) => own_method(module, scope, attribute)
            .or_else(|| method_of_package_object(analysis, module, scope_index, attribute)),
        _ => None,
    }
}

/// `self.model.save_checkpoint(...)` where `self.model` holds an instance
/// of a package class that defines `save_checkpoint`.
fn method_of_package_object(
    analysis: &Analysis,
    module: &ModuleAnalysis,
    scope_index: usize,
    attribute: &ast::ExprAttribute,
) -> Option<String> {
    let types = Types {
        catalogue: &analysis.catalogue,
        package: analysis.package,
        module,
    };
    let class = types.of(scope_index, &attribute.value, 0)?;
    let method = format!("{class}.{}", attribute.attr);
    analysis.functions.contains_key(&method).then_some(method)
}

/// `self.method(...)` of a method of the same class.
fn own_method(
    module: &ModuleAnalysis,
    scope: &Scope,
    attribute: &ast::ExprAttribute,
) -> Option<String> {
    let class = scope.class?;
    let Expr::Name(receiver) = attribute.value.as_ref() else {
        return None;
    };
    if scope.parameters.first().map(String::as_str) != Some(receiver.id.as_str()) {
        return None;
    }
    let owner = scope.qualified_name.rsplit_once('.')?.0;
    let wanted = format!("{owner}.{}", attribute.attr);
    module
        .scopes_named(&wanted)
        .iter()
        .any(|&index| {
            module.scopes[index]
                .class
                .is_some_and(|found| std::ptr::eq(found, class))
        })
        .then_some(wanted)
}

/// What a call of `scope` (the module's scope `scope_index`) does.
pub fn of_call<'c>(
    analysis: &'c Analysis,
    module: &ModuleAnalysis,
    scope_index: usize,
    call: &ast::ExprCall,
) -> Known<'c> {
    let catalogue: &'c Catalogue = &analysis.catalogue;
    let package = analysis.package;
    let scope = &module.scopes[scope_index];
    let callee = resolved_callee(analysis, module, scope_index, &call.func);
    if let Some(callee) = &callee {
        if is_package_function(package, callee) {
            return Known::Nothing;
        }
        if let Some(entry) = catalogue.call(callee) {
            // `subprocess.run(["gsutil", "cp", ...])`: what its program does.
            if let Some(command) = catalogue.shell_command_of(entry, call) {
                return if catalogue.shell_command_writes(&command) {
                    Known::Catalogued(Catalogue::shell_program_writes())
                } else {
                    Known::Nothing
                };
            }
            return Known::Catalogued(entry);
        }
    }
    let types = Types {
        catalogue,
        package,
        module,
    };
    if let Expr::Attribute(attribute) = call.func.as_ref() {
        let receiver = types.of(scope_index, &attribute.value, 0);
        if let Some(entry) = catalogue.method(receiver.as_deref(), attribute.attr.as_str()) {
            return Known::Catalogued(entry);
        }
        // A method of a type the catalogue knows, and does not list: harmless.
        if receiver.is_some() || is_own_receiver(scope, &attribute.value) {
            return Known::Nothing;
        }
    }
    let (name, is_method) = match call.func.as_ref() {
        Expr::Attribute(attribute) => {
            // A function of an imported module (`mylib.save_model`), not a
            // method of an object one holds (`sys.stdout.write`).
            let on_module = matches!(attribute.value.as_ref(), Expr::Name(receiver)
            if scope.bindings.get(receiver.id.as_str()).is_some_and(|binding| {
                binding.kind == crate::analysis::bindings::BindingKind::Import
            }));
            (attribute.attr.as_str(), !on_module)
        }
        Expr::Name(name) => (name.id.as_str(), false),
        _ => return Known::Nothing,
    };
    // Built-ins are catalogued or harmless (`print`, `len`).
    if callee
        .as_deref()
        .is_some_and(|callee| callee.starts_with("builtins."))
    {
        return Known::Nothing;
    }
    catalogue
        .by_name(name, is_method)
        .map_or(Known::Nothing, Known::ByName)
}

/// `self.x` in a method: the package's own object.
fn is_own_receiver(scope: &Scope, receiver: &Expr) -> bool {
    scope.class.is_some()
        && matches!(receiver, Expr::Name(name)
            if scope.parameters.first().map(String::as_str) == Some(name.id.as_str()))
}

/// The function a call of a package callable runs: a class's `__init__`.
pub fn function_called(analysis: &Analysis, callee: &str) -> String {
    let init = format!("{callee}.__init__");
    if !analysis.functions.contains_key(callee) && analysis.functions.contains_key(&init) {
        init
    } else {
        callee.to_string()
    }
}

/// Whether a resolved name is a function, method or class of the package.
pub fn is_package_function(package: &Package, callee: &str) -> bool {
    package.modules.iter().any(|module| {
        callee
            .strip_prefix(module.name.as_str())
            .is_some_and(|rest| rest.starts_with('.'))
    })
}

/// The catalogued type of an expression, where it can be told.
struct Types<'a, 'c> {
    catalogue: &'c Catalogue,
    package: &'a Package,
    module: &'a ModuleAnalysis<'a>,
}

impl Types<'_, '_> {
    fn of(&self, scope_index: usize, expr: &Expr, depth: usize) -> Option<String> {
        if depth > 4 {
            return None;
        }
        let scope = &self.module.scopes[scope_index];
        match expr {
            Expr::Call(call) => {
                if let Some(callee) =
                    callee_name(self.package, self.module.module, scope, &call.func)
                {
                    if let Some(returns) = self
                        .catalogue
                        .call(&callee)
                        .and_then(|entry| entry.returns.clone())
                    {
                        return Some(returns);
                    }
                    // An instance of a package class: its methods are the package's.
                    if is_package_function(self.package, &callee) {
                        return Some(callee);
                    }
                }
                let Expr::Attribute(attribute) = call.func.as_ref() else {
                    return None;
                };
                let receiver = self.of(scope_index, &attribute.value, depth + 1)?;
                self.catalogue
                    .call(&format!("{receiver}.{}", attribute.attr))
                    .and_then(|entry| entry.returns.clone())
            }
            Expr::Name(_) | Expr::Attribute(_) => {
                let name = dotted_name(expr)?;
                if self.is_model(scope_index, &name) {
                    return Some(crate::analysis::library::KERAS_MODEL.to_string());
                }
                self.of_name(scope_index, &name, span(expr).start, depth)
            }
            _ => None,
        }
    }

    fn is_model(&self, scope_index: usize, name: &str) -> bool {
        [scope_index, 0].iter().any(|index| {
            self.module
                .models
                .get(*index)
                .is_some_and(|models| models.contains(name))
        })
    }

    /// The type of the value assigned to `name` in the scope: the last
    /// assignment before `at` there (a notebook binds `saver` again in
    /// later cells), else the last one in the scope, in the module's top
    /// level, or (for `self.x`) in any method of the class.
    fn of_name(&self, scope_index: usize, name: &str, at: usize, depth: usize) -> Option<String> {
        let scope = &self.module.scopes[scope_index];
        let assigned_here = scope
            .facts
            .assignments
            .iter()
            .any(|assignment| assignment.name == name);
        if !assigned_here && scope.parameters.iter().any(|parameter| parameter == name) {
            return self.of_parameter(scope_index, name, depth);
        }
        let mut places = vec![scope_index, 0];
        if name.starts_with("self.")
            && let Some(class) = scope.class
        {
            places.extend(
                self.module
                    .scopes
                    .iter()
                    .enumerate()
                    .filter_map(|(index, other)| {
                        other
                            .class
                            .is_some_and(|found| std::ptr::eq(found, class))
                            .then_some(index)
                    }),
            );
        }
        places.dedup();
        let typed = |assignment: &&crate::analysis::index::Assignment| {
            assignment.name == name && !unpacks_a_value(assignment)
        };
        let before = self.module.scopes[scope_index]
            .facts
            .assignments
            .iter()
            .rev()
            .filter(|assignment| span(assignment.statement).end <= at)
            .filter(typed)
            .find_map(|assignment| self.of(scope_index, assignment.value, depth + 1));
        before.or_else(|| {
            places.into_iter().find_map(|index| {
                self.module.scopes[index]
                    .facts
                    .assignments
                    .iter()
                    .rev()
                    .filter(typed)
                    .find_map(|assignment| self.of(index, assignment.value, depth + 1))
            })
        })
    }
}

impl Types<'_, '_> {
    /// The type of a parameter every call of its function in the module
    /// passes a value of (`self.train_one_epoch(sess, saver)` with `saver =
    /// tf.train.Saver()`): a function called by its name, a method through
    /// `self` from its own class. Unknown when a call passes something else,
    /// leaves it to its default, or unpacks arguments.
    fn of_parameter(&self, scope_index: usize, name: &str, depth: usize) -> Option<String> {
        let position = self.module.scopes[scope_index]
            .parameters
            .iter()
            .position(|parameter| parameter == name)?;
        let mut found: Option<String> = None;
        for (index, site, skipped) in calls_of_function(self.module, scope_index) {
            let unpacks = site
                .call
                .args
                .iter()
                .any(|argument| matches!(argument, Expr::Starred(_)))
                || site
                    .call
                    .keywords
                    .iter()
                    .any(|keyword| keyword.arg.is_none());
            if unpacks {
                return None;
            }
            let argument = argument_for(site.call, name, position.checked_sub(skipped)?)?;
            let passed = self.of(index, argument, depth + 1)?;
            if found.as_ref().is_some_and(|known| *known != passed) {
                return None;
            }
            found = Some(passed);
        }
        found
    }
}

/// `a, saver = build()`: the value recorded is the whole call, whose type
/// is not the type of any one name it is unpacked into.
fn unpacks_a_value(assignment: &crate::analysis::index::Assignment) -> bool {
    match assignment.statement {
        ast::Stmt::Assign(assign) => {
            std::ptr::eq(assign.value.as_ref(), assignment.value)
                && assign
                    .targets
                    .iter()
                    .any(|target| matches!(target, Expr::Tuple(_) | Expr::List(_)))
        }
        _ => false,
    }
}

/// Which writes of rank 0 alone a read may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankZeroWrites {
    /// Those the code makes under a rank-0 test (the program as it is).
    AsWritten,
    /// Those too that the rewrite is about to put there: writes on every
    /// rank of this module and of its own functions.
    AfterTheRewrite,
}

/// A write rank 0 alone makes earlier in the same scope as a read on every
/// rank, of a path built from the same names, with no Horovod collective
/// between them: a rank may read before rank 0 has written. Returns where
/// the write's call starts (a byte offset) and the call.
pub fn read_before_rank_zero_write(
    analysis: &Analysis,
    module: &ModuleAnalysis,
    scope_index: usize,
    read: &CallSite,
    which: RankZeroWrites,
) -> Option<(usize, String)> {
    let scope = &module.scopes[scope_index];
    let read_at = span(read.statement).start;
    if module.index.is_under_rank_zero(&span(read.statement)) {
        return None;
    }
    let read_tokens = read_path_tokens(analysis, module, scope_index, read.call)?;
    let related = |tokens: &[String]| paths_related(&read_tokens, tokens);
    let mut last_write = None;
    for site in scope
        .facts
        .calls
        .iter()
        .filter(|site| span(site.statement).end <= read_at)
    {
        // Which branch a call sits in is asked last: it walks the scope.
        let same_pass = || {
            !crate::analysis::walk::in_other_branches(
                scope.body,
                &span(site.statement),
                &span(read.statement),
            )
        };
        if is_horovod_collective(site.call) {
            if same_pass() {
                last_write = None;
            }
            continue;
        }
        if let Some(tokens) = rank_zero_write(analysis, module, scope_index, site, which)
            && related(&tokens)
            && same_pass()
        {
            last_write = Some((
                span(site.call).start,
                dotted_name(&site.call.func).unwrap_or_default(),
            ));
        }
    }
    last_write
}

/// The names the path a call reads is built from (empty: any path), when
/// the call reads storage and writes none itself: a catalogued read, or a
/// package function that reads and writes nothing.
pub fn read_path_tokens(
    analysis: &Analysis,
    module: &ModuleAnalysis,
    scope_index: usize,
    call: &ast::ExprCall,
) -> Option<Vec<String>> {
    use crate::analysis::training::effect_summaries::{path_argument, path_tokens};
    match of_call(analysis, module, scope_index, call).entry() {
        Some(entry) => {
            let read_effect = entry.find(|effect| matches!(effect, Effect::Reads { .. }))?;
            if entry.has(|effect| {
                matches!(effect, Effect::Writes { .. }) && happens_on_storage(effect, call)
            }) {
                return None;
            }
            Some(
                path_argument(read_effect, call)
                    .map(path_tokens)
                    .unwrap_or_default(),
            )
        }
        // A package function that reads (`display_image(epoch)` opening the
        // picture a training helper saved), and writes nothing itself.
        None => {
            let callee = resolved_callee(analysis, module, scope_index, &call.func)?;
            let effects = &analysis.effects;
            if [&effects.every_rank, &effects.rank_zero_writes]
                .iter()
                .any(|summaries| {
                    summaries
                        .get(&callee)
                        .is_some_and(|reached| !reached.is_empty())
                })
            {
                return None;
            }
            package_function_reads(analysis, &callee, call)
        }
    }
}

/// Whether a write's path names and a read's may be of one file: they
/// share a name, or either is unknown (empty).
pub fn paths_related(read: &[String], written: &[String]) -> bool {
    read.is_empty() || written.is_empty() || written.iter().any(|token| read.contains(token))
}

/// The path tokens of what a package function reads by its own catalogued
/// calls (`PIL.Image.open(...)` in `display_image`); `None` when it reads
/// nothing the catalogue knows, or only paths built from its own names
/// (a parameter `path`), which say nothing at the call.
fn package_function_reads(
    analysis: &Analysis,
    callee: &str,
    call: &ast::ExprCall,
) -> Option<Vec<String>> {
    use crate::analysis::training::effect_summaries::{path_argument, path_tokens};
    let (module, index) = callee_scope(analysis, callee)?;
    let scope = &module.scopes[index];
    let mut tokens = Vec::new();
    for site in &scope.facts.calls {
        let Some(entry) = of_call(analysis, module, index, site.call).entry() else {
            continue;
        };
        if let Some(read) = entry.find(|effect| matches!(effect, Effect::Reads { .. })) {
            let read_tokens = path_argument(read, site.call)
                .map(path_tokens)
                .unwrap_or_default();
            tokens.extend(tokens_at_call(analysis, callee, call, read_tokens));
        }
    }
    (!tokens.is_empty()).then_some(tokens)
}

/// The scope of a package function, by its qualified name.
fn callee_scope<'a>(
    analysis: &'a Analysis,
    callee: &str,
) -> Option<(&'a ModuleAnalysis<'a>, usize)> {
    analysis.modules.iter().find_map(|module| {
        module
            .scopes_named(callee)
            .iter()
            .find(|&&index| module.scopes[index].function.is_some())
            .map(|&index| (module, index))
    })
}

/// A path's tokens as the caller sees them: a parameter of the callee
/// (`open(filename)` in `load(filename)`) becomes the tokens of the
/// argument the call passes for it (`load("model.json")`); the callee's
/// other local names say nothing at the call and are dropped.
fn tokens_at_call(
    analysis: &Analysis,
    callee: &str,
    call: &ast::ExprCall,
    tokens: Vec<String>,
) -> Vec<String> {
    use crate::analysis::training::effect_summaries::path_tokens;
    let Some((module, index)) = callee_scope(analysis, callee) else {
        return tokens;
    };
    let scope = &module.scopes[index];
    // `model.save(path)` binds `self` itself: positions start after it.
    let skip = usize::from(
        matches!(call.func.as_ref(), Expr::Attribute(_))
            && scope
                .parameters
                .first()
                .is_some_and(|first| first == "self" || first == "cls"),
    );
    let local = |token: &String| {
        scope
            .facts
            .assignments
            .iter()
            .any(|assignment| &assignment.name == token)
    };
    tokens
        .into_iter()
        .flat_map(
            |token| match scope.parameters.iter().position(|p| *p == token) {
                Some(position) => {
                    let argument = call
                        .keywords
                        .iter()
                        .find(|keyword| keyword.arg.as_deref() == Some(token.as_str()))
                        .map(|keyword| &keyword.value)
                        .or_else(|| position.checked_sub(skip).and_then(|at| call.args.get(at)));
                    argument.map(path_tokens).unwrap_or_default()
                }
                None if local(&token) => Vec::new(),
                None => vec![token],
            },
        )
        .collect()
}

/// The path tokens of a write rank 0 alone makes at this call, directly or
/// through a package function (empty: any path).
pub fn rank_zero_write(
    analysis: &Analysis,
    module: &ModuleAnalysis,
    scope_index: usize,
    site: &CallSite,
    which: RankZeroWrites,
) -> Option<Vec<String>> {
    use crate::analysis::training::effect_summaries::{path_argument, path_tokens};
    let guarded = module.index.is_under_rank_zero(&span(site.statement));
    // Writes the rewrite guards in this scope get their wait from the rank-0
    // pass, right after them.
    if guarded {
        let known = of_call(analysis, module, scope_index, site.call);
        // A write known by its name only (`model.save('m.keras')` of a
        // model the index cannot type) writes its first argument.
        if let Known::ByName(rule) = &known
            && matches!(rule.effect, Effect::Writes { .. } | Effect::SavesCheckpoint)
        {
            return Some(site.call.args.first().map(path_tokens).unwrap_or_default());
        }
        let entry = known.entry();
        if let Some(effect) = entry.and_then(|entry| {
            entry.find(|effect| {
                matches!(effect, Effect::Writes { .. } | Effect::SavesCheckpoint)
                    && happens_on_storage(effect, site.call)
            })
        }) {
            return Some(
                path_argument(effect, site.call)
                    .map(path_tokens)
                    .unwrap_or_default(),
            );
        }
    }
    if let Some(tokens) = fit_writer_callbacks(analysis, module, scope_index, site.call, which) {
        return Some(tokens);
    }
    let callee = resolved_callee(analysis, module, scope_index, &site.call.func)?;
    let effects = &analysis.effects;
    let mut writes: Vec<&crate::analysis::training::effect_summaries::Reached> = effects
        .rank_zero_writes
        .get(&callee)
        .into_iter()
        .flatten()
        .collect();
    if which == RankZeroWrites::AfterTheRewrite
        && callee.starts_with(&format!("{}.", module.module.name))
    {
        writes.extend(
            effects
                .every_rank
                .get(&callee)
                .into_iter()
                .flatten()
                .filter(|reached| {
                    matches!(reached.effect, Effect::Writes { .. }) && !reached.guessed
                }),
        );
    }
    if writes.is_empty() {
        return None;
    }
    let mut tokens = Vec::new();
    for reached in writes {
        if reached
            .path_tokens
            .iter()
            .any(|token| names_a_deeper_parameter(analysis, &callee, token))
        {
            // Written where a function further down takes its path as a
            // parameter: which file is not known here, so any later read
            // may be of it.
            return Some(Vec::new());
        }
        tokens.extend(tokens_at_call(
            analysis,
            &callee,
            site.call,
            reached.path_tokens.clone(),
        ));
    }
    Some(tokens)
}

/// Whether `token` is a parameter of a package function other than
/// `callee` and not a name of `callee` itself: a path passed further down.
fn names_a_deeper_parameter(analysis: &Analysis, callee: &str, token: &str) -> bool {
    let own = callee_scope(analysis, callee).is_some_and(|(module, index)| {
        let scope = &module.scopes[index];
        scope.parameters.iter().any(|parameter| parameter == token)
            || scope
                .facts
                .assignments
                .iter()
                .any(|assignment| assignment.name == token)
    });
    !own && analysis.modules.iter().any(|module| {
        module.scopes.iter().any(|scope| {
            scope.function.is_some()
                && scope.qualified_name != callee
                && scope.parameters.iter().any(|parameter| parameter == token)
        })
    })
}

/// A Keras `fit` whose callbacks write on rank 0 only (`ModelCheckpoint`
/// kept on rank 0's list, or about to be): the fit writes there. Returns the
/// names their paths are built from.
fn fit_writer_callbacks(
    analysis: &Analysis,
    module: &ModuleAnalysis,
    scope_index: usize,
    call: &ast::ExprCall,
    which: RankZeroWrites,
) -> Option<Vec<String>> {
    let Expr::Attribute(attribute) = call.func.as_ref() else {
        return None;
    };
    if !crate::analysis::library::is_keras_fit_method(attribute.attr.as_str()) {
        return None;
    }
    let callbacks = crate::analysis::walk::keyword(call, "callbacks")?;
    let mut tokens = Vec::new();
    let mut found = false;
    let mut visit = |element: &Expr, on_rank_zero: bool| {
        if !on_rank_zero && which == RankZeroWrites::AsWritten {
            return;
        }
        let made = match element {
            Expr::Call(made) => Some(made),
            Expr::Name(name) => module.scopes[scope_index]
                .facts
                .assignments
                .iter()
                .rev()
                .find(|assignment| assignment.name == name.id.as_str())
                .and_then(|assignment| match assignment.value {
                    Expr::Call(made) => Some(made),
                    _ => None,
                }),
            _ => None,
        };
        let Some(made) = made else {
            return;
        };
        let scope = &module.scopes[scope_index];
        let writes = callee_name(analysis.package, module.module, scope, &made.func)
            .and_then(|callee| analysis.catalogue.call(&callee))
            .and_then(|entry| entry.find(|effect| matches!(effect, Effect::CallbackWrites { .. })));
        if let Some(effect) = writes {
            found = true;
            tokens.extend(
                crate::analysis::training::effect_summaries::path_argument(effect, made)
                    .map(crate::analysis::training::effect_summaries::path_tokens)
                    .unwrap_or_default(),
            );
        }
    };
    let list = match &callbacks.value {
        Expr::List(list) => list,
        // `callbacks=callbacks`, a list bound before the fit.
        Expr::Name(name) => {
            let fit_at = span(call).start;
            match module.scopes[scope_index]
                .facts
                .assignments
                .iter()
                .rev()
                .find(|assignment| {
                    assignment.name == name.id.as_str() && span(assignment.statement).end <= fit_at
                })
                .map(|assignment| assignment.value)
            {
                Some(Expr::List(list)) => list,
                _ => return None,
            }
        }
        _ => return None,
    };
    for element in &list.elts {
        match element {
            // `*([checkpoint] if hvd.rank() == 0 else [])`, as the rewrite writes it.
            Expr::Starred(starred) => {
                if let Expr::IfExp(choice) = starred.value.as_ref()
                    && let Expr::List(kept) = choice.body.as_ref()
                {
                    let on_rank_zero = crate::analysis::index::is_rank_zero_test(
                        &module.scopes[scope_index].bindings,
                        &choice.test,
                    );
                    for inner in &kept.elts {
                        visit(inner, on_rank_zero);
                    }
                }
            }
            other => visit(other, false),
        }
    }
    found.then_some(tokens)
}

/// `hvd.allreduce(...)`, `hvd.join()`, `hvd.broadcast_object(...)`: every
/// rank waits for the others there.
pub fn is_horovod_collective(call: &ast::ExprCall) -> bool {
    dotted_name(&call.func).is_some_and(|name| {
        let (receiver, last) = name.rsplit_once('.').unwrap_or_default();
        // `join`, `barrier` and `broadcast` are common method names
        // (`os.path.join`, `sep.join`, a thread's `join`): only Horovod's.
        let horovod = receiver
            .split('.')
            .next()
            .is_some_and(|root| root.contains("hvd") || root.contains("horovod"));
        match last {
            "allreduce"
            | "broadcast_object"
            | "allgather"
            | "allgather_object"
            | "broadcast_variables" => !receiver.is_empty(),
            "barrier" | "join" | "broadcast" => horovod,
            _ => false,
        }
    }) || dotted_name(&call.func)
        .is_some_and(|name| name.ends_with(".run") && name.contains("barrier"))
}

/// Whether an effect of a call is on a path of this process alone: one a
/// catalogued call made per process (`tempfile.mkdtemp()`), directly,
/// through names the scope (or the module) assigns, or joined onto one.
pub fn path_is_per_process(
    analysis: &Analysis,
    module: &ModuleAnalysis,
    scope_index: usize,
    call: &ast::ExprCall,
    effect: &Effect,
) -> bool {
    let Some(path) = crate::analysis::training::effect_summaries::path_argument(effect, call)
    else {
        return false;
    };
    PerProcess { analysis, module }.holds(scope_index, path, 0)
}

struct PerProcess<'a> {
    analysis: &'a Analysis<'a>,
    module: &'a ModuleAnalysis<'a>,
}

impl PerProcess<'_> {
    fn holds(&self, scope_index: usize, expr: &Expr, depth: usize) -> bool {
        if depth > 5 {
            return false;
        }
        let scope = &self.module.scopes[scope_index];
        match expr {
            Expr::Call(call) => {
                let catalogued =
                    callee_name(self.analysis.package, self.module.module, scope, &call.func)
                        .and_then(|callee| self.analysis.catalogue.call(&callee))
                        .is_some_and(|entry| entry.has(|effect| *effect == Effect::TemporaryPath));
                // `os.path.join(tmp, "model")`, `str(tmp)`: built on its first argument.
                catalogued
                    || call
                        .args
                        .first()
                        .is_some_and(|first| self.holds(scope_index, first, depth + 1))
            }
            Expr::Attribute(attribute) => self.holds(scope_index, &attribute.value, depth + 1),
            Expr::BinOp(operation) => self.holds(scope_index, &operation.left, depth + 1),
            Expr::JoinedStr(joined) => joined
                .values
                .iter()
                .find(|value| !matches!(value, Expr::Constant(_)))
                .is_some_and(|value| match value {
                    Expr::FormattedValue(formatted) => {
                        self.holds(scope_index, &formatted.value, depth + 1)
                    }
                    _ => false,
                }),
            Expr::Name(name) => [scope_index, 0].iter().any(|index| {
                let mut values = self.module.scopes[*index]
                    .facts
                    .assignments
                    .iter()
                    .filter(|assignment| assignment.name == name.id.as_str())
                    .peekable();
                values.peek().is_some()
                    && values.all(|assignment| self.holds(*index, assignment.value, depth + 1))
            }),
            _ => false,
        }
    }
}

/// Whether an expression reads the rank (`hvd.rank()`, `local_rank()`, or
/// a launcher's `..._RANK` variable), directly or through up to three
/// assignments of the scope or the module: a path built from it is the
/// rank's own.
pub fn depends_on_rank(module: &ModuleAnalysis, scope_index: usize, expr: &Expr) -> bool {
    depends_on_rank_directly(module, scope_index, expr)
        || parameter_passed_from_rank(module, scope_index, expr)
}

/// A path built from a parameter of the function that every call of it in
/// the module passes a rank-dependent value for
/// (`save_report(model, "result-%s.json" % rank)`).
fn parameter_passed_from_rank(module: &ModuleAnalysis, scope_index: usize, expr: &Expr) -> bool {
    let scope = &module.scopes[scope_index];
    if scope.function.is_none() {
        return false;
    }
    let mut read = Vec::new();
    crate::analysis::walk::walk_expression(expr, &mut |inner| {
        if let Expr::Name(name) = inner
            && let Some(position) = scope
                .parameters
                .iter()
                .position(|parameter| parameter == name.id.as_str())
        {
            read.push((position, name.id.to_string()));
        }
    });
    if read.is_empty() {
        return false;
    }
    // Functions only: a method's `self.f(...)` calls are not followed here.
    if scope.class.is_some() {
        return false;
    }
    let callers = calls_of_function(module, scope_index);
    !callers.is_empty()
        && callers.iter().all(|(index, site, _)| {
            read.iter().any(|(position, parameter)| {
                argument_for(site.call, parameter, *position)
                    .is_some_and(|passed| depends_on_rank_directly(module, *index, passed))
            })
        })
}

/// What each call in the module of a scope's function passes for one of
/// its parameters, with the calling scope's index and the call.
pub fn arguments_for_parameter<'m>(
    module: &'m ModuleAnalysis,
    scope_index: usize,
    parameter: &str,
) -> Vec<(usize, &'m CallSite<'m>, &'m Expr)> {
    let Some(declared) = module.scopes[scope_index]
        .parameters
        .iter()
        .position(|name| name == parameter)
    else {
        return Vec::new();
    };
    calls_of_function(module, scope_index)
        .into_iter()
        .filter_map(|(index, site, skipped)| {
            let position = declared.checked_sub(skipped)?;
            Some((index, site, argument_for(site.call, parameter, position)?))
        })
        .collect()
}

/// The calls in the module of a scope's function, each with the calling
/// scope and how many leading parameters the call does not pass: a function
/// called by its name (none), a method called through `self` from its own
/// class (one, `self`).
fn calls_of_function<'m>(
    module: &'m ModuleAnalysis,
    scope_index: usize,
) -> Vec<(usize, &'m CallSite<'m>, usize)> {
    let scope = &module.scopes[scope_index];
    if scope.function.is_none() {
        return Vec::new();
    }
    let (function, class) = (scope.name(), scope.class);
    module
        .calls_named(function)
        .into_iter()
        .map(|(index, site)| (index, &module.scopes[index], site))
        .filter_map(
            |(index, caller, site)| match (site.call.func.as_ref(), class) {
                (Expr::Name(called), None) if called.id.as_str() == function => {
                    Some((index, site, 0))
                }
                (Expr::Attribute(called), Some(class))
                    if called.attr.as_str() == function
                        && caller.class.is_some_and(|own| std::ptr::eq(own, class))
                        && is_own_receiver(caller, &called.value) =>
                {
                    Some((index, site, 1))
                }
                _ => None,
            },
        )
        .collect()
}

/// What a call passes for a parameter: by keyword, else at its position.
fn argument_for<'c>(call: &'c ast::ExprCall, name: &str, position: usize) -> Option<&'c Expr> {
    call.keywords
        .iter()
        .find(|keyword| keyword.arg.as_deref() == Some(name))
        .map(|keyword| &keyword.value)
        .or_else(|| call.args.get(position))
}

fn depends_on_rank_directly(module: &ModuleAnalysis, scope_index: usize, expr: &Expr) -> bool {
    let mentions_rank = |expr: &Expr| {
        let mut found = false;
        crate::analysis::walk::walk_expression(expr, &mut |inner| match inner {
            Expr::Call(call) => {
                found |= dotted_name(&call.func).is_some_and(|name| {
                    let last = name.rsplit('.').next().unwrap_or_default();
                    matches!(last, "rank" | "local_rank" | "cross_rank")
                });
            }
            Expr::Constant(constant) => {
                if let ast::Constant::Str(text) = &constant.value {
                    found |= text.ends_with("RANK")
                        && text
                            .chars()
                            .all(|character| character.is_ascii_uppercase() || character == '_');
                }
            }
            _ => {}
        });
        found
    };
    // Each assigned value is followed once: a name assigned in a loop
    // (`x = x + 1`) must not multiply the work.
    let mut seen = std::collections::HashSet::new();
    let mut frontier = vec![expr];
    let scopes: &[usize] = if scope_index == 0 {
        &[0]
    } else {
        &[scope_index, 0]
    };
    for _ in 0..4 {
        if frontier.iter().any(|expr| mentions_rank(expr)) {
            return true;
        }
        let mut next = Vec::new();
        for expr in &frontier {
            crate::analysis::walk::walk_expression(expr, &mut |inner| {
                if let Expr::Name(name) = inner {
                    for index in scopes {
                        next.extend(
                            module.scopes[*index]
                                .facts
                                .assignments
                                .iter()
                                .filter(|assignment| assignment.name == name.id.as_str())
                                .map(|assignment| assignment.value)
                                .filter(|value| seen.insert(std::ptr::from_ref(*value) as usize)),
                        );
                    }
                }
            });
        }
        if next.is_empty() {
            return false;
        }
        frontier = next;
    }
    false
}

/// Whether a call of a package function draws from the process's random
/// state, in its own body or through the package functions it calls
/// (`points, labels = draw(16)` with `np.random` inside): each call gives
/// other data.
pub fn package_function_draws(
    analysis: &Analysis,
    module: &ModuleAnalysis,
    scope_index: usize,
    call: &ast::ExprCall,
) -> bool {
    draws_through_package(analysis, module, scope_index, call, false)
}

/// Whether a call of a package function draws at random each time it runs:
/// a draw under an `if` (`if self.shuffle: np.random.shuffle(idx)`, off by
/// default) may never be made.
pub fn package_function_always_draws(
    analysis: &Analysis,
    module: &ModuleAnalysis,
    scope_index: usize,
    call: &ast::ExprCall,
) -> bool {
    draws_through_package(analysis, module, scope_index, call, true)
}

fn draws_through_package(
    analysis: &Analysis,
    module: &ModuleAnalysis,
    scope_index: usize,
    call: &ast::ExprCall,
    unconditional: bool,
) -> bool {
    let Some(first) = resolved_callee(analysis, module, scope_index, &call.func) else {
        return false;
    };
    let mut pending = vec![first];
    let mut seen = std::collections::HashSet::new();
    while let Some(function) = pending.pop() {
        if !seen.insert(function.clone()) {
            continue;
        }
        let Some((module, scope_index)) = analysis.scope_of_function(&function) else {
            continue;
        };
        for site in &module.scopes[scope_index].facts.calls {
            if unconditional && !site.conditions.is_empty() {
                continue;
            }
            let Some(called) = resolved_callee(analysis, module, scope_index, &site.call.func)
            else {
                continue;
            };
            if crate::analysis::library::draws_at_random(&crate::analysis::library::canonical_name(
                &called,
            )) {
                return true;
            }
            pending.push(called);
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::is_horovod_collective;
    use rustpython_parser::{Parse, ast};

    fn collective(code: &str) -> bool {
        let expr = ast::Expr::parse(code, "<test>").unwrap();
        let ast::Expr::Call(call) = expr else {
            panic!("not a call: {code}")
        };
        is_horovod_collective(&call)
    }

    #[test]
    fn only_horovod_joins_and_barriers_are_collectives() {
        assert!(collective("hvd.allreduce(0, name='b')"));
        assert!(collective("hvd.join()"));
        assert!(collective("horovod_tf.barrier()"));
        assert!(collective("barrier.run(hvd.allreduce(x))"));
        assert!(!collective("os.path.join('a', 'b')"));
        assert!(!collective("worker.join()"));
        assert!(!collective("np.broadcast(a, b)"));
    }
}
