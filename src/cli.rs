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
use crate::workspace::config::{Config, OutputMode};
use crate::workspace::discover::{discover_python_files, relative_path};
use crate::workspace::git;

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
    /// Write the rewrite (in place, beside, or to a directory, as configured; atomically).
    Fix(Options),
    /// Act on a pull request from a GitHub Actions job (the Action runs this): review
    /// suggestions and a summary comment, or a pull request with the rewrite.
    Github(GithubArguments),
    /// Print what the analyses find in the package, as JSON.
    Analyze(AnalyzeArguments),
}

#[derive(Debug, clap::Args)]
pub struct AnalyzeArguments {
    #[command(subcommand)]
    pub command: AnalyzeCommand,
}

#[derive(Debug, Subcommand)]
pub enum AnalyzeCommand {
    /// The call graph: each module and function mapped to the functions it may call.
    Calls(CallsOptions),
}

#[derive(Debug, clap::Args)]
pub struct CallsOptions {
    /// Files or directories whose modules and functions are printed (default: all).
    pub paths: Vec<PathBuf>,
    /// Package root, whose files are all analysed. Default: as for `check`.
    #[arg(long)]
    pub root: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct GithubArguments {
    /// What to do on a `pull_request` event (`/distribute` commands choose their own).
    #[arg(long, value_enum, default_value_t = crate::github::Mode::Review)]
    pub mode: crate::github::Mode,
    /// Package root (default: GITHUB_WORKSPACE, else the current directory).
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Configuration file (default: .distribute.yml at the package root, if present).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Exit 1 when a diagnostic of at least this severity exists (default: never; the
    /// bot reports on the pull request instead of failing the job).
    #[arg(long, value_enum, default_value_t = FailOn::Never)]
    pub fail_on: FailOn,
    /// Neither read nor write the result cache (`.distribute_cache/` at the package root).
    #[arg(long)]
    pub no_cache: bool,
}

#[derive(Debug, clap::Args)]
pub struct Options {
    /// Files or directories to report on (default: the whole package root). Modules that
    /// import them are reported too.
    pub paths: Vec<PathBuf>,
    /// Package root: the whole package is analysed, even when only some files are reported.
    /// Default: the git top level of the first path (or of the current directory), else that directory.
    #[arg(long)]
    pub root: Option<PathBuf>,
    /// Report on the Python files and notebooks staged in git (the index against HEAD), and the modules importing them.
    #[arg(long, conflicts_with = "since")]
    pub staged: bool,
    /// Report on the Python files and notebooks changed since the merge-base of REV and HEAD (working tree included).
    #[arg(long, value_name = "REV")]
    pub since: Option<String>,
    /// Configuration file (default: .distribute.yml at the package root, if present).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Exit 1 when a diagnostic of at least this severity exists.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
    /// Neither read nor write the result cache (`.distribute_cache/` at the package root,
    /// or DISTRIBUTE_CACHE_DIR).
    #[arg(long)]
    pub no_cache: bool,
    /// Also apply and show unsafe rewrites: those with an obligation the checker could not
    /// show (each is a warning). Default: the configuration's `unsafe-fixes`, else off.
    #[arg(long)]
    pub unsafe_fixes: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    Text,
    Json,
    /// SARIF 2.1.0, for GitHub code scanning.
    Sarif,
    /// GitHub Actions workflow commands (`::warning file=...`).
    Github,
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
        Command::Github(github) => {
            return crate::github::run(&crate::github::GithubOptions {
                mode: github.mode,
                root: github.root.clone(),
                config: github.config.clone(),
                fail_on: github.fail_on.threshold(),
                use_cache: !github.no_cache,
            });
        }
        Command::Analyze(analyze) => match &analyze.command {
            AnalyzeCommand::Calls(options) => return print_call_graph(options),
        },
    };
    let request = build_request(options)?;
    let root = request.root.clone();
    let config = request.config.clone();
    let unsafe_fixes = options.unsafe_fixes || config.unsafe_fixes;
    let mut outcome = engine::with_large_stack(move || engine::run(&request));
    outcome.hold_back_unsafe(unsafe_fixes);
    // Pending: a rewrite whose target (the file itself, or its configured output) differs.
    let pending = outcome
        .modules
        .iter()
        .filter_map(|module| {
            module
                .rewritten
                .as_ref()
                .map(|rewritten| (module, rewritten))
        })
        .filter(|(module, rewritten)| match config.output {
            // The target is the file as this run read it.
            OutputMode::InPlace => module.original != **rewritten,
            _ => std::fs::read_to_string(root.join(config.output_path(&module.relative_path)))
                .map_or(true, |existing| existing != **rewritten),
        })
        .count();
    let mut write_failures = Vec::new();
    if detail == Detail::Fix {
        write_failures = write_outputs(&root, &config, &outcome);
    }
    let rendered = match options.format {
        Format::Text => report::text::render(&outcome, detail),
        Format::Json => report::json::render(&outcome),
        Format::Sarif => report::sarif::render(&outcome, crate::registry::all_codes()),
        Format::Github => report::github::render(&outcome),
    };
    print_ignoring_broken_pipe(&rendered);
    for failure in &write_failures {
        eprintln!("{failure}");
    }
    Ok(exit_code(
        &outcome,
        pending > 0,
        options.fail_on,
        !write_failures.is_empty(),
    ))
}

/// 0 nothing to do; 1 a rewrite pending (`check`, `diff`) or written (`fix`, as
/// formatters do), or a diagnostic at `--fail-on`; 2 a file or write error.
fn exit_code(outcome: &RunOutcome, pending: bool, fail_on: FailOn, write_failed: bool) -> i32 {
    let file_errors = outcome
        .problems
        .iter()
        .any(|problem| problem.severity() == Severity::Error);
    let rewrite_errors = outcome
        .modules
        .iter()
        .any(|module| module.rewrite_error.is_some());
    if file_errors || rewrite_errors || write_failed {
        return 2;
    }
    let failing_diagnostics = fail_on
        .threshold()
        .is_some_and(|threshold| engine::has_diagnostic_at_least(outcome, threshold));
    if pending || failing_diagnostics { 1 } else { 0 }
}

fn print_ignoring_broken_pipe(text: &str) {
    let stdout = std::io::stdout();
    let mut handle = stdout.lock();
    let _ = handle.write_all(text.as_bytes());
    let _ = handle.flush();
}

fn build_request(options: &Options) -> Result<RunRequest> {
    let current = std::env::current_dir().context("reading the current directory")?;
    for path in &options.paths {
        if !path.exists() {
            bail!("{}: no such file or directory", path.display());
        }
    }
    let root = package_root(options.root.as_deref(), &options.paths, &current)?;
    let config = Config::load(
        &root,
        options.config.as_deref(),
        crate::registry::all_codes(),
    )
    .map_err(anyhow::Error::new)?;
    let path_scope = if options.paths.is_empty() {
        None
    } else {
        python_files_of_paths(&options.paths, &current, &root)?
    };
    let scope = narrow_to_git_changes(options, &root, path_scope)?;
    Ok(RunRequest {
        root,
        scope,
        expand_scope_to_dependents: true,
        config,
        use_cache: !options.no_cache,
        codes: crate::registry::all_codes(),
    })
}

/// `--root`, or the git top level of the first path (or of the current
/// directory), else that directory; canonical, and a directory.
fn package_root(root: Option<&Path>, paths: &[PathBuf], current: &Path) -> Result<PathBuf> {
    let root = match root {
        Some(root) => root.to_path_buf(),
        None => {
            let start = paths.first().map_or(current.to_path_buf(), |path| {
                let absolute = current.join(path);
                if absolute.is_dir() {
                    absolute
                } else {
                    absolute
                        .parent()
                        .map_or(current.to_path_buf(), Path::to_path_buf)
                }
            });
            git::top_level(&start).unwrap_or(start)
        }
    };
    let root = root
        .canonicalize()
        .with_context(|| format!("{}: package root not found", root.display()))?;
    if !root.is_dir() {
        bail!("{}: the package root must be a directory", root.display());
    }
    Ok(root)
}

/// `analyze calls`: the call graph as JSON on stdout, files that could not
/// be read or parsed on stderr (exit 2; the other files are still analysed).
fn print_call_graph(options: &CallsOptions) -> Result<i32> {
    use crate::analysis::call_graph::{CallGraph, load_package};
    let current = std::env::current_dir().context("reading the current directory")?;
    for path in &options.paths {
        if !path.exists() {
            bail!("{}: no such file or directory", path.display());
        }
    }
    let root = package_root(options.root.as_deref(), &options.paths, &current)?;
    let (files, mut problems) = discover_python_files(&root);
    let package = load_package(&root, &files);
    problems.extend(package.problems.iter().cloned());
    let mut graph = CallGraph::build(&package);
    if !options.paths.is_empty()
        && let Some(selected) = python_files_of_paths(&options.paths, &current, &root)?
    {
        let modules = package
            .modules
            .iter()
            .filter(|module| selected.contains(&module.source.relative_path))
            .map(|module| module.name.clone())
            .collect();
        graph = graph.restricted_to(&modules);
    }
    let json = serde_json::to_string_pretty(&graph.to_json())?;
    print_ignoring_broken_pipe(&format!("{json}\n"));
    for problem in &problems {
        let place = match problem.location() {
            Some(at) => format!("{}:{}:{}", problem.relative_path, at.line, at.column),
            None => problem.relative_path.clone(),
        };
        eprintln!(
            "{place}: {}: {}",
            problem.severity().name(),
            problem.message()
        );
    }
    let failed = problems
        .iter()
        .any(|problem| problem.severity() == Severity::Error);
    Ok(if failed { 2 } else { 0 })
}

/// The Python files the given paths name, relative to the root: each `.py`
/// file, and every Python file under each directory. `None` when a path is
/// the root itself: the whole package, as with no path (the run walks it; a
/// second walk here was a good part of a run that reads its results from
/// the cache).
fn python_files_of_paths(
    paths: &[PathBuf],
    current: &Path,
    root: &Path,
) -> Result<Option<HashSet<String>>> {
    let mut scope = HashSet::new();
    for path in paths {
        let absolute = current
            .join(path)
            .canonicalize()
            .with_context(|| format!("{}: cannot resolve", path.display()))?;
        let Some(relative) = relative_path(root, &absolute) else {
            bail!(
                "{}: outside the package root {}",
                path.display(),
                root.display()
            );
        };
        if absolute.is_dir() && relative.is_empty() {
            return Ok(None);
        }
        if absolute.is_dir() {
            let (files, _) = discover_python_files(&absolute);
            for file in files {
                scope.insert(if relative.is_empty() {
                    file
                } else {
                    format!("{relative}/{file}")
                });
            }
        } else if crate::workspace::discover::is_python_source(&absolute) {
            scope.insert(relative);
        }
    }
    Ok(Some(scope))
}

/// With `--staged` or `--since`, the changed Python files (among the given
/// paths, if any); otherwise the paths' scope as it is.
fn narrow_to_git_changes(
    options: &Options,
    root: &Path,
    path_scope: Option<HashSet<String>>,
) -> Result<Option<HashSet<String>>> {
    let selection = if options.staged {
        Some(git::Selection::Staged)
    } else {
        options.since.clone().map(git::Selection::Since)
    };
    let Some(selection) = selection else {
        return Ok(path_scope);
    };
    let changed: HashSet<String> = git::changed_python_files(root, &selection)?
        .into_iter()
        .collect();
    Ok(Some(match path_scope {
        Some(paths) => changed.intersection(&paths).cloned().collect(),
        None => changed,
    }))
}

/// Writes every verified rewrite where the configuration says; returns the
/// failures (the other files are still written). Unchanged targets are not rewritten.
fn write_outputs(root: &Path, config: &Config, outcome: &RunOutcome) -> Vec<String> {
    let mut failures = Vec::new();
    let write = |relative: &str, target: &Path, contents: &str| -> Option<String> {
        if std::fs::read_to_string(target).is_ok_and(|existing| existing == contents) {
            return None;
        }
        let result = match target.parent() {
            Some(parent) => std::fs::create_dir_all(parent)
                .map_err(anyhow::Error::new)
                .and_then(|_| write_atomically(target, contents)),
            None => write_atomically(target, contents),
        };
        result
            .err()
            .map(|error| format!("{relative}: error: writing {}: {error:#}", target.display()))
    };
    for module in &outcome.modules {
        if let Some(rewritten) = &module.rewritten {
            failures.extend(write(
                &module.relative_path,
                &root.join(config.output_path(&module.relative_path)),
                rewritten,
            ));
        }
    }
    // A mirrored package must run on its own: copy the modules that were not rewritten.
    if let OutputMode::Directory(_) = &config.output {
        let (files, _) = discover_python_files(root);
        for relative in files.iter().filter(|file| config.selects(file)) {
            if outcome
                .modules
                .iter()
                .any(|module| &module.relative_path == relative && module.rewritten.is_some())
            {
                continue;
            }
            match std::fs::read_to_string(root.join(relative)) {
                Ok(contents) => failures.extend(write(
                    relative,
                    &root.join(config.output_path(relative)),
                    &contents,
                )),
                Err(error) => failures.push(format!(
                    "{relative}: error: reading it for the output directory: {error}"
                )),
            }
        }
    }
    failures
}

/// Writes through a temporary file in the same directory, then renames it
/// over the target, so that a reader never sees a half-written file.
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
