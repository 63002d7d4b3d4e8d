//! Jupyter notebooks, committed as a user commits them (outputs, magics,
//! markdown), are reported, rewritten and written back like Python files:
//! positions name the cell, diffs show each changed cell, and the written
//! notebook is valid (nbformat's own validator) with only the sources of its
//! code cells changed.
//!
//! The training notebook is the end-to-end case `tests/e2e/keras_notebook_cells`
//! (a notebook importing its model from a module of the package), which
//! `tests/horovod_e2e.rs` trains under two Horovod workers.

mod support;
use support::copy_tree;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use git2::{IndexAddOption, Repository};
use serde_json::value::RawValue;

fn repository_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

struct Run {
    code: i32,
    stdout: String,
}

fn distribute(arguments: &[&str], directory: &Path) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_distribute"))
        .args(arguments)
        .current_dir(directory)
        .output()
        .expect("the binary runs");
    Run {
        code: output.status.code().expect("exited normally"),
        stdout: String::from_utf8(output.stdout).unwrap()
            + &String::from_utf8(output.stderr).unwrap(),
    }
}

/// A scratch copy of the training notebook's package (without the e2e metadata).
fn notebook_package() -> tempfile::TempDir {
    let scratch = tempfile::tempdir().unwrap();
    copy_tree(
        &repository_root().join("tests/e2e/keras_notebook_cells"),
        scratch.path(),
    );
    std::fs::remove_file(scratch.path().join("e2e.json")).unwrap();
    // Without the warm-up callback the scaled rate keeps its DST102 advice:
    // a diagnostic whose cell every format must carry.
    std::fs::write(scratch.path().join(".distribute.yml"), "warmup_epochs: 0\n").unwrap();
    scratch
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// Installs nbformat and the SARIF schema under target/test-tools (once).
fn setup_test_tools() {
    static TOOLS: OnceLock<()> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let status = Command::new(repository_root().join("scripts/setup-test-tools"))
            .current_dir(repository_root())
            .status()
            .expect("running scripts/setup-test-tools");
        assert!(status.success(), "scripts/setup-test-tools failed");
    });
}

/// Asserts that Jupyter's own validator (nbformat, installed by
/// scripts/setup-test-tools) accepts the notebook.
fn assert_valid_notebook(path: &Path) {
    setup_test_tools();
    let python = repository_root().join("target/test-tools/venv/bin/python");
    let output = Command::new(python)
        .args([
            "-c",
            "import sys, nbformat\nnotebook = nbformat.read(sys.argv[1], as_version=nbformat.NO_CONVERT)\nassert notebook.nbformat == 4\nnbformat.validate(notebook)",
        ])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "nbformat refuses {}:\n{}",
        path.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The notebook's text with the `source` of every code cell cut out: what a
/// rewrite must leave byte for byte.
fn without_code_sources(text: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Notebook<'a> {
        #[serde(borrow)]
        cells: Vec<&'a RawValue>,
    }
    #[derive(serde::Deserialize)]
    struct Cell<'a> {
        cell_type: String,
        #[serde(borrow)]
        source: &'a RawValue,
    }
    let notebook: Notebook = serde_json::from_str(text).unwrap();
    let mut skeleton = String::new();
    let mut cursor = 0;
    for raw in notebook.cells {
        let cell: Cell = serde_json::from_str(raw.get()).unwrap();
        if cell.cell_type == "code" {
            let start = cell.source.get().as_ptr() as usize - text.as_ptr() as usize;
            skeleton.push_str(&text[cursor..start]);
            skeleton.push_str("<code cell source>");
            cursor = start + cell.source.get().len();
        }
    }
    skeleton.push_str(&text[cursor..]);
    skeleton
}

#[test]
fn check_names_the_cell_of_each_diagnostic() {
    let package = notebook_package();
    let run = distribute(&["check", "train.ipynb"], package.path());
    assert_eq!(run.code, 1, "{}", run.stdout);
    insta::assert_snapshot!("notebook_check", run.stdout);
}

