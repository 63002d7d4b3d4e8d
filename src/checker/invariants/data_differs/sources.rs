//! Where the data of a divided loop comes from, for invariant 6: episodes
//! each worker plays in its own environment, a generator of the program
//! that yields its batches in a fixed order, and seeds the program lets go
//! of (`np.random.seed(None)`) once the draws they fix are made.

use rustpython_parser::ast::Expr;

use crate::analysis::walk::{environment_step_in, loop_header, walk_statement_expressions};
use crate::checker::Program;
use crate::checker::program::ScopedCall;
use crate::python::parse::span;

/// An environment step (`env.step(action)`) in a loop whose steps are
/// divided: the data each worker trains on is what its own environment gives.
pub(super) fn environment_stepped_in(
    program: &Program,
    divisions: &[std::ops::Range<usize>],
) -> Option<std::ops::Range<usize>> {
    let mut found = None;
    for scope in &program.module.scopes {
        for statement in scope.facts.statements.iter().copied() {
            let divided = loop_header(statement).is_some_and(|header| {
                divisions
                    .iter()
                    .any(|division| header.start <= division.start && division.end <= header.end)
            });
            if !divided || found.is_some() {
                continue;
            }
            found = environment_step_in(std::slice::from_ref(statement)).map(span);
        }
    }
    found
}

/// A Keras fit over a generator of the package that yields its batches in a
/// fixed order (`fit_generator(sequencer(data, ...))`, the generator slicing
/// arrays batch by batch and drawing nothing at random): the fit's range and
/// the generator's name.
pub(super) fn fixed_order_generator(
    program: &Program,
    calls: &[ScopedCall],
) -> Option<(std::ops::Range<usize>, String)> {
    let analysis = program.analysis;
    calls.iter().find_map(|fit| {
        if !matches!(fit.method(), Some("fit" | "fit_generator")) {
            return None;
        }
        let fed = fit.site.call.args.first()?;
        let made = match fed {
            Expr::Call(call) => call,
            Expr::Name(name) => {
                let (value, _) =
                    program.last_binding(fit.scope, name.id.as_str(), fit.range().start)?;
                let Expr::Call(call) = value else {
                    return None;
                };
                call
            }
            _ => return None,
        };
        let function = crate::analysis::effects::resolved_callee(
            analysis,
            program.module,
            fit.scope_index,
            &made.func,
        )?;
        let (module, scope_index) = analysis.scope_of_function(&function)?;
        let scope = &module.scopes[scope_index];
        let mut yields = false;
        crate::analysis::walk::for_each_statement(scope.body, false, &mut |statement| {
            walk_statement_expressions(statement, &mut |expr| {
                yields |= matches!(expr, Expr::Yield(_) | Expr::YieldFrom(_));
            });
        });
        // Anything that may draw at random, or that the checker cannot
        // follow (another function of the package), counts as a draw.
        let draws = scope.facts.calls.iter().any(|site| {
            let named = match site.call.func.as_ref() {
                Expr::Attribute(attribute) => attribute.attr.as_str(),
                Expr::Name(name) => name.id.as_str(),
                _ => "",
            };
            let draws_by_name = matches!(named, "shuffle" | "permutation" | "choice" | "sample")
                || named.contains("random");
            draws_by_name
                || crate::analysis::effects::resolved_callee(
                    analysis,
                    module,
                    scope_index,
                    &site.call.func,
                )
                .is_some_and(|called| {
                    called.contains("random")
                        || crate::analysis::library::draws_at_random(
                            &crate::analysis::library::canonical_name(&called),
                        )
                        || analysis.scope_of_function(&called).is_some()
                })
        });
        (yields && !draws).then(|| {
            (
                fit.range(),
                program.text[span(made.func.as_ref())].to_string(),
            )
        })
    })
}

/// A seed the same scope lets go of later, outside loops (`np.random.seed(
/// None)` after the shuffle it fixed): the draws after it are each
/// process's own.
pub(super) fn released_later(calls: &[ScopedCall], seed: &ScopedCall) -> bool {
    calls.iter().any(|later| {
        later.scope_index == seed.scope_index
            && later.site.enclosing_loops.is_empty()
            && later.range().start > seed.range().end
            && later.callee.is_some()
            && later.callee == seed.callee
            && releases(later)
    })
}

/// A seed of `None`: the generator draws from the process's entropy.
pub(super) fn releases(seed: &ScopedCall) -> bool {
    matches!(seed.site.call.args.first(), Some(Expr::Constant(constant)) if constant.value.is_none())
}
