//! End to end: the rewrites train under real Horovod with two workers.
//!
//! Each case in `tests/e2e/<case>/` is a small single-GPU training package (synthetic
//! data, a few dozen steps, weights from an unseeded initialiser). Its `train.py` writes
//! `result-<HOROVOD_RANK or "single">.json` into `$RESULT_DIR` holding a checksum of the
//! final trainable weights and the number of training steps the process ran; optionally
//! `first_batch`, a fingerprint of the first batch it trained on (the workers' must
//! differ: each trains on its own data), and `loops`, the iteration count of each loop
//! that is not training (prediction, plotting: each worker's must equal the single
//! process's, since only the training loop is split; a training loop that cannot be
//! split, one full batch per step, is listed there too), and `rate`, the learning rate
//! the first step applied, and `shared`, values the two workers must agree on (an order
//! each process would otherwise draw for itself, such as a vocabulary's). Its
//! `e2e.json` (harness metadata) holds `{"steps": N}` when the script has a step count
//! the rewrite must divide, else `{"steps": null}`, and optionally `"rate": "scaled"`
//! (each worker's rate is twice the single process's) or `"rate": "as_written"` (equal),
//! and `"unsafe_fixes": true` for a rewrite the checker cannot prove (it is applied with
//! `--unsafe-fixes`, and must still train right when the case's data meets what the
//! checker could not see).
//!
//! Per case: the package runs once as written, single-process (it must work and, when N
//! is set, run N steps); a fresh copy is rewritten with `distribute fix`; the copy runs
//! under `horovodrun -np 2 --gloo`. Both workers must exit 0 within the time limit (a
//! deadlock fails, it does not hang the suite), their checksums must agree, and each
//! must have run at most ceil(N/2) steps and at least N/2 - 1 (half the work, not less).
//!
//! A package whose entry point is `train.ipynb` instead runs its code cells in order as
//! one script, IPython lines (magics, shell escapes, help) left out, as Jupyter's
//! "Run All" would run them; with `"shell": true` in `e2e.json`, its `!command` lines
//! run in a shell where they stand.
//!
//! The Horovod environment (TensorFlow-CPU 2.12.1, Horovod 0.28.1 with Gloo) is created
//! by `scripts/setup-horovod` when missing: a few minutes, once. These tests are never
//! skipped unless `DISTRIBUTE_SKIP_HOROVOD=1` is set, which is for quick local loops
//! only; CI must not set it (and the tests fail when it is set together with `CI`).
//!
//! One training runs at a time (the cases share a static lock): the workers need the
//! machine's cores.

mod support;

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// A run longer than this is a deadlock or a hang: the run's processes are killed.
const TIME_LIMIT: Duration = Duration::from_secs(240);
/// Two checksums agree when |a - b| <= CHECKSUM_TOLERANCE (identical weights give
/// identical checksums; the tolerance only absorbs float summation order).
const CHECKSUM_TOLERANCE: f64 = 1e-3;
/// Two rates agree within this fraction: a schedule's float32 arithmetic
/// differs a little at another magnitude; a rate scaled or not differs by 2x.
const RATE_TOLERANCE: f64 = 1e-2;
const SKIP_VARIABLE: &str = "DISTRIBUTE_SKIP_HOROVOD";

static ONE_TRAINING_AT_A_TIME: Mutex<()> = Mutex::new(());
static ENVIRONMENT: OnceLock<Result<PathBuf, String>> = OnceLock::new();

macro_rules! e2e_cases {
    ($($case:ident),* $(,)?) => {
        const CASES: &[&str] = &[$(stringify!($case)),*];
        $(
            #[test]
            fn $case() {
                run_case(stringify!($case));
            }
        )*
    };
}