#[test]
fn diff_shows_each_changed_cell_as_its_own_hunk() {
    let package = notebook_package();
    let before = read(&package.path().join("train.ipynb"));
    let run = distribute(&["diff", "--root", "."], package.path());
    assert_eq!(run.code, 1, "{}", run.stdout);
    insta::assert_snapshot!("notebook_diff", run.stdout);
    assert_eq!(read(&package.path().join("train.ipynb")), before);
}

#[test]
fn fix_writes_a_valid_notebook_changing_only_code_cell_sources_once() {
    let package = notebook_package();
    let notebook = package.path().join("train.ipynb");
    let before = read(&notebook);
    let run = distribute(&["fix", "--root", "."], package.path());
    assert_eq!(run.code, 1, "fix changed files: {}", run.stdout);
    let after = read(&notebook);
    assert_ne!(after, before);
    assert_valid_notebook(&notebook);
    // Outputs, execution counts, ids, metadata, markdown, key order,
    // indentation and the final newline: all byte for byte.
    assert_eq!(without_code_sources(&after), without_code_sources(&before));
    // The IPython lines are still there, as they were written.
    for line in [
        "\"%matplotlib inline\\n\"",
        "\"!echo \\\"GPUs on this machine:\\\"\\n\"",
        "\"tf.keras.Model.fit?\"",
        "\"%%time\\n\"",
    ] {
        assert!(after.contains(line), "{line} is lost:\n{after}");
    }
    let again = distribute(&["fix", "--root", "."], package.path());
    assert_eq!(
        again.code, 0,
        "a second fix has nothing to do: {}",
        again.stdout
    );
    assert_eq!(read(&notebook), after);
}

#[test]
fn suffix_mode_writes_a_notebook_beside_the_original() {
    let package = notebook_package();
    std::fs::write(
        package.path().join(".distribute.yml"),
        "output:\n  mode: suffix\n",
    )
    .unwrap();
    let before = read(&package.path().join("train.ipynb"));
    let run = distribute(&["fix", "--root", "."], package.path());
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_eq!(read(&package.path().join("train.ipynb")), before);
    let written = package.path().join("train_distributed.ipynb");
    assert_valid_notebook(&written);
    assert!(read(&written).contains("hvd.DistributedOptimizer(optimizer)"));
    let check = distribute(&["check", "--root", "."], package.path());
    assert_eq!(check.code, 0, "the output is current: {}", check.stdout);
    assert!(
        !check.stdout.contains("train_distributed.ipynb"),
        "{}",
        check.stdout
    );
}

#[test]
fn every_format_carries_the_cell() {
    let package = notebook_package();
    let json = distribute(
        &["check", "--root", ".", "--format", "json"],
        package.path(),
    );
    let report: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let diagnostic = &report["modules"][0]["diagnostics"][0];
    assert_eq!(diagnostic["code"], "DST102");
    assert_eq!(
        (
            &diagnostic["cell"],
            &diagnostic["line"],
            &diagnostic["column"]
        ),
        (
            &serde_json::json!(6),
            &serde_json::json!(2),
            &serde_json::json!(13)
        )
    );
    assert!(
        report["modules"][0]["diff"]
            .as_str()
            .unwrap()
            .contains("@@ cell 6\n")
    );

    // Annotations on the notebook file go on the JSON line of the cell's line.
    let text = read(&package.path().join("train.ipynb"));
    let json_line = text[..text.find("\"optimizer = tf.keras").unwrap()]
        .matches('\n')
        .count()
        + 1;
    let sarif = distribute(
        &["check", "--root", ".", "--format", "sarif"],
        package.path(),
    );
    setup_test_tools();
    let sarif_file = package.path().join("report.sarif");
    std::fs::write(&sarif_file, &sarif.stdout).unwrap();
    let validation = Command::new(repository_root().join("scripts/validate-sarif"))
        .arg(&sarif_file)
        .output()
        .unwrap();
    assert!(
        validation.status.success(),
        "SARIF 2.1.0 schema: {}",
        String::from_utf8_lossy(&validation.stderr)
    );
    let sarif: serde_json::Value = serde_json::from_str(&sarif.stdout).unwrap();
    let result = &sarif["runs"][0]["results"][0];
    assert_eq!(result["properties"]["cell"], 6);
    assert_eq!(
        result["locations"][0]["physicalLocation"]["region"]["startLine"],
        json_line
    );
    assert!(
        result["message"]["text"]
            .as_str()
            .unwrap()
            .starts_with("cell 6, line 2, column 13: ")
    );
    let github = distribute(
        &["check", "--root", ".", "--format", "github"],
        package.path(),
    );
    assert!(
        github.stdout.contains(&format!(
            "::notice file=train.ipynb,line={json_line},endLine={json_line},title=DST102 learning-rate-without-warmup (cell 6%2C line 2%2C column 13)::"
        )),
        "{}",
        github.stdout
    );
}

