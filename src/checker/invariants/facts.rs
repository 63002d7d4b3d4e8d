//! Facts several invariants read: where a program divides its work among
//! workers, shards its data, and multiplies by the worker count.

use std::ops::Range;

use rustpython_parser::ast::{self, Expr, Operator};

pub use crate::analysis::library::OPTIMIZER_STEP_METHODS;
use crate::analysis::walk::walk_statement_expressions;
pub use crate::analysis::walk::{chain_root, method_chain};
use crate::checker::Program;
use crate::python::parse::span;

/// Where the module divides or multiplies by `hvd.size()`, and shards.
#[derive(Debug, Default)]
pub struct SplitFacts {
    /// `.shard(hvd.size(), hvd.rank())` calls.
    pub shards: Vec<Range<usize>>,
    /// `n // hvd.size()` and `n / hvd.size()` (a divided bound or count).
    pub divisions: Vec<Range<usize>>,
    /// `x * hvd.size()` (a scaled rate).
    pub scalings: Vec<Range<usize>>,
    /// `items[hvd.rank()::hvd.size()]`: a worker's own share of a sequence
    /// (of a batch cursor's positions).
    pub shares: Vec<Range<usize>>,
    /// Divisions of a count the checker knows to be at most 1
    /// (`epochs // hvd.size()` with `epochs = 1`): they divide nothing.
    pub empty_divisions: Vec<Range<usize>>,
    /// Names of step counts divided inside a learning-rate schedule
    /// (`CosineDecay(rate, TOTAL_STEPS // hvd.size())`), with the division.
    pub schedule_step_counts: Vec<(String, Range<usize>)>,
}

impl SplitFacts {
    pub fn of(program: &Program) -> SplitFacts {
        let mut facts = SplitFacts::default();
        let helpers = equal_shard_helpers(program);
        // The names divided (`TOTAL_STEPS` of `TOTAL_STEPS // hvd.size()`).
        let mut divided_names = Vec::new();
        // A shard helper's own shard and count split nothing until applied.
        for scope in program
            .module
            .scopes
            .iter()
            .filter(|scope| scope.function.is_none() || !helpers.contains(&scope.name()))
        {
            for statement in &scope.facts.statements {
                walk_statement_expressions(statement, &mut |expr| match expr {
                    Expr::BinOp(operation) => {
                        let by_workers = |side: &Expr| {
                            program.calls_horovod_function(scope, side, "size")
                                && !matches!(side, Expr::BinOp(_))
                        };
                        // `n // hvd.size() * hvd.size()`: n rounded down to a
                        // multiple of the workers, not a rate.
                        let rounds_to_workers = |side: &Expr| matches!(side, Expr::BinOp(inner) if inner.op == Operator::FloorDiv && by_workers(&inner.right));
                        match operation.op {
                            Operator::FloorDiv | Operator::Div if by_workers(&operation.right) => {
                                if known_count(program, scope, &operation.left)
                                    .is_some_and(|count| count <= 1)
                                {
                                    facts.empty_divisions.push(span(expr))
                                } else {
                                    if let Some(name) =
                                        crate::analysis::walk::dotted_name(&operation.left)
                                    {
                                        divided_names.push((name, span(expr)));
                                    }
                                    facts.divisions.push(span(expr))
                                }
                            }
                            Operator::Mult
                                if (by_workers(&operation.right)
                                    || by_workers(&operation.left))
                                    && !rounds_to_workers(&operation.left)
                                    && !rounds_to_workers(&operation.right) =>
                            {
                                facts.scalings.push(span(expr))
                            }
                            _ => {}
                        }
                    }
                    Expr::Call(call)
                        if (is_shard_by_workers(program, scope, call)
                            || applies_helper(call, &helpers))
                            && !shards_a_peek(call) =>
                    {
                        facts.shards.push(span(expr))
                    }
                    Expr::Subscript(subscript)
                        if is_share_by_rank(program, scope, &subscript.slice) =>
                    {
                        facts.shares.push(span(expr))
                    }
                    _ => {}
                });
            }
        }
        // A schedule's step count divided with the work (`decay_steps //
        // hvd.size()`) follows a split; it is none.
        let schedules: Vec<Range<usize>> = program
            .calls()
            .iter()
            .filter(|call| {
                program.known(call).entry().is_some_and(|entry| {
                    entry.effects.iter().any(|effect| {
                        matches!(
                            effect,
                            crate::analysis::catalogue::Effect::CountsSteps { .. }
                        )
                    })
                })
            })
            .map(|call| call.range())
            .collect();
        let in_schedule = |division: &Range<usize>| {
            schedules
                .iter()
                .any(|schedule| schedule.start <= division.start && division.end <= schedule.end)
        };
        facts.schedule_step_counts = divided_names
            .into_iter()
            .filter(|(_, division)| in_schedule(division))
            .collect();
        facts.divisions.retain(|division| !in_schedule(division));
        for list in [
            &mut facts.shards,
            &mut facts.divisions,
            &mut facts.scalings,
            &mut facts.shares,
        ] {
            list.sort_by_key(|range| range.start);
            list.dedup();
        }
        facts
    }