e2e_cases!(
    keras_optimizer_object,
    keras_model_named_like_its_factory,
    keras_windows_of_a_series_shuffled,
    keras_windows_under_a_global_seed,
    tf1_train_ops_returned_to_a_model,
    keras_notebook_data_before_tensorflow,
    keras_notebook_shell_download,
    tf1_rate_per_optimizer,
    tf1_batch_of_all_rows,
    tf1_gradients_clipped_by_global_norm,
    tf1_batch_seeded_per_call,
    tf1_epochs_of_a_while_walk,
    tf1_sessions_initialised_by_run,
    keras_update_as_episode_ends,
    keras_writer_callback_from_a_helper,
    tf1_models_in_a_list,
    tf1_nested_step_function,
    tf1_full_batch_with_summaries,
    tf1_object_cursor_per_row,
    tf1_initializer_global_run_in_function,
    tf1_model_init_op_attribute,
    keras_series_helper_two_fits,
    keras_archive_fetched_with_extract,
    keras_archive_unpacked_then_read,
    keras_class_builds_own_model,
    keras_loaded_splits_sharded,
    keras_notebook_reimport_export,
    keras_epoch_checkpoint_loaded_after,
    keras_image_generator_seeded,
    keras2_standalone_string_optimizer,
    keras_history_read_per_epoch,
    keras_directory_dataset_text_only_stream_adapted,
    keras_checkpoint_lists_bound_before_each_fit,
    keras_model_rebound_after_factory_fit,
    tf1_demo_session_then_training_sessions,
    keras_directory_dataset_adapted_and_named,
    tape_range_in_progress_bar,
    tape_split_picked_from_loaded_splits,
    keras_compile_and_fit_from_config_dicts,
    tape_picture_read_by_display_helper,
    tf1_model_class_train_method,
    keras_best_checkpoint_reloaded,
    keras_table_written_if_missing,
    keras_tensorflow_imported_late,
    tf1_modular_offset_cursor,
    tf1_batches_drawn_by_helper,
    tf1_global_cursor_left_whole,
    tape_loop_cursor_left_whole,
    tape_demo_gradient_beside_constant_start,
    keras_models_returned_in_a_tuple,
    keras_compiled_by_helper_other_module,
    keras_two_inputs_rows_shared,
    keras_data_copied_by_subprocess,
    tf1_batches_sliced_by_counter,
    tf1_policy_updates_once_per_episode,
    tf1_actor_critic_fixed_length_episodes,
    keras_split_seed_released,
    keras_helpers_re_exported_by_star,
    tape_manual_updates_on_batches,
    keras_one_cycle_horizon,
    tape_episode_stop_averaged,
    tape_trainer_attribute_models,
    tape_text_directory_seeded,
    tf1_unseeded_split,
    tf1_helper_fetches_and_builds_pipeline,
    tf1_session_run_in_helper,
    tf1_picture_without_data,
    tf1_iterator_over_arrays,
    keras_own_session_config,
    tape_examples_taken_then_shuffled,
    keras_records_written_then_read,
    tf1_last_step_save,
    tape_uneven_example_count,
    keras_cosine_decay_horizon,
    tf1_module_session_staged_optimize,
    tf1_end_of_data_iterator,
    tf1_batch_cursor_over_arrays,
    tf1_initializer_run_default_session,
    keras_fit_zip_of_two_sources,
    keras_fit_helper_builds_train_and_validation,
    tf1_restore_or_initialise,
    tape_losses_indexed_after_loop,
    keras_notebook_tensorflow_2_1,
    tape_encoder_then_head,
    tape_characters_from_a_set,
    tf1_zip_of_arrays,
    tape_epochs_over_shuffled_helper,
    keras_fit_windowed_series,
    keras_fit_list_files_unsafe,
    estimator_graph_seed,
    keras_fit_image_directory,
    keras_folders_filled_by_a_helper,
    keras_gan_own_compile,
    tf1_full_batch_chained_minimize,
    keras_full_batch_arrays,
    keras_mixed_split_fits,
    keras_split_in_helper_module,
    keras_fit_inputs_only,
    keras_cached_file_either_branch,
    keras_string_optimizer,
    keras_model_from_module,
    keras_callbacks,
    keras_checkpoints_reloaded_in_a_loop,
    tape_loop,
    tape_tf_function,
    tape_manual_variables,
    tf1_session,
    tf1_monitored_session,
    tf1_estimator,
    keras_absl_nesterov_decay,
    keras_trainer_class,
    keras_script_piecewise,
    keras_custom_train_step,
    tape_clip_summaries,
    tape_next_checkpoint_manager,
    tape_trainer_class,
    tape_epochs_max_steps,
    tf1_placeholder_model_class,
    tf1_monitored_feed_dict,
    tf1_train_and_evaluate,
    tf1_explicit_graph,
    tape_step_in_other_module,
    keras_fit_in_other_module,
    keras_generator_resume,
    keras_one_device_strategy,
    keras_notebook_pinned_gpu,
    keras_finetune_two_stages,
    keras_fit_kwargs_from_config,
    keras_save_and_reload,
    keras_graph_mode_v1,
    tape_function_returns_grads,
    tape_gan_two_optimizers,
    estimator_canned_regressor_v2,
    tf1_session_decay_while,
    tf1_epochs_range_from_one,
    tape_raw_variables_enumerate_take,
    tape_epoch_function_dataset,
    keras_arrays_seeded_epochs,
    tf1_summaries_file_writer,
    tf1_manual_gradients,
    keras_transformer_schedule,
    keras2_standalone_fit_generator,
    keras_notebook_cells,
    tape_notebook_magics,
    keras_colab_notebook,
    keras_train_on_batch_gan,
    keras_gan_models_passed_as_a_tuple,
    keras_one_epoch_of_arrays,
    keras_epochs_of_a_shuffled_split,
    tape_epochs_of_a_shuffled_split,
    keras_agent_returns_on_its_score,
    keras_epochs_of_augmented_arrays,
    keras_train_on_batch_agent,
    trainer_keras_factories,
    keras_mirrored_strategy,
    trainer_estimator_factories,
    keras_rate_scheduler,
    trainer_keras_model_to_estimator,
    tape_gan_writes_images,
    trainer_util_download,
    tape_mkdir_checkpoints,
    keras_savedmodel_mkdtemp,
);

