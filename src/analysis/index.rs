//! The semantic index of a module, built once by the analysis so that rules
//! ask questions instead of walking the syntax tree again: per scope, its
//! statements in source order, its calls with their enclosing loops and
//! conditions, what each name is assigned and an abstract value of it; per
//! module, which statements sit under a rank-0 test and where `hvd.init()`
//! runs.

use std::collections::HashMap;

use rustc_hash::FxHashMap;
use std::ops::Range;

use rustpython_parser::ast::{self, CmpOp, Constant, Expr, Stmt};

use super::library::{self, LibraryClass};
use super::package::{Module, Package};
use super::training::{Scope, callee_name};
use super::walk::{
    calls_in_statement, dotted_name, is_scope, nested_bodies, target_names, walk_expression,
};
use crate::python::parse::span;

/// What a name holds after an assignment, as far as the rewrite cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AbstractValue {
    /// A number literal (`0.001`, `-3`).
    Number,
    /// An expression already multiplied by `hvd.size()` or `hvd.local_size()`,
    /// directly or through a name that holds one.
    ScaledByWorkers,
    /// `x if hvd.rank() == 0 else y`: different on each rank by intent.
    RankDependent,
    /// Something Horovod made: a hook, a callback, a wrapped optimizer or tape.
    Horovod,
    Optimizer,
    Schedule,
    Session,
    /// `tf.summary.scalar(...)` and the like in TF1: an op, computed by everyone.
    SummaryOp,
    FileWriter,
    Dataset,
    Checkpoint,
    /// A call or expression the index has nothing to say about.
    Unknown,
}

/// One name bound by an assignment or a `with ... as name`.
#[derive(Debug, Clone)]
pub struct Assignment<'a> {
    /// The bound name, dotted for an attribute target (`self.sess`).
    pub name: String,
    pub statement: &'a Stmt,
    /// The assigned expression (the context expression of a `with`).
    pub value: &'a Expr,
    /// The canonical callee when the value is a call (resolved for training modules).
    pub callee: Option<String>,
    pub value_kind: AbstractValue,
}

/// One call of a scope's own statements.
#[derive(Debug, Clone)]
pub struct CallSite<'a> {
    pub statement: &'a Stmt,
    pub call: &'a ast::ExprCall,
    /// The loops of the same scope around the call, outermost first.
    pub enclosing_loops: Vec<&'a Stmt>,
    /// The tests of the `if`s whose body holds the call, outermost first.
    pub conditions: Vec<&'a Expr>,
}

/// An expression of the tree: its address and source range.
pub type ExpressionKey = (usize, Range<usize>);

/// The facts of one scope (its own statements, not those of nested functions).
#[derive(Debug, Default)]
pub struct ScopeIndex<'a> {
    /// Every statement in source order, descending into blocks but not scopes.
    pub statements: Vec<&'a Stmt>,
    pub calls: Vec<CallSite<'a>>,
    pub assignments: Vec<Assignment<'a>>,
    /// The callee each called expression resolved to, by the expression's
    /// address: several passes ask about the same call, and resolving it
    /// builds and looks up names each time.
    pub callees: std::sync::Mutex<FxHashMap<ExpressionKey, Option<String>>>,
}