#[test]
fn exclude_globs_apply_to_notebooks() {
    let package = notebook_package();
    std::fs::write(
        package.path().join(".distribute.yml"),
        "exclude: [\"**/*.ipynb\"]\n",
    )
    .unwrap();
    let run = distribute(&["check", "--root", "."], package.path());
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert_eq!(
        run.stdout,
        "0 training modules found, 0 to rewrite, 0 diagnostics, 0 file errors\n"
    );
}

#[test]
fn staged_notebooks_are_checked() {
    let package = notebook_package();
    let repository = Repository::init(package.path()).unwrap();
    let mut index = repository.index().unwrap();
    index.add_all(["*"], IndexAddOption::DEFAULT, None).unwrap();
    index.write().unwrap();
    let run = distribute(&["check", "--staged"], package.path());
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("train.ipynb: would be rewritten for Horovod (keras)"),
        "{}",
        run.stdout
    );
}

#[test]
fn bad_notebooks_are_errors_naming_the_cell_and_nothing_is_written() {
    let scratch = tempfile::tempdir().unwrap();
    let source = repository_root().join("tests/notebooks/bad_notebooks");
    copy_tree(&source, scratch.path());
    let run = distribute(&["fix", "--root", "."], scratch.path());
    assert_eq!(run.code, 2, "{}", run.stdout);
    insta::assert_snapshot!("bad_notebooks", run.stdout);
    for name in [
        "invalid_json.ipynb",
        "old_format.ipynb",
        "broken_cell.ipynb",
    ] {
        assert_eq!(
            read(&scratch.path().join(name)),
            read(&source.join(name)),
            "{name} was changed"
        );
    }
    // The other files are still rewritten.
    assert!(read(&scratch.path().join("train.py")).contains("hvd.init()"));
}

/// Prints in consecutive cells each get their own rank-0 guard: a guard
/// spanning cells would leave the second cell indented on its own, which
/// does not parse (the tool refused the whole notebook that way).
/// `train.ipynb` in `directory`, one code cell (without outputs) per source.
fn write_code_cells(directory: &Path, cells: &[&str]) -> PathBuf {
    let notebook = serde_json::json!({
        "cells": cells.iter().map(|source| serde_json::json!({
            "cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [], "source": source,
        })).collect::<Vec<_>>(),
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    });
    let path = directory.join("train.ipynb");
    std::fs::write(&path, serde_json::to_string_pretty(&notebook).unwrap()).unwrap();
    path
}