#[test]
fn every_case_directory_has_a_test() {
    let mut on_disk: Vec<String> = std::fs::read_dir(repository_root().join("tests/e2e"))
        .unwrap()
        .map(|entry| entry.unwrap())
        .filter(|entry| entry.file_type().unwrap().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = CASES.iter().map(|case| case.to_string()).collect();
    listed.sort();
    assert_eq!(
        on_disk, listed,
        "tests/e2e/<case> directories and e2e_cases! differ"
    );
}

fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `HOROVOD_VENV` as `scripts/setup-horovod` reads it (relative to the repository root).
fn environment_directory() -> PathBuf {
    let venv = std::env::var_os("HOROVOD_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/horovod-venv"));
    repository_root().join(venv)
}

/// Runs `scripts/setup-horovod` once per test process (it returns at once when the
/// environment is ready, and serializes concurrent test binaries with a lock).
fn horovod_environment() -> PathBuf {
    ENVIRONMENT
        .get_or_init(|| {
            let output = Command::new(repository_root().join("scripts/setup-horovod"))
                .current_dir(repository_root())
                .stdin(Stdio::null())
                .output()
                .map_err(|error| format!("scripts/setup-horovod does not start: {error}"))?;
            if !output.status.success() {
                return Err(format!(
                    "scripts/setup-horovod failed ({}):\n{}{}",
                    output.status,
                    String::from_utf8_lossy(&output.stdout),
                    tail(&String::from_utf8_lossy(&output.stderr), 60)
                ));
            }
            Ok(environment_directory())
        })
        .clone()
        .unwrap_or_else(|error| panic!("{error}"))
}

fn skip_requested() -> bool {
    let skip = std::env::var(SKIP_VARIABLE).is_ok_and(|value| value == "1");
    if skip && std::env::var_os("CI").is_some() {
        panic!("{SKIP_VARIABLE}=1 is for quick local loops only: CI must run the Horovod tests");
    }
    skip
}

struct Run {
    /// None: killed at the time limit.
    status: Option<ExitStatus>,
    seconds: f64,
    stdout: String,
    stderr: String,
}

impl Run {
    fn succeeded(&self) -> bool {
        self.status.is_some_and(|status| status.success())
    }

    fn outcome(&self) -> String {
        match self.status {
            Some(status) => format!("{status} after {:.1} s", self.seconds),
            None => format!(
                "deadlock or hang: killed after the {} s time limit",
                TIME_LIMIT.as_secs()
            ),
        }
    }

