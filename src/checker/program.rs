//! The program the checker judges: one module of the package as it will
//! run, analysed afresh, with the questions every invariant asks of it.

use std::ops::Range;

use rustpython_parser::ast::{self, Expr, Stmt};

use crate::analysis::index::CallSite;
use crate::analysis::library;
use crate::analysis::training::{Analysis, ModuleAnalysis, Scope, TrainingPattern, callee_name};
use crate::analysis::walk::walk_expression;
use crate::python::parse::span;

pub struct Program<'a> {
    pub analysis: &'a Analysis<'a>,
    pub module: &'a ModuleAnalysis<'a>,
    pub text: &'a str,
    /// The ranges of `text` that are not in the file as the user wrote it
    /// (what a rewrite added or replaced); empty for hand-written code.
    pub generated: Vec<Range<usize>>,
    /// The file as the user wrote it, when `text` is a rewrite of it:
    /// messages name the user's lines.
    pub origin: Option<Origin<'a>>,
    /// The user wrote the module with Horovod already: choices that are
    /// judgement calls (a download made on every rank, a rate scaled for
    /// weak scaling) are theirs, and open rather than wrong.
    pub written_with_horovod: bool,
    /// The module's calls with their callees, resolved once for every
    /// invariant (`calls`).
    pub resolved_calls: std::sync::OnceLock<Vec<ScopedCall<'a, 'a>>>,
}

/// The original text of a rewritten module and how the rewrite maps onto it.
pub struct Origin<'a> {
    pub text: &'a str,
    pub map: crate::python::edit::EditMap,
    /// Where the original's lines start, for messages.
    pub lines: crate::python::source::LineIndex,
}

/// A call with the scope it is made in.
pub struct ScopedCall<'p, 'a> {
    pub scope: &'p Scope<'a>,
    /// The scope's index in the module's scopes (0: the top level).
    pub scope_index: usize,
    pub site: &'p CallSite<'a>,
    /// The canonical name of what is called, when the index resolves it.
    pub callee: Option<String>,
}

impl ScopedCall<'_, '_> {
    pub fn range(&self) -> Range<usize> {
        span(self.site.call)
    }

    /// The attribute called (`save` of `model.save(...)`), or the called name.
    pub fn method(&self) -> Option<&str> {
        match self.site.call.func.as_ref() {
            Expr::Attribute(attribute) => Some(attribute.attr.as_str()),
            Expr::Name(name) => Some(name.id.as_str()),
            _ => None,
        }
    }

    /// The Horovod function called (`rank` of `hvd.rank()`), when it is one.
    pub fn horovod_function(&self) -> Option<&str> {
        let callee = self.callee.as_deref()?;
        library::is_horovod(callee).then(|| callee.rsplit('.').next().unwrap_or(callee))
    }
}