impl<'a> ScopeIndex<'a> {
    /// Each statement in source order with the calls it holds itself (not
    /// those of its nested blocks), as a walk over the statements finds them.
    pub fn statements_with_calls(&self) -> impl Iterator<Item = (&'a Stmt, &[CallSite<'a>])> + '_ {
        // A statement's calls are recorded right after it, before its
        // nested blocks: they are one run of `calls`.
        let mut next_call = 0;
        self.statements.iter().map(move |&statement| {
            let first = next_call;
            while self
                .calls
                .get(next_call)
                .is_some_and(|site| std::ptr::eq(site.statement, statement))
            {
                next_call += 1;
            }
            (statement, &self.calls[first..next_call])
        })
    }

    /// Names assigned a value of this kind, in source order.
    pub fn names_holding(&self, kind: AbstractValue) -> impl Iterator<Item = &str> + '_ {
        self.assignments
            .iter()
            .filter(move |assignment| assignment.value_kind == kind)
            .map(|assignment| assignment.name.as_str())
    }

    /// The value `name` (or a dotted `self.x`) was last assigned in the scope.
    pub fn last_value_of(&self, name: &str) -> Option<&'a Expr> {
        self.assignments
            .iter()
            .rev()
            .find(|assignment| assignment.name == name)
            .map(|assignment| assignment.value)
    }

    /// The last assignment of `name` (or a dotted `self.x`) written before
    /// `offset` in the scope, in the order of the text (not of the flow).
    pub fn assignment_before(&self, name: &str, offset: usize) -> Option<&Assignment<'a>> {
        self.assignments
            .iter()
            .filter(|assignment| assignment.name == name)
            .rfind(|assignment| crate::python::parse::span(assignment.statement).end <= offset)
    }

    /// Names assigned from a call whose canonical callee matches.
    pub fn names_assigned_from(
        &self,
        matches_callee: impl Fn(&str) -> bool + 'static,
    ) -> impl Iterator<Item = &str> + '_ {
        self.assignments
            .iter()
            .filter(move |assignment| {
                matches!(assignment.statement, Stmt::Assign(_))
                    && assignment.callee.as_deref().is_some_and(&matches_callee)
            })
            .map(|assignment| assignment.name.as_str())
    }

    /// Names bound to TF1 sessions: `sess = tf.Session()`, `with tf.Session() as sess:`.
    /// The last assignment of `name` in the scope that ends before `at`.
    pub fn last_assignment_before(&self, name: &str, at: usize) -> Option<&Assignment<'a>> {
        self.assignments
            .iter()
            .filter(|assignment| assignment.name == name && span(assignment.statement).end <= at)
            .max_by_key(|assignment| span(assignment.statement).start)
    }

    pub fn session_names(&self) -> std::collections::HashSet<&str> {
        self.names_holding(AbstractValue::Session).collect()
    }

    /// The call at exactly this range.
    pub fn call_at(&self, range: &Range<usize>) -> Option<&CallSite<'a>> {
        self.calls.iter().find(|site| span(site.call) == *range)
    }
}

/// The facts of one module that span its scopes (each scope's own facts
/// are in its `Scope::facts`).
#[derive(Debug, Default)]
pub struct SemanticIndex {
    /// The statements of each block guarded by `if hvd.rank() == 0:` (or `local_rank`).
    pub rank_zero_blocks: Vec<Vec<Range<usize>>>,
    /// Where the module's first `hvd.init()` call is, if it has one.
    pub horovod_init: Option<Range<usize>>,
    /// `if` blocks that launch workers with `horovod.run(...)`: they run in
    /// the launching process, before any `hvd.init()`.
    pub launcher_blocks: Vec<Range<usize>>,
}

impl SemanticIndex {
    /// Whether code at `offset` runs before the module's own `hvd.init()`
    /// (always false for a module that does not call it).
    pub fn runs_before_init(&self, offset: usize) -> bool {
        self.horovod_init
            .as_ref()
            .is_some_and(|init| offset < init.start)
    }

    /// Whether a statement runs in the process that launches the workers.
    pub fn is_in_launcher(&self, statement: &Range<usize>) -> bool {
        self.launcher_blocks
            .iter()
            .any(|block| block.start <= statement.start && statement.end <= block.end)
    }

    /// Whether a statement sits in a block guarded by a rank-0 test.
    pub fn is_under_rank_zero(&self, statement: &Range<usize>) -> bool {
        self.rank_zero_blocks
            .iter()
            .flatten()
            .any(|range| range.start <= statement.start && statement.end <= range.end)
    }
}

/// The facts of a scope's own statements (values unresolved).
pub fn scope_facts(body: &[Stmt]) -> ScopeIndex<'_> {
    let mut facts = ScopeIndex::default();
    collect(body, &mut Vec::new(), &mut Vec::new(), &mut facts);
    facts
}

