//! Where Horovod is initialised in a module that prepares its files before
//! it imports TensorFlow: a notebook whose first cells fetch and unpack the
//! data (`!wget URL`, `zipfile.ZipFile(path).extractall(folder)`) and whose
//! `import tensorflow` comes cells later. After that import no rank could be
//! tested where the files are written, so each worker would write them at
//! once; the generated imports and `hvd.init()` go right above the first
//! such line instead, where the passes that guard writes find a rank.
//!
//! Not when the code between sets environment variables (TensorFlow reads
//! them when it is imported, and the early import would come first).

use rustpython_parser::ast::Stmt;

use crate::analysis::catalogue::Effect;
use crate::analysis::effects;
use crate::analysis::training::effect_summaries::happens_on_storage;
use crate::analysis::training::{Analysis, ModuleAnalysis};
use crate::python::parse::span;
use crate::rules::importer::{
    after_docstring_and_future, first_ml_import, is_import_statement, last_import,
};

/// The offset of the line the init block goes above, when the module
/// writes files at its top level before its first TensorFlow or Keras
/// import; `None` keeps the block after that import.
pub fn before_early_preparation(analysis: &Analysis, module: &ModuleAnalysis) -> Option<usize> {
    if module.module.binds_horovod() {
        return None;
    }
    let body = &module.module.body;
    let text = module.module.source.text.as_str();
    let ml_import = span(first_ml_import(body)?).start;
    // The block goes after the run of imports holding that import: files
    // prepared between those imports (a shell line in the run) count too.
    let imports_end = span(init_anchor(body)?).end.max(ml_import);
    let earliest = [
        first_writing_shell_line(analysis, module, imports_end),
        first_writing_statement(analysis, module, body, imports_end),
    ]
    .into_iter()
    .flatten()
    .min()?;
    let line_start = text[..earliest]
        .rfind('\n')
        .map_or(0, |newline| newline + 1);
    let at_top = line_start == earliest;
    let after_header = line_start >= after_docstring_and_future(body, text);
    let magics_set_environment = module
        .module
        .source
        .notebook
        .as_ref()
        .is_some_and(|notebook| {
            notebook
                .magic_lines_in(line_start..ml_import.max(line_start))
                .iter()
                .any(|line| line.starts_with("%env") || line.starts_with("%set_env"))
        });
    // Once TensorFlow is imported, what the environment holds is read.
    let sets_environment =
        magics_set_environment || sets_environment(&text[line_start..ml_import.max(line_start)]);
    (at_top && after_header && !sets_environment).then_some(line_start)
}

/// The first notebook shell line at the top of a cell that writes files.
fn first_writing_shell_line(
    analysis: &Analysis,
    module: &ModuleAnalysis,
    before: usize,
) -> Option<usize> {
    module
        .module
        .source
        .shell_commands
        .iter()
        .filter(|shell| shell.range.start < before && shell.stands_alone)
        .filter(|shell| analysis.catalogue.shell_line_writes(&shell.command))
        .map(|shell| shell.range.start)
        .min()
}

/// The first top-level statement whose calls write, create, remove or
/// download files (the catalogue's knowledge, as called).
fn first_writing_statement(
    analysis: &Analysis,
    module: &ModuleAnalysis,
    body: &[Stmt],
    before: usize,
) -> Option<usize> {
    let writes = |site: &&crate::analysis::index::CallSite| {
        effects::of_call(analysis, module, 0, site.call)
            .entry()
            .is_some_and(|entry| {
                entry.effects.iter().any(|effect| {
                    matches!(
                        effect,
                        Effect::Writes { .. }
                            | Effect::Downloads { .. }
                            | Effect::CreatesDirectory { .. }
                            | Effect::Removes { .. }
                    ) && happens_on_storage(effect, site.call)
                })
            })
    };
    let first = module.scopes[0]
        .facts
        .calls
        .iter()
        .filter(|site| span(site.call).end <= before)
        .filter(writes)
        .map(|site| span(site.call).start)
        .min()?;
    body.iter()
        .map(span)
        .find(|statement| statement.start <= first && first < statement.end)
        .map(|statement| statement.start)
}

/// Whether code may set an environment variable (`os.environ[...] = ...`,
/// `os.environ.update`, `os.putenv`).
fn sets_environment(code: &str) -> bool {
    ["environ", "putenv"].iter().any(|word| code.contains(word))
}

/// Where the init block goes: after the run of top-level imports that holds
/// the tensorflow import, else the standalone keras import (code further
/// down, even above a late import, may use `hvd`); the last top-level import
/// when neither is imported at the top level.
pub fn init_anchor(body: &[Stmt]) -> Option<&Stmt> {
    let first = first_ml_import(body).map(|found| {
        body.iter()
            .position(|stmt| std::ptr::eq(stmt, found))
            .expect("found in the body")
    });
    let Some(first) = first else {
        return last_import(body);
    };
    let run = body[first..]
        .iter()
        .take_while(|stmt| is_import_statement(stmt))
        .count();
    body.get(first + run - 1)
}
