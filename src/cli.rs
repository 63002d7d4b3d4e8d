//! The command line: parse arguments, run the engine, print, write files,
//! choose the exit code (0 nothing to do, 1 findings or changes, 2 errors).

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};

use crate::diagnostics::Severity;
use crate::engine::{self, RunOutcome, RunRequest};
use crate::report::{self, text::Detail};
use crate::workspace::discover::{discover_python_files, relative_path};

#[derive(Debug, Parser)]
#[command(
    name = "distribute",
    version,
    about = "Rewrite single-GPU TensorFlow training code to train on many GPUs with Horovod, reporting every assumption the rewrite relies on."
)]
pub struct Arguments {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Report training modules that need a rewrite, and the diagnostics.
    Check(Options),
    /// Show the rewrite as a unified diff, with the diagnostics.
    Diff(Options),
    /// Write the rewrite to the files (atomically).
    Fix(Options),
}

#[derive(Debug, clap::Args)]
pub struct Options {
    /// Files or directories to report on (default: the whole package root).
    pub paths: Vec<PathBuf>,
    /// Package root: the whole package is analysed, even when only some files are reported.
    /// Default: the git top level of the first path (or of the current directory), else that directory.
    #[arg(long)]
    pub root: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Exit 1 when a diagnostic of at least this severity exists.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FailOn {
    Error,
    Warning,
    Info,
    /// Never fail because of diagnostics.
    Never,
}

impl FailOn {
    fn threshold(self) -> Option<Severity> {
        match self {
            FailOn::Error => Some(Severity::Error),
            FailOn::Warning => Some(Severity::Warning),
            FailOn::Info => Some(Severity::Info),
            FailOn::Never => None,
        }
    }
}

/// Runs a command and returns the process exit code.
pub fn run(arguments: Arguments) -> Result<i32> {
    let (options, detail) = match &arguments.command {
        Command::Check(options) => (options, Detail::Check),
        Command::Diff(options) => (options, Detail::Diff),
        Command::Fix(options) => (options, Detail::Fix),
    };
    let request = build_request(options)?;
    let outcome = engine::with_large_stack(move || engine::run(&request));
    let mut write_failures = Vec::new();
    if detail == Detail::Fix {
        for module in &outcome.modules {
            if let Some(rewritten) = &module.rewritten
                && let Err(error) = write_atomically(&module.path, rewritten)
            {
                write_failures.push(format!("{}: error: {error:#}", module.relative_path));
            }
        }
    }
    let rendered = match options.format {
        Format::Text => report::text::render(&outcome, detail),
        Format::Json => report::json::render(&outcome),
    };
    print_ignoring_broken_pipe(&rendered);
    for failure in &write_failures {
        eprintln!("{failure}");
    }
    Ok(exit_code(
        &outcome,
        detail,
        options.fail_on,
        !write_failures.is_empty(),
    ))
}

fn exit_code(outcome: &RunOutcome, detail: Detail, fail_on: FailOn, write_failed: bool) -> i32 {
    let file_errors = outcome.problems.iter().any(|problem| {
        matches!(
            problem.kind,
            crate::analysis::package::FileProblemKind::Error(_)
        )
    });
    let rewrite_errors = outcome
        .modules
        .iter()
        .any(|module| module.rewrite_error.is_some());
    if file_errors || rewrite_errors || write_failed {
        return 2;
    }
    let changes = outcome.modules.iter().any(|module| module.changed());
    let failing_diagnostics = fail_on
        .threshold()
        .is_some_and(|threshold| engine::has_diagnostic_at_least(outcome, threshold));
    match detail {
        Detail::Fix if changes => 1,
        Detail::Check | Detail::Diff if changes => 1,
        _ if failing_diagnostics => 1,
        _ => 0,
    }
}

fn print_ignoring_broken_pipe(text: &str) {
    let stdout = std::io::stdout();
    let mut handle = stdout.lock();
    let _ = handle.write_all(text.as_bytes());
    let _ = handle.flush();
}

/// The git top level above `start`, found by walking up to a `.git` entry.
fn git_top_level(start: &Path) -> Option<PathBuf> {
    let start = start.canonicalize().ok()?;
    start
        .ancestors()
        .find(|directory| directory.join(".git").exists())
        .map(Path::to_path_buf)
}

fn build_request(options: &Options) -> Result<RunRequest> {
    let current = std::env::current_dir().context("reading the current directory")?;
    for path in &options.paths {
        if !path.exists() {
            bail!("{}: no such file or directory", path.display());
        }
    }
    let root = match &options.root {
        Some(root) => root.clone(),
        None => {
            let start = options.paths.first().map_or(current.clone(), |path| {
                let absolute = current.join(path);
                if absolute.is_dir() {
                    absolute
                } else {
                    absolute.parent().map_or(current.clone(), Path::to_path_buf)
                }
            });
            git_top_level(&start).unwrap_or(start)
        }
    };
    let root = root
        .canonicalize()
        .with_context(|| format!("{}: package root not found", root.display()))?;
    if !root.is_dir() {
        bail!("{}: the package root must be a directory", root.display());
    }
    let scope = if options.paths.is_empty() {
        None
    } else {
        let mut scope = HashSet::new();
        for path in &options.paths {
            let absolute = current
                .join(path)
                .canonicalize()
                .with_context(|| format!("{}: cannot resolve", path.display()))?;
            let Some(relative) = relative_path(&root, &absolute) else {
                bail!(
                    "{}: outside the package root {}",
                    path.display(),
                    root.display()
                );
            };
            if absolute.is_dir() {
                let (files, _) = discover_python_files(&absolute);
                for file in files {
                    scope.insert(if relative.is_empty() {
                        file
                    } else {
                        format!("{relative}/{file}")
                    });
                }
            } else {
                scope.insert(relative);
            }
        }
        Some(scope)
    };
    Ok(RunRequest { root, scope })
}

/// Writes through a temporary file in the same directory, then renames it
/// over the original, so that a reader never sees a half-written file.
fn write_atomically(path: &Path, contents: &str) -> Result<()> {
    let directory = path.parent().context("file has no parent directory")?;
    let permissions = std::fs::metadata(path)
        .map(|metadata| metadata.permissions())
        .ok();
    let mut temporary =
        tempfile::NamedTempFile::new_in(directory).context("creating a temporary file")?;
    temporary
        .write_all(contents.as_bytes())
        .context("writing the temporary file")?;
    temporary
        .as_file()
        .sync_all()
        .context("flushing the temporary file")?;
    if let Some(permissions) = permissions {
        temporary
            .as_file()
            .set_permissions(permissions)
            .context("copying permissions")?;
    }
    temporary
        .persist(path)
        .map_err(|error| error.error)
        .context("replacing the file")?;
    Ok(())
}