#[test]
fn rank_zero_guards_of_consecutive_cells_stay_in_their_cells() {
    let scratch = tempfile::tempdir().unwrap();
    let cells = [
        "import numpy as np\nimport tensorflow as tf",
        "x = np.random.rand(256, 4).astype('float32')\ny = x.sum(axis=1)",
        "print('data ready')",
        "print('shape', x.shape)",
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])\nmodel.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss='mse')\nmodel.fit(x, y, epochs=4, batch_size=32)",
    ];
    let path = write_code_cells(scratch.path(), &cells);
    let run = distribute(&["fix", "--root", "."], scratch.path());
    assert_eq!(run.code, 1, "fix rewrote the notebook: {}", run.stdout);
    assert_valid_notebook(&path);
    let written: serde_json::Value = serde_json::from_str(&read(&path)).unwrap();
    // A source written as one string keeps that layout.
    let source = |index: usize| {
        written["cells"][index]["source"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(source(2), "if hvd.rank() == 0:\n    print('data ready')");
    assert_eq!(
        source(3),
        "if hvd.rank() == 0:\n    print('shape', x.shape)"
    );
}

/// A standalone-Keras notebook whose cell showing `keras.__version__`
/// recorded `version` as its output.
fn keras_notebook_recording(version: &str) -> tempfile::TempDir {
    let shown = serde_json::json!([{
        "output_type": "execute_result", "execution_count": 1, "metadata": {},
        "data": {"text/plain": format!("'{version}'")},
    }]);
    keras_notebook_whose_import_recorded("import keras\nkeras.__version__", shown)
}

/// A standalone-Keras notebook whose first cell (`import_cell`) recorded
/// `outputs`.
fn keras_notebook_whose_import_recorded(
    import_cell: &str,
    outputs: serde_json::Value,
) -> tempfile::TempDir {
    let scratch = tempfile::tempdir().unwrap();
    let cell = |source: &str, outputs: serde_json::Value| {
        serde_json::json!({
            "cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": outputs, "source": source,
        })
    };
    let notebook = serde_json::json!({
        "cells": [
            cell(import_cell, outputs),
            cell("import numpy as np\nfrom keras import layers, models\nx = np.random.rand(256, 4)\ny = x.sum(axis=1)", serde_json::json!([])),
            cell("model = models.Sequential([layers.Dense(1, input_shape=(4,))])\nmodel.compile(optimizer='sgd', loss='mse')\nmodel.fit(x, y, epochs=4, batch_size=32)", serde_json::json!([])),
        ],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    });
    let path = scratch.path().join("train.ipynb");
    std::fs::write(&path, serde_json::to_string_pretty(&notebook).unwrap()).unwrap();
    scratch
}

#[test]
fn the_keras_a_notebook_recorded_decides_its_generation() {
    // Keras 2.12 recorded: Keras 2, rewritten with horovod.keras.
    let keras_2 = keras_notebook_recording("2.12.0");
    let run = distribute(&["diff", "--root", "."], keras_2.path());
    assert!(
        run.stdout
            .contains("recorded output of `keras.__version__` is 2.12"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("import horovod.keras as hvd"),
        "{}",
        run.stdout
    );
    // Keras 3 recorded: refused, saying why.
    let keras_3 = keras_notebook_recording("3.3.3");
    let run = distribute(&["diff", "--root", "."], keras_3.path());
    assert!(run.stdout.contains("DST103"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("recorded output of `keras.__version__` is 3.3"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("+import horovod"), "{}", run.stdout);
    // Keras 2.0 ran on TensorFlow 1, which may lack the `tf.config` the
    // rewrite pins GPUs with: the rewrite is held back as unsafe.
    let tensorflow_1 = keras_notebook_recording("2.0.8");
    let run = distribute(&["diff", "--root", "."], tensorflow_1.path());
    assert!(run.stdout.contains("DST309"), "{}", run.stdout);
    assert!(
        run.stdout.contains("runs on TensorFlow 1"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("+import horovod"), "{}", run.stdout);
}

#[test]
fn a_notebook_that_ran_multi_backend_keras_is_keras_2_and_held_back_as_unsafe() {
    // The import printed multi-backend Keras's banner (Keras 2.3 or
    // earlier): Keras 2, not Keras 3, but the TensorFlow under it may lack
    // the `tf.config` the rewrite pins GPUs with.
    let banner = serde_json::json!([{
        "output_type": "stream", "name": "stderr", "text": ["Using TensorFlow backend.\n"],
    }]);
    let scratch = keras_notebook_whose_import_recorded("import keras", banner);
    let run = distribute(&["diff", "--root", "."], scratch.path());
    assert!(run.stdout.contains("DST120"), "{}", run.stdout);
    assert!(!run.stdout.contains("DST103"), "{}", run.stdout);
    assert!(run.stdout.contains("DST309"), "{}", run.stdout);
    assert!(run.stdout.contains("multi-backend Keras"), "{}", run.stdout);
    assert!(!run.stdout.contains("+import horovod"), "{}", run.stdout);
    // The notes describe a rewrite that is not made unless asked for.
    assert!(
        run.stdout.contains(
            "trains on one GPU: the rewrite makes it train with Horovod (in the unsafe rewrite, applied only with `--unsafe-fixes`)"
        ),
        "{}",
        run.stdout
    );
    let unsafe_run = distribute(&["diff", "--unsafe-fixes", "--root", "."], scratch.path());
    assert!(
        unsafe_run
            .stdout
            .contains("hvd.DistributedOptimizer(keras.optimizers.SGD("),
        "the optimizer a standalone Keras 2 model is given comes from that Keras: {}",
        unsafe_run.stdout
    );
}

#[test]
fn a_shell_download_in_a_notebook_holds_the_rewrite_back_as_unsafe() {
    let scratch = tempfile::tempdir().unwrap();
    // TensorFlow reads the environment variable set between the shell lines
    // and its import: the init block cannot move above them.
    let cells = [
        "!wget -q https://example.com/data.zip\n!unzip -q data.zip\n!ls\n!pip list\n!pip install -q mylib",
        "import os\nos.environ['TF_CPP_MIN_LOG_LEVEL'] = '2'",
        "import numpy as np\nimport tensorflow as tf\nx = np.random.rand(256, 4).astype('float32')\ny = x.sum(axis=1)",
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])\nmodel.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss='mse')\nmodel.fit(x, y, epochs=4, batch_size=32)",
    ];
    write_code_cells(scratch.path(), &cells);
    let run = distribute(&["diff", "--root", "."], scratch.path());
    // The download and the unzip are named; `!ls` writes nothing.
    assert!(
        run.stdout.contains(
            "cell 1, line 1 runs `wget -q https://example.com/data.zip` in a shell on every worker"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("runs `unzip -q data.zip`"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("runs `ls`"), "{}", run.stdout);
    // Installing or listing packages writes nothing the job reads.
    assert!(!run.stdout.contains("runs `pip install"), "{}", run.stdout);
    assert!(!run.stdout.contains("runs `pip list`"), "{}", run.stdout);
    assert!(!run.stdout.contains("+import horovod"), "{}", run.stdout);
    let unsafe_run = distribute(&["diff", "--unsafe-fixes", "--root", "."], scratch.path());
    assert!(
        unsafe_run
            .stdout
            .contains("import horovod.tensorflow.keras as hvd"),
        "{}",
        unsafe_run.stdout
    );
}

/// Shell lines that write, after `hvd.init()`, run on rank 0 in one block per
/// cell (a command continued with `\` whole), followed by a barrier; the
/// rewrite is then safe, `fix` writes it, and a second `fix` changes nothing.
#[test]
fn shell_lines_after_the_init_run_on_rank_zero_then_everyone_waits() {
    let scratch = tempfile::tempdir().unwrap();
    let cells = [
        "import numpy as np\nimport tensorflow as tf",
        "!wget -q https://example.com/data.zip \\\n    -O data.zip\n!unzip -q data.zip\n!ls",
        "files = !ls\n!echo done > marker.txt",
        "x = np.random.rand(256, 4).astype('float32')\ny = x.sum(axis=1)\nmodel = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])\nmodel.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss='mse')\nmodel.fit(x, y, epochs=4, batch_size=32)",
    ];
    let path = write_code_cells(scratch.path(), &cells);
    let run = distribute(&["fix", "--root", "."], scratch.path());
    assert_eq!(run.code, 1, "fix rewrote the notebook: {}", run.stdout);
    assert!(!run.stdout.contains("DST307"), "{}", run.stdout);
    assert!(
        run.stdout.contains("DST142")
            && run
                .stdout
                .contains("`!wget -q https://example.com/data.zip …`"),
        "{}",
        run.stdout
    );
    assert_valid_notebook(&path);
    let written: serde_json::Value = serde_json::from_str(&read(&path)).unwrap();
    let source = |index: usize| {
        written["cells"][index]["source"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        source(1),
        "if hvd.rank() == 0:\n    !wget -q https://example.com/data.zip \\\n        -O data.zip\n    !unzip -q data.zip\nhvd.allreduce(0, name=\"shell_barrier\")  # rank 0's shell lines have finished; the others find their files\n!ls"
    );
    // The output every rank reads is left to every rank.
    assert!(
        source(2).starts_with(
            "files = !ls\nif hvd.rank() == 0:\n    !echo done > marker.txt\nhvd.allreduce("
        ),
        "{}",
        source(2)
    );
    let again = distribute(&["fix", "--root", "."], scratch.path());
    assert_eq!(
        again.code, 0,
        "a second fix changed the notebook: {}",
        again.stdout
    );
}

/// A shell line before Horovod is initialised has no rank to test: it stays
/// as written and holds the rewrite back (the init block cannot move above
/// it: an environment variable TensorFlow reads is set between).
#[test]
fn a_shell_line_before_the_init_is_left_and_named() {
    let scratch = tempfile::tempdir().unwrap();
    let cells = [
        "!wget -q https://example.com/data.zip",
        "%env TF_CPP_MIN_LOG_LEVEL=2",
        "import numpy as np\nimport tensorflow as tf\nx = np.random.rand(256, 4).astype('float32')\ny = x.sum(axis=1)",
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])\nmodel.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss='mse')\nmodel.fit(x, y, epochs=4, batch_size=32)",
    ];
    write_code_cells(scratch.path(), &cells);
    let run = distribute(&["diff", "--unsafe-fixes", "--root", "."], scratch.path());
    assert!(run.stdout.contains("DST307"), "{}", run.stdout);
    assert!(!run.stdout.contains("DST142"), "{}", run.stdout);
    assert!(
        !run.stdout.contains("+if hvd.rank() == 0:\n+    !wget"),
        "{}",
        run.stdout
    );
}

/// Files fetched in a shell and unpacked in Python before TensorFlow is
/// imported: the generated imports and `hvd.init()` go above the first of
/// them (at the end of the cell before), and each is then guarded.
#[test]
fn files_prepared_before_the_tensorflow_import_get_the_init_above_them() {
    let scratch = tempfile::tempdir().unwrap();
    let cells = [
        "import os\nimport zipfile",
        "!wget -q https://example.com/data.zip",
        "archive = zipfile.ZipFile('data.zip')\narchive.extractall('data')",
        "import numpy as np\nimport tensorflow as tf\nx = np.random.rand(256, 4).astype('float32')\ny = x.sum(axis=1)",
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])\nmodel.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss='mse')\nmodel.fit(x, y, epochs=4, batch_size=32)",
    ];
    let path = write_code_cells(scratch.path(), &cells);
    let run = distribute(&["fix", "--root", "."], scratch.path());
    assert_eq!(run.code, 1, "fix rewrote the notebook: {}", run.stdout);
    assert!(!run.stdout.contains("DST307"), "{}", run.stdout);
    assert_valid_notebook(&path);
    let written: serde_json::Value = serde_json::from_str(&read(&path)).unwrap();
    let source = |index: usize| {
        written["cells"][index]["source"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        source(0).starts_with(
            "import os\nimport zipfile\nimport tensorflow as tf\nimport horovod.tensorflow.keras as hvd\nhvd.init()\n"
        ),
        "{}",
        source(0)
    );
    assert!(
        source(1).starts_with(
            "if hvd.rank() == 0:\n    !wget -q https://example.com/data.zip\nhvd.allreduce("
        ),
        "{}",
        source(1)
    );
    assert!(
        source(2).contains("if hvd.rank() == 0:\n    archive.extractall('data')\nhvd.allreduce("),
        "{}",
        source(2)
    );
    // The module's own import stays where it was.
    assert!(
        source(3).starts_with("import numpy as np\nimport tensorflow as tf\n"),
        "{}",
        source(3)
    );
}