    fn tails(&self) -> String {
        format!(
            "--- stdout (last lines) ---\n{}\n--- stderr (last lines) ---\n{}",
            tail(&self.stdout, 40),
            tail(&self.stderr, 80)
        )
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Runs `command` in its own process group with its output in `logs/<name>.*`; at the
/// time limit its whole process tree is killed (Horovod starts workers in sessions of
/// their own, so the tree is collected before anything is killed).
fn run_limited(mut command: Command, logs: &Path, name: &str) -> Run {
    let stdout_path = logs.join(format!("{name}.stdout"));
    let stderr_path = logs.join(format!("{name}.stderr"));
    command
        .stdin(Stdio::null())
        .stdout(File::create(&stdout_path).unwrap())
        .stderr(File::create(&stderr_path).unwrap())
        .process_group(0);
    let started = Instant::now();
    let mut child = command
        .spawn()
        .unwrap_or_else(|error| panic!("{name}: {command:?} does not start: {error}"));
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > TIME_LIMIT {
            kill_tree(child.id());
            child.wait().unwrap();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let seconds = started.elapsed().as_secs_f64();
    Run {
        status,
        seconds,
        stdout: String::from_utf8_lossy(&std::fs::read(&stdout_path).unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&std::fs::read(&stderr_path).unwrap()).into_owned(),
    }
}

/// The pids of `root`'s descendants, read from /proc.
fn descendants(root: u32) -> Vec<u32> {
    let mut parents: Vec<(u32, u32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        let Some(after_comm) = stat.rfind(')').map(|end| &stat[end + 1..]) else {
            continue;
        };
        if let Some(ppid) = after_comm
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
        {
            parents.push((pid, ppid));
        }
    }
    let mut found = vec![root];
    let mut index = 0;
    while index < found.len() {
        let parent = found[index];
        found.extend(
            parents
                .iter()
                .filter(|(_, ppid)| *ppid == parent)
                .map(|(pid, _)| *pid),
        );
        index += 1;
    }
    found.remove(0);
    found
}

fn kill_tree(root: u32) {
    let tree = descendants(root);
    let signal = |name: &str, targets: Vec<String>| {
        let _ = Command::new("kill")
            .arg(format!("-{name}"))
            .arg("--")
            .args(targets)
            .stderr(Stdio::null())
            .status();
    };
    let mut targets: Vec<String> = vec![format!("-{root}")];
    targets.extend(tree.iter().map(u32::to_string));
    signal("TERM", targets.clone());
    std::thread::sleep(Duration::from_secs(3));
    signal("KILL", targets);
}

#[derive(Debug)]
struct RunResult {
    checksum: f64,
    steps: u64,
    first_batch: Option<f64>,
    loops: Option<serde_json::Map<String, serde_json::Value>>,
    /// Values the workers must agree on (not the single run, which may
    /// differ from run to run: an order a process draws).
    shared: Option<serde_json::Map<String, serde_json::Value>>,
    rate: Option<f64>,
}

fn read_result(path: &Path) -> Result<RunResult, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("{} was not written: {error}", path.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|error| format!("{}: not JSON ({error}): {text}", path.display()))?;
    let checksum = value["checksum"]
        .as_f64()
        .ok_or_else(|| format!("{}: no numeric checksum: {text}", path.display()))?;
    let steps = value["steps"]
        .as_u64()
        .ok_or_else(|| format!("{}: no integer steps: {text}", path.display()))?;
    if !checksum.is_finite() {
        return Err(format!(
            "{}: checksum is not finite: {text}",
            path.display()
        ));
    }
    Ok(RunResult {
        checksum,
        steps,
        first_batch: value["first_batch"].as_f64(),
        loops: value["loops"].as_object().cloned(),
        shared: value["shared"].as_object().cloned(),
        rate: value["rate"].as_f64(),
    })
}

fn checksums_agree(a: f64, b: f64) -> bool {
    (a - b).abs() <= CHECKSUM_TOLERANCE
}

/// The command's environment: the venv first on PATH, unbuffered Python, no Horovod
/// variables inherited from the caller, TensorFlow's INFO logs off.
fn python_command(program: &Path, venv: &Path, directory: &Path, results: &Path) -> Command {
    let mut command = Command::new(program);
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![venv.join("bin")];
    paths.extend(std::env::split_paths(&path));
    command
        .current_dir(directory)
        .env("PATH", std::env::join_paths(paths).unwrap())
        .env("RESULT_DIR", results)
        .env("PYTHONUNBUFFERED", "1")
        .env("TF_CPP_MIN_LOG_LEVEL", "1")
        .env_remove("PYTHONPATH")
        .env_remove("VIRTUAL_ENV");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("HOROVOD_") {
            command.env_remove(key);
        }
    }
    command
}

/// How each worker's learning rate must relate to the single process's:
/// `Some(2.0)` scaled, `Some(1.0)` as written, `None` not checked.
fn expected_rate(case_directory: &Path) -> Option<f64> {
    let text = std::fs::read_to_string(case_directory.join("e2e.json")).unwrap();
    let metadata: serde_json::Value = serde_json::from_str(&text).unwrap();
    match metadata["rate"].as_str() {
        None => None,
        Some("scaled") => Some(2.0),
        Some("as_written") => Some(1.0),
        Some(other) => panic!("e2e.json: rate is \"scaled\" or \"as_written\", not {other:?}"),
    }
}

/// Whether e2e.json asks for a notebook's `!command` lines to run (`"shell": true`);
/// otherwise they are left out.
fn runs_shell(case_directory: &Path) -> bool {
    let text = std::fs::read_to_string(case_directory.join("e2e.json")).unwrap();
    let metadata: serde_json::Value = serde_json::from_str(&text).unwrap();
    metadata["shell"].as_bool().unwrap_or(false)
}

/// Whether e2e.json asks for `--unsafe-fixes`.
fn applies_unsafe_fixes(case_directory: &Path) -> bool {
    let text = std::fs::read_to_string(case_directory.join("e2e.json")).unwrap();
    let metadata: serde_json::Value = serde_json::from_str(&text).unwrap();
    metadata["unsafe_fixes"].as_bool().unwrap_or(false)
}

fn expected_steps(case_directory: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(case_directory.join("e2e.json")).unwrap();
    let metadata: serde_json::Value = serde_json::from_str(&text).unwrap();
    match &metadata["steps"] {
        serde_json::Value::Null => None,
        steps => Some(
            steps
                .as_u64()
                .expect("e2e.json: steps is an integer or null"),
        ),
    }
}

/// The script to run in a package: `train.py`, or for a notebook package
/// (no `train.py`, one notebook at the top) the code cells of the notebook
/// written out as one script beside it.
fn entry_script(package: &Path, runs_shell: bool) -> &'static str {
    if package.join("train.py").exists() {
        return "train.py";
    }
    let notebooks: Vec<PathBuf> = std::fs::read_dir(package)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "ipynb")
        })
        .collect();
    let [notebook] = notebooks.as_slice() else {
        panic!(
            "{}: no train.py and not exactly one notebook",
            package.display()
        );
    };
    let text = std::fs::read_to_string(notebook).unwrap();
    let notebook: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|error| panic!("{}: not JSON: {error}", package.display()));
    let mut script = String::new();
    for cell in notebook["cells"].as_array().expect("a cells list") {
        if cell["cell_type"] != "code" {
            continue;
        }
        let source = match &cell["source"] {
            serde_json::Value::Array(lines) => {
                lines.iter().filter_map(|line| line.as_str()).collect()
            }
            other => other.as_str().expect("source is text").to_string(),
        };
        script.push_str(&python_of_cell(&source, runs_shell));
        script.push('\n');
    }
    std::fs::write(package.join("notebook_cells.py"), script).unwrap();
    "notebook_cells.py"
}

