//! What every rule reads and nobody changes while a module is rewritten: the
//! analysis, the module, its text and style, the names generated code uses,
//! and the questions about Horovod code already there.

use std::ops::Range;

use rustpython_parser::ast::{self, Expr, Operator, Stmt, UnaryOp};

use super::RuleOptions;
use super::patterns::Pattern;
use super::stylist::Stylist;
use crate::analysis::index::{AbstractValue, Assignment};
use crate::analysis::library::{self, LibraryClass};
use crate::analysis::training::{Analysis, ModuleAnalysis, Scope, TrainingPattern, callee_name};
use crate::analysis::walk::{for_each_statement, walk_expression};
use crate::python::parse::span;

/// The read-only context of one module's rewrite.
pub struct RewriteContext<'a> {
    pub analysis: &'a Analysis<'a>,
    pub module: &'a ModuleAnalysis<'a>,
    pub text: &'a str,
    pub pattern: TrainingPattern,
    /// The plug-in that rewrites this module's pattern.
    pub plugin: &'static dyn Pattern,
    /// The module's name for the Horovod module (`hvd` unless taken).
    pub hvd: String,
    /// The module's name for tensorflow (`tf`, `tensorflow`, ...).
    pub tf: String,
    /// The module's name for standalone Keras when the module trains with
    /// Keras 2's own (`horovod.keras`).
    pub keras: Option<String>,
    /// The module's name for `horovod.tensorflow` when a Keras module needs it
    /// too (the tape of a model's own `train_step`).
    pub horovod_tensorflow: Option<String>,
    pub stylist: Stylist,
    /// Whether the module imported Horovod before the rewrite.
    pub had_horovod: bool,
    pub options: RuleOptions,
}