    pub fn splits(&self) -> bool {
        !self.shards.is_empty() || !self.divisions.is_empty() || !self.shares.is_empty()
    }
}

/// A shard of `ds.take(n)` with n of ten or fewer (`for batch in
/// ds.take(1).shard(...)`): a look at the first batches, which splits no
/// work the optimizer does.
fn shards_a_peek(shard: &ast::ExprCall) -> bool {
    matches!(shard.func.as_ref(), Expr::Attribute(attribute)
        if matches!(attribute.value.as_ref(), Expr::Call(inner) if crate::analysis::walk::is_peek_take(inner)))
}

/// `[hvd.rank():...:hvd.size()]`: every N-th item from the worker's rank.
pub fn is_share_by_rank(
    program: &Program,
    scope: &crate::analysis::training::Scope,
    slice: &Expr,
) -> bool {
    let Expr::Slice(slice) = slice else {
        return false;
    };
    let (Some(lower), Some(step)) = (&slice.lower, &slice.step) else {
        return false;
    };
    let mut from_rank = false;
    crate::analysis::walk::walk_expression(lower, &mut |inner| {
        from_rank |= program.calls_horovod_function(scope, inner, "rank");
    });
    from_rank && program.calls_horovod_function(scope, step, "size")
}

/// The value of an integer literal, or of a name every assignment of its
/// scope (or of the module) gives the same literal.
fn known_count(
    program: &Program,
    scope: &crate::analysis::training::Scope,
    expr: &Expr,
) -> Option<i64> {
    let literal = |expr: &Expr| match expr {
        Expr::Constant(constant) => match &constant.value {
            ast::Constant::Int(value) => i64::try_from(value).ok(),
            _ => None,
        },
        _ => None,
    };
    if let Some(value) = literal(expr) {
        return Some(value);
    }
    let Expr::Name(name) = expr else {
        return None;
    };
    let values: Vec<Option<i64>> = [scope, &program.module.scopes[0]]
        .iter()
        .flat_map(|scope| scope.facts.assignments.iter())
        .filter(|assignment| assignment.name == name.id.as_str())
        .map(|assignment| literal(assignment.value))
        .collect();
    let first = (*values.first()?)?;
    values
        .iter()
        .all(|value| *value == Some(first))
        .then_some(first)
}

pub fn is_shard_by_workers(
    program: &Program,
    scope: &crate::analysis::training::Scope,
    call: &ast::ExprCall,
) -> bool {
    matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "shard")
        && call
            .args
            .iter()
            .any(|argument| program.calls_horovod_function(scope, argument, "size"))
}