/// A cell's Python: the body of a `%%time` or `%%capture` cell; nothing for
/// another cell magic; IPython lines (`%magic`, `!shell`, `name?`, `?name`, `x = !ls`)
/// replaced by `pass` at their indentation, except that with `runs_shell` a
/// `!command` line runs its command in a shell, as IPython would.
fn python_of_cell(source: &str, runs_shell: bool) -> String {
    let mut lines: Vec<&str> = source.lines().collect();
    if let Some(first) = lines.first().filter(|line| line.starts_with("%%")) {
        if !(first.starts_with("%%time") || first.starts_with("%%capture")) {
            return String::new();
        }
        lines.remove(0);
    }
    let is_ipython = |code: &str| {
        let assigned = code
            .split_once(" = ")
            .map_or("", |(_, value)| value.trim_start());
        let help_on = code.trim_end_matches('?');
        let is_help = help_on.len() < code.len()
            && !help_on.is_empty()
            && help_on
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.');
        code.starts_with('%')
            || code.starts_with('?')
            || (code.starts_with('!') && !code.starts_with("!="))
            || is_help
            || assigned.starts_with('%')
            || assigned.starts_with('!')
    };
    let mut python = String::new();
    for line in lines {
        let code = line.trim_start();
        let indentation = &line[..line.len() - code.len()];
        if runs_shell && code.starts_with('!') && !code.starts_with("!=") {
            let command = &code[1..];
            python.push_str(&format!(
                "{indentation}__import__(\"subprocess\").run({command:?}, shell=True, check=True)\n"
            ));
        } else if is_ipython(code) {
            python.push_str(&format!("{indentation}pass\n"));
        } else {
            python.push_str(line);
            python.push('\n');
        }
    }
    python
}