impl<'a> RewriteContext<'a> {
    pub fn source(&self, range: Range<usize>) -> &'a str {
        &self.text[range]
    }

    pub fn expression_text(&self, expr: &Expr) -> &'a str {
        self.source(span(expr))
    }

    /// A string literal in the file's quote style.
    pub fn string(&self, value: &str) -> String {
        self.stylist.string(value)
    }

    /// `hvd.size()`, `hvd.rank()` ... in the module's alias.
    pub fn horovod_call(&self, function: &str) -> String {
        format!("{}.{function}()", self.hvd)
    }

    pub fn rank_zero_test(&self) -> String {
        format!("{}.rank() == 0", self.hvd)
    }

    /// `expr * hvd.size()`, parenthesised where precedence needs it.
    pub fn scaled(&self, expr: &Expr) -> String {
        format!(
            "{} * {}",
            self.operand_text(expr),
            self.horovod_call("size")
        )
    }

    /// A step count divided among workers, `max(1, n // hvd.size())`: at
    /// least one step, even a literal `3` on eight workers (`steps_per_epoch=0`
    /// stops Keras with empty logs, and `validation_steps=0` silently drops
    /// validation).
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

    /// The canonical name a callee resolves to in a scope.
    pub fn callee(&self, scope: &Scope, func: &Expr) -> Option<String> {
        callee_name(self.analysis.package, self.module.module, scope, func)
    }

    /// Whether the module's code names `identifier` (a name, an attribute,
    /// or a function's name), as code and never in a comment or a string:
    /// facts about the program come from its syntax, not its text.
    pub fn mentions(&self, identifier: &str) -> bool {
        self.mentions_any(&|name| name == identifier)
    }

    /// Whether the module's code calls a method `method` (`ds.shard(...)`).
    /// The statements of the module that call a Horovod barrier named
    /// `name` (`hvd.allreduce(..., name="save_barrier")`, as an earlier run
    /// of the rewrite wrote it), by their ranges.
    pub fn named_barriers(&self, name: &str) -> Vec<std::ops::Range<usize>> {
        let mut found = Vec::new();
        for scope in &self.module.scopes {
            for site in &scope.facts.calls {
                let named =
                    crate::analysis::walk::keyword(site.call, "name").is_some_and(|keyword| {
                        matches!(&keyword.value, Expr::Constant(constant)
                        if matches!(&constant.value, ast::Constant::Str(text) if text == name))
                    });
                if named {
                    found.push(crate::python::parse::span(site.statement));
                }
            }
        }
        found
    }

    pub fn calls_method(&self, method: &str) -> bool {
        let mut found = false;
        crate::analysis::walk::for_each_statement(
            &self.module.module.body,
            true,
            &mut |statement| {
                crate::analysis::walk::walk_statement_expressions(statement, &mut |expression| {
                    found |= matches!(expression, Expr::Call(call)
                    if matches!(call.func.as_ref(), Expr::Attribute(attribute) if attribute.attr.as_str() == method));
                });
            },
        );
        found
    }

    /// Whether a name, attribute or function name of the module's code
    /// passes `test`.
    pub fn mentions_any(&self, test: &dyn Fn(&str) -> bool) -> bool {
        let mut found = false;
        crate::analysis::walk::for_each_statement(
            &self.module.module.body,
            true,
            &mut |statement| {
                if found {
                    return;
                }
                if let Stmt::FunctionDef(function) = statement {
                    found |= test(function.name.as_str());
                }
                crate::analysis::walk::walk_statement_expressions(statement, &mut |expression| {
                    found |= match expression {
                        Expr::Name(name) => test(name.id.as_str()),
                        Expr::Attribute(attribute) => test(attribute.attr.as_str()),
                        _ => false,
                    };
                });
            },
        );
        found
    }

    /// The index of one of the module's scopes (the analysis's questions
    /// about calls are asked by index).
    pub fn scope_index(&self, scope: &Scope) -> Option<usize> {
        self.module
            .scopes
            .iter()
            .position(|candidate| std::ptr::eq(candidate, scope))
    }

    /// What a call of `scope` does, by the catalogue of library behaviour.
    pub fn call_effects(
        &self,
        scope: &Scope,
        call: &ast::ExprCall,
    ) -> crate::analysis::effects::Known<'a> {
        let Some(index) = self.scope_index(scope) else {
            return crate::analysis::effects::Known::Nothing;
        };
        crate::analysis::effects::of_call(self.analysis, self.module, index, call)
    }

    /// The catalogue's effects of a call, when it has any.
    pub fn catalogued_effects(
        &self,
        scope: &Scope,
        call: &ast::ExprCall,
    ) -> &'a [crate::analysis::catalogue::Effect] {
        self.call_effects(scope, call)
            .entry()
            .map_or(&[], |entry| entry.effects.as_slice())
    }

    pub fn library_class_of_call(
        &self,
        scope: &Scope,
        call: &ast::ExprCall,
    ) -> Option<LibraryClass> {
        library::library_class(&self.callee(scope, &call.func)?)
    }

    /// Whether statements (and the blocks in them) call Horovod anywhere.
    pub fn calls_horovod_in(&self, body: &[rustpython_parser::ast::Stmt]) -> bool {
        body.iter().any(|stmt| {
            let mut found = false;
            crate::analysis::walk::walk_statement_expressions(stmt, &mut |expr| {
                walk_expression(expr, &mut |inner| {
                    if let Expr::Call(call) = inner
                        && let Expr::Attribute(attribute) = call.func.as_ref()
                    {
                        found |= self.is_horovod_expression(&attribute.value);
                    }
                });
            });
            found
                || crate::analysis::walk::nested_bodies(stmt)
                    .into_iter()
                    .any(|nested| self.calls_horovod_in(nested))
        })
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

    /// What a name holds where `expr` is (its innermost scope, else the module
    /// level), by the last assignment before it; `None` for other expressions.
    pub fn value_kind_of(&self, expr: &Expr) -> Option<AbstractValue> {
        self.assignment_of(expr)
            .map(|assignment| assignment.value_kind)
    }

    /// The assignment that gave a name the value it has where `expr` is.
    pub fn assignment_of(&self, expr: &Expr) -> Option<&'a Assignment<'a>> {
        let Expr::Name(name) = expr else {
            return None;
        };
        let offset = span(expr).start;
        let innermost = &self.module.scopes[self.module.scope_at(offset)];
        [innermost, &self.module.scopes[0]]
            .into_iter()
            .find_map(|scope| {
                scope.facts.assignments.iter().rev().find(|assignment| {
                    assignment.name == name.id.as_str() && span(assignment.statement).start < offset
                })
            })
    }

    /// Whether an expression already involves the number of workers
    /// (`hvd.size()`, `hvd.local_size()`, or a name holding a value scaled by
    /// them, `lr_scaler = hvd.local_size()`): it is not scaled or divided again.
    pub fn uses_worker_count(&self, expr: &Expr) -> bool {
        if self.calls_horovod(expr, "size") || self.calls_horovod(expr, "local_size") {
            return true;
        }
        let mut found = false;
        walk_expression(expr, &mut |inner| {
            found |= self.value_kind_of(inner) == Some(AbstractValue::ScaledByWorkers);
        });
        found
    }

    /// Whether an expression is already different per rank (`hvd.rank()` in
    /// it, or a name holding `x if hvd.rank() == 0 else y`).
    pub fn is_rank_dependent(&self, expr: &Expr) -> bool {
        self.calls_horovod(expr, "rank")
            || self.calls_horovod(expr, "local_rank")
            || self.value_kind_of(expr) == Some(AbstractValue::RankDependent)
    }

    /// Whether a name holds something Horovod made (a hook, a callback).
    pub fn holds_horovod_object(&self, expr: &Expr) -> bool {
        self.value_kind_of(expr) == Some(AbstractValue::Horovod)
    }

    /// Whether a statement already sits under `if hvd.rank() == 0:`.
    pub fn is_guarded(&self, target: &Stmt) -> bool {
        self.module.index.is_under_rank_zero(&span(target))
    }

    pub fn is_horovod_expression(&self, expr: &Expr) -> bool {
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
        if let Expr::BoolOp(all) = test
            && all.op == ast::BoolOp::And
        {
            return all.values.iter().any(|value| self.is_rank_zero_test(value));
        }
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
}

pub fn is_string(expr: &Expr, value: &str) -> bool {
    matches!(expr, Expr::Constant(ast::ExprConstant { value: ast::Constant::Str(text), .. }) if text == value)
}

pub fn is_integer(expr: &Expr, value: u32) -> bool {
    matches!(expr, Expr::Constant(ast::ExprConstant { value: ast::Constant::Int(number), .. }) if *number == value.into())
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
        | Expr::JoinedStr(_)
        | Expr::Constant(_) => true,
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