/// A module the notebook fetches while it runs is no file of the package:
/// what its functions write cannot be seen, so a call of one on every rank
/// holds the rewrite back.
#[test]
fn a_helper_module_fetched_at_run_time_holds_the_rewrite_back() {
    let scratch = tempfile::tempdir().unwrap();
    let cells = [
        "import numpy as np\nimport tensorflow as tf",
        "!wget -q https://example.com/extras/helpers.py",
        "from helpers import unzip_data\nunzip_data('data.zip')\nx = np.random.rand(256, 4).astype('float32')\ny = x.sum(axis=1)",
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])\nmodel.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss='mse')\nmodel.fit(x, y, epochs=4, batch_size=32)",
    ];
    write_code_cells(scratch.path(), &cells);
    let run = distribute(&["diff", "--root", "."], scratch.path());
    assert!(
        run.stdout.contains(
            "`unzip_data` at cell 3, line 2 comes from `helpers`, a module the notebook fetches while it runs"
        ),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("+import horovod"), "{}", run.stdout);
}

#[test]
fn the_init_block_follows_the_first_keras_imports_not_a_late_cell_import() {
    let scratch = tempfile::tempdir().unwrap();
    // Standalone Keras 2 (pinned); the last import is in the last cell,
    // below a download the rewrite makes rank 0 do first.
    let cells = [
        "import keras\nfrom keras import layers, models",
        "from keras.datasets import mnist\n(x, y), _ = mnist.load_data()\nx = x.reshape((-1, 784)).astype('float32') / 255",
        "model = models.Sequential([layers.Dense(10, activation='softmax', input_shape=(784,))])\nmodel.compile(optimizer='rmsprop', loss='sparse_categorical_crossentropy')\nmodel.fit(x, y, epochs=4, batch_size=128)",
        "import matplotlib.pyplot as plt\nplt.plot([1, 2])",
    ];
    let path = write_code_cells(scratch.path(), &cells);
    std::fs::write(scratch.path().join("requirements.txt"), "keras==2.12.0\n").unwrap();
    let run = distribute(&["fix", "--root", "."], scratch.path());
    assert_eq!(run.code, 1, "fix rewrote the notebook: {}", run.stdout);
    assert!(!run.stdout.contains("DST301"), "{}", run.stdout);
    let written: serde_json::Value = serde_json::from_str(&read(&path)).unwrap();
    let source = |index: usize| {
        written["cells"][index]["source"]
            .as_str()
            .unwrap()
            .to_string()
    };
    // After the run of imports that starts with keras (it goes on into the
    // second cell), before the download that rank 0 makes first.
    assert_eq!(source(0), cells[0]);
    let second = source(1);
    let init = second.find("hvd.init()").expect("init in the second cell");
    assert!(
        init < second.find("if hvd.rank() == 0:").unwrap(),
        "{second}"
    );
    assert_eq!(source(3), cells[3]);
}