/// Resolves the callees and abstract values of a scope's assignments, in
/// source order so that a name holding a scaled rate passes that on
/// (`lr = base * hvd.size()` then `rate = lr`). Done for training modules,
/// which rules rewrite.
pub fn resolve_values(package: &Package, module: &Module, scope: &mut Scope) {
    let mut known: HashMap<String, AbstractValue> = HashMap::new();
    let mut assignments = std::mem::take(&mut scope.facts.assignments);
    for assignment in &mut assignments {
        if let Expr::Call(call) = assignment.value {
            assignment.callee = callee_name(package, module, scope, &call.func);
        }
        let callee = assignment.callee.as_deref();
        let kind = match callee {
            // A schedule class of the package (`class CustomSchedule(LearningRateSchedule)`).
            Some(callee) if package.is_subclass(callee, library::KERAS_SCHEDULE) => {
                AbstractValue::Schedule
            }
            _ => abstract_value(scope, assignment.value, callee, &known),
        };
        assignment.value_kind = kind;
        known.insert(assignment.name.clone(), kind);
    }
    scope.facts.assignments = assignments;
}

/// The module-wide facts, from the facts of its scopes.
pub fn module_facts(scopes: &[Scope]) -> SemanticIndex {
    let mut index = SemanticIndex::default();
    for scope in scopes {
        for statement in &scope.facts.statements {
            if let Stmt::If(node) = statement
                && is_rank_zero_test(&scope.bindings, &node.test)
            {
                index
                    .rank_zero_blocks
                    .push(node.body.iter().map(span).collect());
            }
        }
        // `if hvd.rank() != 0: return` at the top of a function: what follows
        // runs on rank 0 only.
        let returns_elsewhere = scope.body.iter().position(|statement| {
            matches!(statement, Stmt::If(node)
                if is_rank_nonzero_test(&scope.bindings, &node.test)
                    && matches!(node.body.as_slice(), [Stmt::Return(_)]))
        });
        if scope.function.is_some()
            && let Some(position) = returns_elsewhere
        {
            let rest = scope.body[position + 1..].iter().map(span).collect();
            index.rank_zero_blocks.push(rest);
        }
        let init = scope.facts.calls.iter().find(|site| {
            matches!(site.call.func.as_ref(), Expr::Attribute(attribute)
                if attribute.attr.as_str() == "init"
                    && is_horovod(&scope.bindings, &attribute.value))
        });
        if let Some(init) = init
            && index.horovod_init.is_none()
        {
            index.horovod_init = Some(span(init.call));
        }
        collect_launcher_blocks(scope, &mut index);
    }
    add_rank_zero_classes(scopes, &mut index);
    index
}

/// `if len(sys.argv) == 4: ...; horovod.run(main, np=...)`: the launching
/// process runs this block and never calls `hvd.init()` itself.
fn collect_launcher_blocks(scope: &Scope, index: &mut SemanticIndex) {
    for statement in &scope.facts.statements {
        let Stmt::If(node) = statement else {
            continue;
        };
        let launches = node.body.iter().any(|inner| {
            calls_in_statement(inner).iter().any(|call| {
                scope.bindings.resolve_raw(&call.func).is_some_and(|name| {
                    matches!(name.as_str(), "horovod.run" | "horovod.runner.run")
                })
            })
        });
        if launches {
            index.launcher_blocks.push(span(*statement));
        }
    }
}

/// A class made only under a rank-0 test (a timing callback added on rank 0)
/// runs its methods on rank 0 only.
fn add_rank_zero_classes(scopes: &[Scope], index: &mut SemanticIndex) {
    let Some(top_level) = scopes.first() else {
        return;
    };
    // Calls of plain names, grouped by name once (a module can define
    // thousands of classes and make millions of calls).
    let mut calls_by_name: FxHashMap<&str, Vec<&CallSite>> = FxHashMap::default();
    for site in scopes.iter().flat_map(|scope| &scope.facts.calls) {
        if let Expr::Name(name) = site.call.func.as_ref() {
            calls_by_name
                .entry(name.id.as_str())
                .or_default()
                .push(site);
        }
    }
    for statement in &top_level.facts.statements {
        let Stmt::ClassDef(class) = statement else {
            continue;
        };
        let made = calls_by_name.get(class.name.as_str());
        let any = made.is_some_and(|sites| !sites.is_empty());
        let only_on_rank_zero = made
            .into_iter()
            .flatten()
            .all(|site| index.is_under_rank_zero(&span(site.statement)));
        if any && only_on_rank_zero {
            index.rank_zero_blocks.push(vec![span(*statement)]);
        }
    }
}