/// Module-level functions that give a worker its equal shard of a dataset:
/// one parameter, returned as `dataset.shard(hvd.size(), ...)` cut by
/// `.take(n // hvd.size())`, a count every worker shares.
pub fn equal_shard_helpers<'p>(program: &Program<'p>) -> Vec<&'p str> {
    program
        .module
        .scopes
        .iter()
        .filter(|scope| {
            scope.function.is_some() && scope.parent == Some(0) && scope.parameters.len() == 1
        })
        .filter(|scope| {
            scope.facts.statements.iter().any(|statement| {
                let rustpython_parser::ast::Stmt::Return(ast::StmtReturn {
                    value: Some(value),
                    ..
                }) = statement
                else {
                    return false;
                };
                let chain = method_chain(value);
                chain.windows(2).any(|pair| {
                    let [(_, shard), ("take", take)] = pair else {
                        return false;
                    };
                    is_shard_by_workers(program, scope, shard)
                        && take.args.first().is_some_and(|count| {
                            matches!(count, Expr::BinOp(division) if division.op == Operator::FloorDiv
                                && program.calls_horovod_function(scope, &division.right, "size"))
                        })
                }) && matches!(chain_root(value), Expr::Name(name) if name.id.as_str() == scope.parameters[0])
            })
        })
        .map(|scope| scope.name())
        .collect()
}

/// `.apply(helper)` of one of `helpers`.
pub fn applies_helper(call: &ast::ExprCall, helpers: &[&str]) -> bool {
    matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == "apply")
        && matches!(call.args.as_slice(), [Expr::Name(name)] if helpers.contains(&name.id.as_str()))
}

/// The module functions that take a worker's share of rows
/// (`rank_rows(rows)`: one parameter, sliced by rank and worker count).
pub fn row_share_helpers<'p>(program: &Program<'p>) -> Vec<&'p str> {
    program
        .module
        .scopes
        .iter()
        .filter(|scope| {
            scope.function.is_some() && scope.parent == Some(0) && scope.parameters.len() == 1
        })
        .filter(|scope| {
            let mut shares = false;
            for statement in &scope.facts.statements {
                crate::analysis::walk::walk_statement_expressions(statement, &mut |expr| {
                    shares |= matches!(expr, Expr::Subscript(subscript)
                        if matches!(subscript.value.as_ref(), Expr::Name(name) if name.id.as_str() == scope.parameters[0])
                            && is_share_by_rank(program, scope, &subscript.slice));
                });
            }
            shares
        })
        .map(|scope| scope.name())
        .collect()
}

/// Whether the module, or a package module it imports, takes an optimizer
/// step: a program that takes none trains nothing (analysis, inference).
pub fn takes_optimizer_steps(program: &Program) -> bool {
    let steps = |module: &crate::analysis::training::ModuleAnalysis| {
        crate::analysis::training::calls_any_of(&module.scopes, OPTIMIZER_STEP_METHODS)
    };
    steps(program.module)
        || program.analysis.modules.iter().any(|module| {
            !std::ptr::eq(module, program.module)
                && program.module.module.imports.contains(&module.module.name)
                && steps(module)
        })
}

/// Names holding a train op: assigned from `minimize` or `apply_gradients`,
/// in any scope of the module (`train_op`, `self.train_op`), or from a call
/// of a function of the module that returns one, alone or at its place in a
/// tuple (`q, loss, self.train = self._build_net()`).
pub fn train_op_names(program: &Program) -> Vec<String> {
    let scopes = &program.module.scopes;
    let mut names: Vec<String> = scopes
        .iter()
        .flat_map(|scope| scope.facts.assignments.iter())
        .filter(|assignment| {
            let mut steps = false;
            crate::analysis::walk::walk_expression(assignment.value, &mut |inner| {
                if let Expr::Call(call) = inner
                    && let Expr::Attribute(attribute) = call.func.as_ref()
                {
                    steps |= matches!(attribute.attr.as_str(), "minimize" | "apply_gradients");
                }
            });
            steps
        })
        .map(|assignment| assignment.name.clone())
        .collect();
    crate::analysis::train_ops::follow_returns(program.module, &mut names);
    names
}

/// Whether a fetched name is one of the train ops: the name itself, or,
/// for a train op a class keeps on `self` (`self.update_model = ...`), the
/// same attribute of an instance (`net.update_model`).
pub fn is_train_op(fetched: &str, train_ops: &[String]) -> bool {
    train_ops.iter().any(|train_op| {
        fetched == train_op
            || train_op.strip_prefix("self.").is_some_and(|attribute| {
                fetched
                    .strip_suffix(attribute)
                    .is_some_and(|receiver| receiver.ends_with('.'))
            })
    })
}