/// Copies the case's package (without the harness metadata) to `to`.
fn copy_package(case_directory: &Path, to: &Path) {
    support::copy_tree(case_directory, to);
    std::fs::remove_file(to.join("e2e.json")).unwrap();
}

fn run_case(case: &str) {
    if skip_requested() {
        eprintln!(
            "e2e {case}: skipped ({SKIP_VARIABLE}=1, for quick local loops only; CI never sets it)"
        );
        return;
    }
    let venv = horovod_environment();
    let _one_at_a_time: MutexGuard<()> = ONE_TRAINING_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());

    let case_directory = repository_root().join("tests/e2e").join(case);
    let steps = expected_steps(&case_directory);
    let scratch = Scratch::new(&case_directory);
    // 1. As written, one process.
    let (single_run, single_result) = run_as_written(case, &venv, &scratch, steps);
    // 2. The rewrite.
    let diff = rewrite_with_distribute(
        case,
        &scratch.distributed,
        applies_unsafe_fixes(&case_directory),
    );
    // 3. Two workers.
    let workers = run_two_workers(case, &venv, &scratch, diff);
    workers.print_summary(&single_run, &single_result, steps);
    workers.check(steps);
    workers.check_data_and_other_loops(&single_result);
    workers.check_rate(&single_result, expected_rate(&case_directory));
}

/// A case's scratch space. Two copies of the package: the single run leaves
/// checkpoints behind, from which a MonitoredTrainingSession or an Estimator
/// would resume.
struct Scratch {
    /// Removed when the case ends.
    _directory: tempfile::TempDir,
    single: PathBuf,
    distributed: PathBuf,
    logs: PathBuf,
    single_results: PathBuf,
    distributed_results: PathBuf,
    /// Whether a notebook's `!command` lines run (`runs_shell`).
    runs_shell: bool,
}

impl Scratch {
    fn new(case_directory: &Path) -> Scratch {
        let directory = tempfile::tempdir().unwrap();
        let scratch = Scratch {
            single: directory.path().join("single"),
            distributed: directory.path().join("distributed"),
            logs: directory.path().join("logs"),
            single_results: directory.path().join("results-single"),
            distributed_results: directory.path().join("results-distributed"),
            runs_shell: runs_shell(case_directory),
            _directory: directory,
        };
        for directory in [
            &scratch.logs,
            &scratch.single_results,
            &scratch.distributed_results,
        ] {
            std::fs::create_dir_all(directory).unwrap();
        }
        copy_package(case_directory, &scratch.single);
        copy_package(case_directory, &scratch.distributed);
        scratch
    }
}

