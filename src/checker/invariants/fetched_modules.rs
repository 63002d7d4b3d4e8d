//! Part of invariant 7 (rank 0 writes, DST307): functions of a module the
//! notebook fetches while it runs (`!wget .../helper_functions.py`, then
//! `from helper_functions import unzip_data`). The module is no file of
//! the package and no library the catalogue describes, so what its
//! functions write (an archive unpacked, TensorBoard logs) cannot be seen,
//! and each call runs on every rank: not proven.

use std::collections::HashSet;

use crate::checker::{Decision, Program, Verdict};

use super::rank_zero_writes::RANK_ZERO_WRITES;

/// One decision per function of a fetched module that the program calls
/// on every rank.
pub(super) fn calls_into_fetched_modules(program: &Program) -> Vec<Decision> {
    let source = &program.module.module.source;
    let fetched: Vec<String> = source
        .shell_commands
        .iter()
        .flat_map(|shell| shell.command.split_whitespace())
        .filter_map(|word| {
            let file = word
                .rsplit('/')
                .next()?
                .trim_matches(|c| c == '"' || c == '\'');
            let module = file.strip_suffix(".py")?;
            let is_identifier = !module.is_empty()
                && module
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_');
            is_identifier.then(|| module.to_string())
        })
        .filter(|module| {
            !program
                .analysis
                .modules
                .iter()
                .any(|known| known.module.name == *module)
        })
        .collect();
    if fetched.is_empty() {
        return Vec::new();
    }
    let mut named = HashSet::new();
    let mut decisions = Vec::new();
    for call in program.calls() {
        let Some(callee) = call.callee.as_deref() else {
            continue;
        };
        let Some((module, function)) = callee.split_once('.') else {
            continue;
        };
        if !fetched.iter().any(|fetched| fetched == module)
            || program.runs_on_rank_zero_only(call.scope, call.site)
            || !named.insert(callee.to_string())
        {
            continue;
        }
        let line = program.line(call.range().start);
        decisions.push(
            Decision::new(
                RANK_ZERO_WRITES,
                Verdict::Unknown,
                call.range(),
                format!("`{function}` at line {line} comes from `{module}`, a module the notebook fetches while it runs: the checker cannot see what it writes, and it runs on every rank"),
            )
            .with_suggestion(format!("add `{module}.py` to the repository so that its functions are analysed, or run the call under `if hvd.rank() == 0:` when it writes")),
        );
    }
    decisions
}