impl<'a> Program<'a> {
    /// The other modules of the package, as programs of their own (their
    /// text as it will run; nothing marked generated).
    pub fn others(&self) -> Vec<Program<'a>> {
        self.analysis
            .modules
            .iter()
            .filter(|module| !std::ptr::eq(*module, self.module))
            .map(|module| Program {
                analysis: self.analysis,
                module,
                text: &module.module.source.text,
                generated: Vec::new(),
                origin: None,
                written_with_horovod: false,
                resolved_calls: Default::default(),
            })
            .collect()
    }

    /// This module and the package's others, as programs.
    pub fn others_and_self(&self) -> Vec<Program<'a>> {
        let mut all = self.others();
        all.push(Program {
            analysis: self.analysis,
            module: self.module,
            text: self.text,
            generated: self.generated.clone(),
            origin: None,
            written_with_horovod: self.written_with_horovod,
            resolved_calls: Default::default(),
        });
        all
    }

    /// The statements around a call, outermost first (the call's own last).
    pub fn enclosing_statements<'s>(&self, scope: &Scope<'s>, site: &CallSite) -> Vec<&'s Stmt> {
        crate::analysis::walk::path_to(scope.body, &span(site.statement)).unwrap_or_default()
    }

    /// Whether the module binds any Horovod module.
    pub fn uses_horovod(&self) -> bool {
        self.module.module.binds_horovod()
    }

    /// The training loops the program runs directly.
    pub fn patterns(&self) -> Vec<TrainingPattern> {
        self.module.patterns()
    }

    pub fn has_pattern(&self, pattern: TrainingPattern) -> bool {
        self.module.sites.iter().any(|site| site.pattern == pattern)
    }

    /// Every call of the module, in scope order, with its resolved callee:
    /// resolved once per program, whichever invariant asks first.
    pub fn calls(&self) -> &[ScopedCall<'a, 'a>] {
        let module: &'a ModuleAnalysis<'a> = self.module;
        let analysis = self.analysis;
        self.resolved_calls.get_or_init(|| {
            module
                .scopes
                .iter()
                .enumerate()
                .flat_map(|(scope_index, scope)| {
                    scope.facts.calls.iter().map(move |site| ScopedCall {
                        scope,
                        scope_index,
                        site,
                        callee: callee_name(
                            analysis.package,
                            module.module,
                            scope,
                            &site.call.func,
                        )
                        .map(|name| library::canonical_name(&name)),
                    })
                })
                .collect()
        })
    }

    /// Whether a module of the package this module imports, or one that
    /// imports it (a training loop calling this module's step), calls one
    /// of these Horovod functions. An unrelated module's call shows nothing
    /// about this module's loops.
    pub fn package_calls_horovod(&self, functions: &[&str]) -> Option<(String, usize)> {
        let this = self.module.module;
        let related = |other: &crate::analysis::package::Module| {
            this.imports.contains(&other.name) || other.imports.contains(&this.name)
        };
        let modules = self.analysis.modules.iter();
        modules
            .filter(|module| related(module.module))
            .find_map(|module| {
                module.scopes.iter().find_map(|scope| {
                    scope.facts.calls.iter().find_map(|site| {
                        let callee = callee_name(
                            self.analysis.package,
                            module.module,
                            scope,
                            &site.call.func,
                        )?;
                        let function = callee.rsplit('.').next()?;
                        (library::is_horovod(&callee) && functions.contains(&function)).then(|| {
                            (
                                module.module.source.relative_path.clone(),
                                module.module.source.location(span(site.call).start).line,
                            )
                        })
                    })
                })
            })
    }

    /// Whether an expression is a value Horovod made (`hvd.DistributedOptimizer(...)`,
    /// a Horovod callback), or a name whose last assignment before it (in its
    /// scope, else at module level) is one. A call that only reads the worker
    /// count (`Adam(0.001 * hvd.size())`) is not.
    pub fn is_horovod_value(&self, scope: &Scope, expr: &Expr) -> bool {
        if self.is_horovod_call(scope, expr) {
            return true;
        }
        let Some(name) = crate::analysis::walk::dotted_name(expr) else {
            return false;
        };
        self.last_binding(scope, &name, span(expr).start)
            .is_some_and(|(value, bound_in)| self.is_horovod_call(bound_in, value))
    }

    /// The value `name` was last bound to before offset `at`, in `scope`,
    /// else at the module's top level, with the scope that binds it.
    pub fn last_binding<'s>(
        &'s self,
        scope: &'s Scope<'s>,
        name: &str,
        at: usize,
    ) -> Option<(&'s Expr, &'s Scope<'s>)> {
        let before = |candidate: &'s Scope<'s>| {
            candidate
                .facts
                .assignments
                .iter()
                .rfind(|assignment| {
                    assignment.name == name && span(assignment.statement).start < at
                })
                .map(|assignment| (assignment.value, candidate))
        };
        before(scope).or_else(|| before(&self.module.scopes[0]))
    }

    /// A call of a Horovod function (not one that merely reads from Horovod
    /// inside its arguments).
    fn is_horovod_call(&self, scope: &Scope, expr: &Expr) -> bool {
        matches!(expr, Expr::Call(call) if scope
            .bindings
            .resolve_raw(&call.func)
            .is_some_and(|name| library::is_horovod(&name)))
    }

    /// Whether an expression calls `hvd.<function>()` somewhere in it.
    pub fn calls_horovod_function(&self, scope: &Scope, expr: &Expr, function: &str) -> bool {
        let mut found = false;
        walk_expression(expr, &mut |inner| {
            if let Expr::Call(call) = inner
                && let Some(name) = scope.bindings.resolve_raw(&call.func)
                && library::is_horovod(&name)
                && name.rsplit('.').next() == Some(function)
            {
                found = true;
            }
        });
        found
    }

    /// Whether the statement runs on rank 0 only: in a block under a rank-0
    /// test, or in a call whose conditions test it.
    pub fn runs_on_rank_zero_only(&self, scope: &Scope, site: &CallSite) -> bool {
        let statement = span(site.statement);
        self.module.index.is_under_rank_zero(&statement)
            || site.conditions.iter().any(|condition| {
                crate::analysis::index::is_rank_zero_test(&scope.bindings, condition)
            })
            || self.in_rank_zero_expression(scope, site)
    }

    /// `x.save(...) if hvd.rank() == 0 else None` and the like.
    fn in_rank_zero_expression(&self, scope: &Scope, site: &CallSite) -> bool {
        let target = span(site.call);
        let mut found = false;
        crate::analysis::walk::walk_statement_expressions(site.statement, &mut |expr| {
            if let Expr::IfExp(choice) = expr
                && crate::analysis::index::is_rank_zero_test(&scope.bindings, &choice.test)
            {
                let body = span(choice.body.as_ref());
                found |= body.start <= target.start && target.end <= body.end;
            }
        });
        found
    }

    /// Whether a range overlaps text the rewrite generated.
    pub fn is_generated(&self, range: &Range<usize>) -> bool {
        self.generated
            .iter()
            .any(|generated| generated.start < range.end && range.start < generated.end)
    }

    /// What the catalogue of library behaviour says a call does.
    pub fn known(&self, call: &ScopedCall) -> crate::analysis::effects::Known<'a> {
        crate::analysis::effects::of_call(
            self.analysis,
            self.module,
            call.scope_index,
            call.site.call,
        )
    }

    /// Whether the catalogue gives a call this effect.
    pub fn has_effect(
        &self,
        call: &ScopedCall,
        effect: &crate::analysis::catalogue::Effect,
    ) -> bool {
        self.known(call)
            .entry()
            .is_some_and(|entry| entry.effects.contains(effect))
    }

    /// The line (1-based) of an offset, for messages: the user's line (for
    /// generated text, the line where the rewrite put it).
    pub fn line(&self, offset: usize) -> usize {
        match &self.origin {
            Some(origin) => {
                let at = origin.map.original_offset(offset).min(origin.text.len());
                origin.lines.line_of(at) + 1
            }
            None => self.module.module.source.location(offset).line,
        }
    }

    /// The module's top-level statements.
    pub fn top_level(&self) -> &'a [Stmt] {
        &self.module.module.body
    }

    /// The keyword `name` of a call, or its positional argument `index`.
    pub fn argument<'c>(call: &'c ast::ExprCall, name: &str, index: usize) -> Option<&'c Expr> {
        crate::analysis::walk::keyword(call, name)
            .map(|keyword| &keyword.value)
            .or_else(|| call.args.get(index))
    }
}
