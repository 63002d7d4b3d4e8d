//! A notebook's shell line that writes files (`!wget URL`, `!unzip data.zip`,
//! `!echo ... > rows.csv`) would run on every worker at once, each writing
//! the same files: rank 0 now runs it alone, and a barrier right after it
//! holds the others until it has finished, so that every later line finds
//! the files there. IPython runs an indented `!` line inside a block, so the
//! line keeps its shell syntax.
//!
//! Only lines at the top level of a cell after Horovod is initialised are
//! guarded (before that there is no rank to test); a line assigning the
//! command's output (`files = !ls`) is read by every rank and stays as is.
//! Which programs write is the catalogue's knowledge (`shell:`).
//!
//! Input: the notebook's shell lines and the catalogue. Output: per line,
//! the guard and the barrier, with DST142.

use std::ops::Range;

use crate::diagnostics::{Code, Diagnostic, Severity};
use crate::python::edit::Edit;
use crate::python::notebook::ShellCommand;
use crate::rules::rewrite::ModuleRewrite;

pub const SHELL_LINE_ON_RANK_ZERO: Code = Code::new(
    "DST142",
    "shell-line-on-rank-zero",
    Severity::Info,
    "A notebook's shell line that writes files runs on rank 0 only, and the other workers wait for it before going on.",
);

pub const CODES: &[Code] = &[SHELL_LINE_ON_RANK_ZERO];

pub fn run(rewrite: &mut ModuleRewrite) {
    if rewrite.had_horovod {
        return;
    }
    let Some(initialised_at) = rewrite.horovod_initialised_at else {
        return;
    };
    let source = &rewrite.module.module.source;
    if source.notebook.is_none() {
        return;
    }
    let catalogue = &rewrite.analysis.catalogue;
    let lines: Vec<ShellCommand> = source
        .shell_commands
        .iter()
        .filter(|shell| shell.stands_alone && catalogue.shell_line_writes(&shell.command))
        .filter(|shell| {
            let start = shell.range.start;
            start >= initialised_at
                && rewrite.tensorflow_bound_at(start)
                && guardable_line(rewrite.text, &shell.range)
        })
        .cloned()
        .collect();
    if lines.is_empty() {
        return;
    }
    let Some(barrier) = rewrite
        .plugin
        .download_barrier(&rewrite.context, "shell_barrier")
    else {
        return;
    };
    // Consecutive lines of a cell share one guard and one barrier (a guard
    // never spans cells: each cell must parse alone).
    let notebook = rewrite.module.module.source.notebook.clone();
    let cell = |offset: usize| {
        notebook
            .as_ref()
            .and_then(|notebook| notebook.cell_number_at(offset))
    };
    let mut runs: Vec<Vec<ShellCommand>> = Vec::new();
    for line in lines {
        match runs.last_mut() {
            Some(run)
                if last_line_end(rewrite.text, &run[run.len() - 1]) + 1 == line.range.start
                    && cell(run[0].range.start) == cell(line.range.start) =>
            {
                run.push(line)
            }
            _ => runs.push(vec![line]),
        }
    }
    for run in runs {
        // Right below the init block, the guard must land after it: it goes
        // with the core's edits, which keep the order they were made in.
        let previous_owner = (run[0].range.start == initialised_at)
            .then(|| std::mem::replace(&mut rewrite.sink.owner, crate::rules::SINGLE_GPU_TRAINING));
        on_rank_zero_then_barrier(rewrite, &run, &barrier);
        if let Some(owner) = previous_owner {
            rewrite.sink.owner = owner;
        }
    }
}

/// Where a shell line ends, with the lines it continues onto with `\\`.
fn last_line_end(text: &str, line: &ShellCommand) -> usize {
    let mut end = line.range.end;
    for _ in 0..line.continued_lines {
        let next_start = (end + 1).min(text.len());
        end = text[next_start..]
            .find('\n')
            .map_or(text.len(), |newline| next_start + newline);
    }
    end
}

/// A `!` line at the top level of its cell, its placeholder long enough to
/// become `pass` once indented.
fn guardable_line(text: &str, range: &Range<usize>) -> bool {
    let line = &text[range.clone()];
    let written_at_top = range.start == 0 || text[..range.start].ends_with('\n');
    written_at_top && line.len() >= 4 && line.starts_with('#')
}

fn on_rank_zero_then_barrier(
    rewrite: &mut ModuleRewrite,
    run: &[ShellCommand],
    barrier: &[String],
) {
    let unit = rewrite.stylist.indent_unit.clone();
    let text = rewrite.text;
    // One insertion before the first line: a cell's first offset belongs
    // to that cell, and the guard must land in it with the indentation.
    let guard = format!("if {}:\n{unit}", rewrite.rank_zero_test());
    rewrite.edit(Edit::insertion(run[0].range.start, guard));
    let mut end = 0;
    for line in run {
        // Every physical line of the command goes in the block.
        end = last_line_end(text, line);
        let mut line_start = line.range.start;
        while line_start < end {
            if line_start != run[0].range.start {
                rewrite.edit(Edit::insertion(line_start, unit.clone()));
            }
            line_start = text[line_start..end]
                .find('\n')
                .map_or(end, |newline| line_start + newline + 1);
        }
        // A command continued on other lines is quoted by its first words.
        let command = line.command.trim_end_matches('\\').trim_end();
        let mut quoted: String = command.chars().take(60).collect();
        if quoted.len() < command.len() || line.continued_lines > 0 {
            quoted.push_str(" …");
        }
        rewrite.diagnose(Diagnostic::new(
            SHELL_LINE_ON_RANK_ZERO,
            line.range.clone(),
            format!("`!{quoted}` writes files in a shell, which every worker would do at once: rank 0 now runs it alone and the others wait for it"),
        ));
    }
    let mut lines = barrier.to_vec();
    if let Some(last) = lines.last_mut() {
        last.push_str("  # rank 0's shell lines have finished; the others find their files");
    }
    rewrite.edit(Edit::insertion(end, format!("\n{}", lines.join("\n"))));
}