fn collect<'a>(
    body: &'a [Stmt],
    loops: &mut Vec<&'a Stmt>,
    conditions: &mut Vec<&'a Expr>,
    facts: &mut ScopeIndex<'a>,
) {
    for stmt in body {
        facts.statements.push(stmt);
        for call in calls_in_statement(stmt) {
            facts.calls.push(CallSite {
                statement: stmt,
                call,
                enclosing_loops: loops.clone(),
                conditions: conditions.clone(),
            });
        }
        collect_assignments(stmt, facts);
        if is_scope(stmt) {
            continue;
        }
        let is_loop = matches!(stmt, Stmt::For(_) | Stmt::AsyncFor(_) | Stmt::While(_));
        if is_loop {
            loops.push(stmt);
        }
        match stmt {
            Stmt::If(node) => {
                conditions.push(&node.test);
                collect(&node.body, loops, conditions, facts);
                conditions.pop();
                collect(&node.orelse, loops, conditions, facts);
            }
            _ => {
                for nested in nested_bodies(stmt) {
                    collect(nested, loops, conditions, facts);
                }
            }
        }
        if is_loop {
            loops.pop();
        }
    }
}

fn collect_assignments<'a>(stmt: &'a Stmt, facts: &mut ScopeIndex<'a>) {
    let mut bind = |target: &'a Expr, value: &'a Expr| {
        let names: Vec<String> = match target {
            Expr::Attribute(_) => dotted_name(target).into_iter().collect(),
            _ => target_names(target).into_iter().map(String::from).collect(),
        };
        for name in names {
            facts.assignments.push(Assignment {
                name,
                statement: stmt,
                value,
                callee: None,
                value_kind: AbstractValue::Unknown,
            });
        }
    };
    match stmt {
        Stmt::Assign(assign) => {
            for target in &assign.targets {
                bind(target, &assign.value);
            }
        }
        Stmt::AnnAssign(assign) => {
            if let Some(value) = &assign.value {
                bind(&assign.target, value);
            }
        }
        Stmt::With(with) => {
            for item in &with.items {
                if let Some(target) = &item.optional_vars {
                    bind(target, &item.context_expr);
                }
            }
        }
        _ => {}
    }
}

fn abstract_value(
    scope: &Scope,
    value: &Expr,
    callee: Option<&str>,
    known: &HashMap<String, AbstractValue>,
) -> AbstractValue {
    match value {
        Expr::Constant(ast::ExprConstant {
            value: Constant::Int(_) | Constant::Float(_),
            ..
        }) => return AbstractValue::Number,
        Expr::UnaryOp(unary) if matches!(unary.operand.as_ref(), Expr::Constant(_)) => {
            return AbstractValue::Number;
        }
        Expr::IfExp(choice) if is_rank_zero_test(&scope.bindings, &choice.test) => {
            return AbstractValue::RankDependent;
        }
        Expr::Name(name) => {
            return known
                .get(name.id.as_str())
                .copied()
                .unwrap_or(AbstractValue::Unknown);
        }
        _ => {}
    }
    if let Some(callee) = callee {
        if library::is_horovod(callee) {
            // The worker count itself scales what it multiplies.
            let is_worker_count = callee.ends_with(".size") || callee.ends_with(".local_size");
            return if is_worker_count {
                AbstractValue::ScaledByWorkers
            } else {
                AbstractValue::Horovod
            };
        }
        if let Some(kind) = kind_of_callee(callee) {
            return kind;
        }
    }
    if uses_worker_count(&scope.bindings, value, known) {
        return AbstractValue::ScaledByWorkers;
    }
    AbstractValue::Unknown
}