/// Runs the package as written in one process: it must work and, when the
/// case sets a step count, run that many steps.
fn run_as_written(
    case: &str,
    venv: &Path,
    scratch: &Scratch,
    steps: Option<u64>,
) -> (Run, RunResult) {
    let python = venv.join("bin/python");
    let mut command = python_command(&python, venv, &scratch.single, &scratch.single_results);
    command.arg(entry_script(&scratch.single, scratch.runs_shell));
    let single_run = run_limited(command, &scratch.logs, "single");
    assert!(
        single_run.succeeded(),
        "e2e {case}: the script as written fails single-process: {}\n{}",
        single_run.outcome(),
        single_run.tails()
    );
    let single_result = read_result(&scratch.single_results.join("result-single.json"))
        .unwrap_or_else(|error| panic!("e2e {case}: single run: {error}\n{}", single_run.tails()));
    if let Some(n) = steps {
        assert_eq!(
            single_result.steps, n,
            "e2e {case}: the script as written ran {} steps, e2e.json says {n}",
            single_result.steps
        );
    }
    (single_run, single_result)
}

/// Rewrites the package in place with `distribute fix`, which must change
/// files; returns the rewrite as `distribute diff` showed it beforehand.
fn rewrite_with_distribute(case: &str, package: &Path, unsafe_fixes: bool) -> String {
    let tool = env!("CARGO_BIN_EXE_distribute");
    let unsafe_fixes: &[&str] = if unsafe_fixes {
        &["--unsafe-fixes"]
    } else {
        &[]
    };
    let diff = Command::new(tool)
        .args(["diff", "--root"])
        .arg(package)
        .args(unsafe_fixes)
        .output()
        .unwrap();
    let diff = format!(
        "{}{}",
        String::from_utf8_lossy(&diff.stdout),
        String::from_utf8_lossy(&diff.stderr)
    );
    let fix = Command::new(tool)
        .args(["fix", "--root"])
        .arg(package)
        .args(unsafe_fixes)
        .output()
        .unwrap();
    assert_eq!(
        fix.status.code(),
        Some(1),
        "e2e {case}: `distribute fix` should change files (exit 1):\n{}{}",
        String::from_utf8_lossy(&fix.stdout),
        String::from_utf8_lossy(&fix.stderr)
    );
    diff
}

/// The rewritten package's run under `horovodrun -np 2`, with what each rank reported.
struct TwoWorkerRun<'c> {
    case: &'c str,
    /// The rewrite, shown when a check fails.
    diff: String,
    run: Run,
    /// Per rank: its result file, or why it could not be read.
    results: Vec<Result<RunResult, String>>,
}

fn run_two_workers<'c>(
    case: &'c str,
    venv: &Path,
    scratch: &Scratch,
    diff: String,
) -> TwoWorkerRun<'c> {
    let python = venv.join("bin/python");
    let horovodrun = venv.join("bin/horovodrun");
    let mut command = python_command(
        &horovodrun,
        venv,
        &scratch.distributed,
        &scratch.distributed_results,
    );
    command
        .args(["-np", "2", "-H", "localhost:2", "--gloo"])
        .arg(&python)
        .arg(entry_script(&scratch.distributed, scratch.runs_shell));
    let run = run_limited(command, &scratch.logs, "two-workers");
    let results = (0..2)
        .map(|rank| {
            read_result(
                &scratch
                    .distributed_results
                    .join(format!("result-{rank}.json")),
            )
        })
        .collect();
    TwoWorkerRun {
        case,
        diff,
        run,
        results,
    }
}