#[test]
fn a_read_after_a_rank_zero_write_names_the_writes_cell_and_line() {
    let scratch = tempfile::tempdir().unwrap();
    let cells = [
        "import numpy as np\nimport tensorflow as tf\nx = np.random.rand(256, 4).astype('float32')\ny = x.sum(axis=1)",
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])\nmodel.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss='mse')\nmodel.fit(x, y, epochs=4, batch_size=32, callbacks=[tf.keras.callbacks.ModelCheckpoint('best.h5')])",
        "best = tf.keras.models.load_model('best.h5')",
    ];
    write_code_cells(scratch.path(), &cells);
    let run = distribute(&["check", "--root", "."], scratch.path());
    assert!(
        run.stdout
            .contains("this reads what `model.fit` (cell 2, line 3) writes on rank 0 only"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_read_left_without_a_barrier_names_the_users_cell_of_the_write() {
    // The read is in the loop that writes, where the rewrite adds no
    // barrier: the checker names the write where the user wrote it, not
    // where the rewritten text (with the init block added above it) has it.
    let scratch = tempfile::tempdir().unwrap();
    let cells = [
        "import numpy as np\nimport tensorflow as tf\nx = np.random.rand(256, 4).astype('float32')\ny = x.sum(axis=1)",
        "model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])\nmodel.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss='mse')",
        "for attempt in range(2):\n    model.fit(x, y, epochs=4, batch_size=32, callbacks=[tf.keras.callbacks.ModelCheckpoint('best.h5')])\n    best = tf.keras.models.load_model('best.h5')",
    ];
    write_code_cells(scratch.path(), &cells);
    let run = distribute(&["check", "--root", "."], scratch.path());
    assert!(
        run.stdout.contains(
            "the read at cell 3, line 3 runs on every rank after `model.fit` (cell 3, line 2) wrote on rank 0 only"
        ),
        "{}",
        run.stdout
    );
}