fn kind_of_callee(callee: &str) -> Option<AbstractValue> {
    let callee = library::canonical_name(callee);
    let callee = callee.as_str();
    match library::library_class(callee) {
        Some(LibraryClass::Optimizer(_)) => return Some(AbstractValue::Optimizer),
        Some(LibraryClass::Schedule(_)) => return Some(AbstractValue::Schedule),
        _ => {}
    }
    let kind = match callee {
        "tensorflow.Session" | "tensorflow.InteractiveSession" => AbstractValue::Session,
        "tensorflow.summary.FileWriter" | "tensorflow.summary.create_file_writer" => {
            AbstractValue::FileWriter
        }
        "tensorflow.summary.scalar"
        | "tensorflow.summary.histogram"
        | "tensorflow.summary.image"
        | "tensorflow.summary.merge_all"
        | "tensorflow.summary.merge" => AbstractValue::SummaryOp,
        "tensorflow.train.Checkpoint"
        | "tensorflow.train.CheckpointManager"
        | "tensorflow.train.Saver" => AbstractValue::Checkpoint,
        _ if callee.starts_with("tensorflow.data.") => AbstractValue::Dataset,
        _ => return None,
    };
    Some(kind)
}

/// Whether an expression calls `hvd.size()`/`hvd.local_size()` or reads a
/// name already scaled by them.
fn uses_worker_count(
    bindings: &super::bindings::Bindings,
    value: &Expr,
    known: &HashMap<String, AbstractValue>,
) -> bool {
    let mut found = false;
    walk_expression(value, &mut |inner| match inner {
        Expr::Call(call) => {
            if let Expr::Attribute(attribute) = call.func.as_ref()
                && matches!(attribute.attr.as_str(), "size" | "local_size")
                && is_horovod(bindings, &attribute.value)
            {
                found = true;
            }
        }
        Expr::Name(name) => {
            found |= known.get(name.id.as_str()) == Some(&AbstractValue::ScaledByWorkers);
        }
        _ => {}
    });
    found
}

fn is_horovod(bindings: &super::bindings::Bindings, expr: &Expr) -> bool {
    bindings
        .resolve_raw(expr)
        .is_some_and(|name| library::is_horovod(&name))
}

/// `hvd.rank() != 0` (or `local_rank`).
fn is_rank_nonzero_test(bindings: &super::bindings::Bindings, test: &Expr) -> bool {
    let Expr::Compare(compare) = test else {
        return false;
    };
    if !matches!(compare.ops.as_slice(), [CmpOp::NotEq]) {
        return false;
    }
    let equal = Expr::Compare(ast::ExprCompare {
        ops: vec![CmpOp::Eq],
        ..compare.clone()
    });
    is_rank_zero_test(bindings, &equal)
}

/// `hvd.rank() == 0` (or `local_rank`), either way round, alone or as one
/// of the conditions of an `and` (`batch % 10 == 0 and hvd.rank() == 0`).
pub fn is_rank_zero_test(bindings: &super::bindings::Bindings, test: &Expr) -> bool {
    if let Expr::BoolOp(all) = test
        && all.op == ast::BoolOp::And
    {
        return all
            .values
            .iter()
            .any(|value| is_rank_zero_test(bindings, value));
    }
    let Expr::Compare(compare) = test else {
        return false;
    };
    let operands: Vec<&Expr> = std::iter::once(compare.left.as_ref())
        .chain(compare.comparators.iter())
        .collect();
    let calls_rank = |operand: &&Expr| {
        let mut found = false;
        walk_expression(operand, &mut |inner| {
            if let Expr::Call(call) = inner
                && let Expr::Attribute(attribute) = call.func.as_ref()
                && matches!(attribute.attr.as_str(), "rank" | "local_rank")
                && is_horovod(bindings, &attribute.value)
            {
                found = true;
            }
        });
        found
    };
    let is_zero = |operand: &&Expr| matches!(operand, Expr::Constant(ast::ExprConstant { value: Constant::Int(number), .. }) if *number == 0u32.into());
    matches!(compare.ops.as_slice(), [CmpOp::Eq])
        && operands.iter().any(calls_rank)
        && operands.iter().any(is_zero)
}

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;