impl TwoWorkerRun<'_> {
    /// A failure message with the rewrite and the run's output.
    fn context(&self, problem: String) -> String {
        format!(
            "e2e {}: {problem}\n=== the rewrite (distribute diff) ===\n{}\n=== two-worker run: {} ===\n{}",
            self.case,
            self.diff,
            self.run.outcome(),
            self.run.tails()
        )
    }

    /// One line per case: times, exit, steps and checksums of both runs.
    fn print_summary(&self, single_run: &Run, single_result: &RunResult, steps: Option<u64>) {
        let reported = |rank: usize, field: fn(&RunResult) -> String| {
            self.results[rank].as_ref().map_or("-".to_string(), field)
        };
        println!(
            "e2e {}: single {:.1} s, two workers {:.1} s ({}; steps: single {}, rank 0 {}, rank 1 {}{}; checksums {} / {})",
            self.case,
            single_run.seconds,
            self.run.seconds,
            if self.run.succeeded() {
                "exit 0".to_string()
            } else {
                self.run.outcome()
            },
            single_result.steps,
            reported(0, |result| result.steps.to_string()),
            reported(1, |result| result.steps.to_string()),
            steps.map_or(String::new(), |n| format!(", limit {}", n.div_ceil(2))),
            reported(0, |result| result.checksum.to_string()),
            reported(1, |result| result.checksum.to_string()),
        );
    }

    /// Both workers exit 0, agree on the final weights, and each ran at least
    /// one step and at most its half of the case's step count.
    fn check(&self, steps: Option<u64>) {
        assert!(
            self.run.succeeded(),
            "{}",
            self.context("the rewritten script fails with two workers".into())
        );
        let results: Vec<&RunResult> = self
            .results
            .iter()
            .map(|result| {
                result
                    .as_ref()
                    .unwrap_or_else(|error| panic!("{}", self.context(error.clone())))
            })
            .collect();
        assert!(
            checksums_agree(results[0].checksum, results[1].checksum),
            "{}",
            self.context(format!(
                "the workers' final weights disagree: checksum {} on rank 0, {} on rank 1",
                results[0].checksum, results[1].checksum
            ))
        );
        for (rank, result) in results.iter().enumerate() {
            assert!(
                result.steps > 0,
                "{}",
                self.context(format!("rank {rank} ran no training step"))
            );
            if let Some(n) = steps {
                assert!(
                    result.steps <= n.div_ceil(2),
                    "{}",
                    self.context(format!(
                        "work is not split: rank {rank} ran {} steps, at most ceil({n}/2) = {} expected",
                        result.steps,
                        n.div_ceil(2)
                    ))
                );
                assert!(
                    result.steps + 1 >= n / 2,
                    "{}",
                    self.context(format!(
                        "work is split more than once: rank {rank} ran {} steps, at least {n}/2 - 1 expected",
                        result.steps
                    ))
                );
            }
        }
    }
}

impl TwoWorkerRun<'_> {
    /// Each worker's first step applied the single process's learning rate
    /// times `factor` (two workers: 2 when scaled, 1 when left as written).
    fn check_rate(&self, single: &RunResult, factor: Option<f64>) {
        let Some(factor) = factor else {
            return;
        };
        let single_rate = single.rate.unwrap_or_else(|| {
            panic!(
                "{}",
                self.context("e2e.json checks the rate, but the single run reported none".into())
            )
        });
        for (rank, result) in self.results.iter().enumerate() {
            let rate = result.as_ref().ok().and_then(|result| result.rate);
            assert!(
                rate.is_some_and(|rate| (rate - single_rate * factor).abs() <= RATE_TOLERANCE * (single_rate * factor).abs()),
                "{}",
                self.context(format!(
                    "rank {rank} trained at rate {rate:?}; {} times the single process's {single_rate} expected",
                    factor
                ))
            );
        }
    }

    /// Each worker trained on its own data (the first batches differ), and
    /// the loops that are not training kept the single process's counts.
    fn check_data_and_other_loops(&self, single: &RunResult) {
        let results: Vec<&RunResult> = self
            .results
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .collect();
        if let [rank_0, rank_1] = results.as_slice() {
            if let (Some(first), Some(second)) = (rank_0.first_batch, rank_1.first_batch) {
                assert!(
                    (first - second).abs() > 1e-9,
                    "{}",
                    self.context(format!(
                        "both workers trained on the same first batch (fingerprint {first}): their data is not split"
                    ))
                );
            }
            assert_eq!(
                rank_0.shared,
                rank_1.shared,
                "{}",
                self.context("the workers disagree on a value they must share".to_string())
            );
            let Some(expected) = &single.loops else {
                return;
            };
            for (rank, result) in [rank_0, rank_1].iter().enumerate() {
                assert_eq!(
                    result.loops.as_ref(),
                    Some(expected),
                    "{}",
                    self.context(format!(
                        "rank {rank}: a loop that does not train changed its count"
                    ))
                );
            }
        }
    }
}
