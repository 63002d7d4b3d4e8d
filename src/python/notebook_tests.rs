use super::*;

/// A notebook as Jupyter writes it: one-space indentation, sources as lists
/// of lines, outputs and metadata around them.
const NOTEBOOK: &str = r##"{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "intro",
   "metadata": {},
   "source": [
    "# Training ✓\n",
    "Runs on one GPU."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 1,
   "id": "imports",
   "metadata": {"tags": ["setup"]},
   "outputs": [],
   "source": [
    "%matplotlib inline\n",
    "import tensorflow as tf"
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 2,
   "id": "train",
   "metadata": {},
   "outputs": [{"name": "stdout", "output_type": "stream", "text": ["done\n"]}],
   "source": "!nvidia-smi\nmodel.fit(x, epochs=\"3\")\nprint('é')"
  }
 ],
 "metadata": {"kernelspec": {"name": "python3"}},
 "nbformat": 4,
 "nbformat_minor": 5
}
"##;

fn notebook() -> Notebook {
    Notebook::parse(NOTEBOOK.to_string()).expect("the notebook reads")
}

#[test]
fn code_cells_form_one_module_with_magics_as_placeholders() {
    let notebook = notebook();
    assert_eq!(
        notebook.python(),
        "#                 \nimport tensorflow as tf\n#          \nmodel.fit(x, epochs=\"3\")\nprint('é')\n"
    );
}

#[test]
fn positions_name_the_cell_counting_markdown_cells() {
    let notebook = notebook();
    let fit = notebook.python().find("model.fit").unwrap();
    assert_eq!(
        notebook.position(fit + 6),
        Some((3, Location { line: 2, column: 7 }))
    );
    let import = notebook.python().find("import").unwrap();
    assert_eq!(
        notebook.position(import),
        Some((2, Location { line: 2, column: 1 }))
    );
    assert_eq!(
        notebook.cell_position(Location { line: 4, column: 3 }),
        Some((3, Location { line: 2, column: 3 }))
    );
}

#[test]
fn file_lines_point_at_the_cell_line_in_the_json() {
    let notebook = notebook();
    let line_of = |needle: &str| {
        NOTEBOOK[..NOTEBOOK.find(needle).unwrap()]
            .matches('\n')
            .count()
            + 1
    };
    assert_eq!(
        notebook.file_line(2, 2),
        Some(line_of("\"import tensorflow"))
    );
    assert_eq!(notebook.file_line(3, 2), Some(line_of("\"!nvidia-smi")));
}

#[test]
fn a_rewrite_changes_only_the_sources_of_changed_cells() {
    let notebook = notebook();
    let python = notebook.python();
    let after_import = python.find("tf\n").unwrap() + 3;
    let fit = python.find("model.fit").unwrap();
    let edits = vec![
        Edit::insertion(
            after_import,
            "import horovod.tensorflow.keras as hvd\nhvd.init()\n",
        ),
        Edit::insertion(fit, "# hvd\n"),
    ];
    let rewrite = notebook.rewrite(&edits).expect("the rewrite applies");
    let expected = NOTEBOOK
        .replace(
            "    \"import tensorflow as tf\"\n",
            "    \"import tensorflow as tf\\n\",\n    \"import horovod.tensorflow.keras as hvd\\n\",\n    \"hvd.init()\"\n",
        )
        .replace("\"!nvidia-smi\\nmodel.fit", "\"!nvidia-smi\\n# hvd\\nmodel.fit");
    assert_eq!(rewrite.text, expected);
    assert_eq!(
        rewrite
            .changes
            .iter()
            .map(|change| change.number)
            .collect::<Vec<_>>(),
        vec![2, 3]
    );
    assert_eq!(
        rewrite.changes[0].rewritten,
        "%matplotlib inline\nimport tensorflow as tf\nimport horovod.tensorflow.keras as hvd\nhvd.init()"
    );
    let again = Notebook::parse(rewrite.text).expect("the rewrite reads");
    assert!(again.python().contains("hvd.init()\n#          \n# hvd\n"));
}

#[test]
fn a_guard_inserted_before_a_cells_first_statement_stays_in_that_cell() {
    let notebook = notebook();
    let fit = notebook.python().find("model.fit").unwrap();
    let print = notebook.python().find("print('é')").unwrap();
    let guard = |offset| Edit::insertion(offset, "if hvd.rank() == 0:\n    ");
    let rewrite = notebook.rewrite(&[guard(fit), guard(print)]).unwrap();
    assert_eq!(
        rewrite.changes[0].rewritten,
        "!nvidia-smi\nif hvd.rank() == 0:\n    model.fit(x, epochs=\"3\")\nif hvd.rank() == 0:\n    print('é')"
    );
    // At the boundary of two cells, the guard goes with the statement it guards.
    let two_cells = Notebook::parse(
        r#"{"nbformat": 4, "cells": [{"cell_type": "code", "source": "a = 1"}, {"cell_type": "code", "source": "print(a)"}]}"#.into(),
    )
    .unwrap();
    let rewrite = two_cells.rewrite(&[guard(6)]).unwrap();
    assert_eq!(rewrite.changes.len(), 1);
    assert_eq!(rewrite.changes[0].number, 2);
    assert_eq!(
        rewrite.changes[0].rewritten,
        "if hvd.rank() == 0:\n    print(a)"
    );
    // A block opened at the end of one cell whose body is the next cell's.
    let third_cell = notebook.python().find("#          \n").unwrap();
    let error = notebook
        .rewrite(&[Edit::insertion(third_cell, "if hvd.rank() == 0:\n")])
        .unwrap_err();
    assert!(
        error.contains("cell 2 does not parse on its own"),
        "{error}"
    );
}

#[test]
fn no_edits_leave_the_file_byte_for_byte() {
    let rewrite = notebook().rewrite(&[]).unwrap();
    assert_eq!(rewrite.text, NOTEBOOK);
    assert!(rewrite.changes.is_empty());
}

#[test]
fn edits_on_magic_lines_are_refused() {
    let notebook = notebook();
    let magic = notebook.python().find("#          \nmodel").unwrap();
    let error = notebook
        .rewrite(&[Edit::replacement(magic..magic + 4, "x")])
        .unwrap_err();
    assert!(error.contains("IPython line 1 of cell 3"), "{error}");
}

#[test]
fn bad_notebooks_are_errors_naming_where() {
    let invalid = Notebook::parse("{\n \"cells\": [,\n}".into()).unwrap_err();
    assert_eq!(
        invalid.location,
        Some(Location {
            line: 2,
            column: 12
        })
    );
    assert!(invalid.message.contains("invalid JSON"));
    let old = Notebook::parse(r#"{"nbformat": 3, "worksheets": []}"#.into()).unwrap_err();
    assert!(
        old.message.contains("nbformat 3 is not supported"),
        "{}",
        old.message
    );
    let no_source =
        Notebook::parse(r#"{"nbformat": 4, "cells": [{"cell_type": "markdown", "source": ""}, {"cell_type": "code"}]}"#.into())
            .unwrap_err();
    assert_eq!(no_source.cell, Some(2));
}

#[test]
fn the_kernel_language_is_read() {
    assert_eq!(notebook().other_language(), None);
    let r = r#"{"nbformat": 4, "cells": [], "metadata": {"kernelspec": {"language": "R", "name": "ir"}, "language_info": {"name": "R"}}}"#;
    assert_eq!(
        Notebook::parse(r.into()).unwrap().other_language(),
        Some("R")
    );
}

#[test]
fn a_cell_whose_list_was_empty_gets_nbformat_layout() {
    let text = "{\n \"cells\": [\n  {\n   \"cell_type\": \"code\",\n   \"source\": []\n  }\n ],\n \"nbformat\": 4\n}";
    let notebook = Notebook::parse(text.to_string()).unwrap();
    let rewrite = notebook
        .rewrite(&[Edit::insertion(0, "a = 1\nb = 2\n")])
        .unwrap();
    assert!(
        rewrite
            .text
            .contains("\"source\": [\n    \"a = 1\\n\",\n    \"b = 2\\n\"\n   ]"),
        "{}",
        rewrite.text
    );
}

#[test]
fn shell_lines_and_shell_cells_are_listed_with_their_commands() {
    let raw = serde_json::json!({
        "cells": [
            {"cell_type": "code", "metadata": {}, "outputs": [], "source": "!wget -q URL\nimport os\nfiles = !ls data\n%system mkdir out"},
            {"cell_type": "markdown", "metadata": {}, "source": "text"},
            {"cell_type": "code", "metadata": {}, "outputs": [], "source": "%%writefile helper.py\nx = 1\n"},
            {"cell_type": "code", "metadata": {}, "outputs": [], "source": "%matplotlib inline\nprint(1)"},
        ],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    })
    .to_string();
    let notebook = Notebook::parse(raw).unwrap();
    let commands: Vec<(String, String)> = notebook
        .shell_commands()
        .into_iter()
        .map(|shell| (shell.command, notebook.python()[shell.range].to_string()))
        .collect();
    assert_eq!(
        commands,
        vec![
            ("wget -q URL".to_string(), "#           ".to_string()),
            // The whole line, `files = ` included.
            ("ls data".to_string(), format!("#{}", " ".repeat(15))),
            ("mkdir out".to_string(), format!("#{}", " ".repeat(16))),
            // The whole cell.
            (
                "writefile helper.py".to_string(),
                format!("#{}\n#    \n", " ".repeat(20))
            ),
        ]
    );
}

#[test]
fn recorded_versions_are_read_from_the_outputs_of_cells_showing_them() {
    let cell = |source: &str, shown: &str| {
        serde_json::json!({"cell_type": "code", "metadata": {}, "source": source, "outputs": [
            {"output_type": "stream", "name": "stdout", "text": shown}
        ]})
    };
    let raw = serde_json::json!({
        "cells": [
            cell("tf.keras.__version__", "'3.1.0-tf'"),
            cell("import keras\nprint(keras.__version__)", "Using TensorFlow backend.\n2.2.4\n"),
            cell("print(tf.__version__)", "1.13.1\n"),
            cell("print(tf.__version__, keras.__version__)", "9.9 9.9\n"),
            cell("tf.keras.__version__", "'2.2.4-tf'"),
        ],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    })
    .to_string();
    let recorded = Notebook::parse(raw).unwrap().recorded_versions();
    assert_eq!(recorded.keras, Some((2, 2)));
    assert_eq!(recorded.tensorflow, Some((1, 13)));
    assert!(recorded.multi_backend_keras);
}

#[test]
fn a_warning_on_standard_error_before_the_version_is_not_read_as_it() {
    let raw = serde_json::json!({
        "cells": [{"cell_type": "code", "metadata": {}, "source": "import tensorflow as tf\nprint(tf.__version__)",
            "outputs": [
                {"output_type": "stream", "name": "stderr", "text": "/opt/lib/python3.6/site-packages/h5py/__init__.py:36: FutureWarning: ...\n"},
                {"output_type": "stream", "name": "stdout", "text": "2.0.0\n"},
            ]}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    })
    .to_string();
    let recorded = Notebook::parse(raw).unwrap().recorded_versions();
    assert_eq!(recorded.tensorflow, Some((2, 0)));
}

#[test]
fn only_the_banner_of_multi_backend_keras_says_it_ran() {
    let notebook = |printed: &str| {
        serde_json::json!({
            "cells": [{"cell_type": "code", "metadata": {}, "source": "from keras.models import Sequential",
                "outputs": [{"output_type": "stream", "name": "stderr", "text": [printed]}]}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
        })
        .to_string()
    };
    let recorded = |printed| {
        Notebook::parse(notebook(printed))
            .unwrap()
            .recorded_versions()
    };
    assert!(recorded("Using TensorFlow backend.\n").multi_backend_keras);
    assert!(
        !recorded("2024-01-01 I tensorflow/core: oneDNN custom operations are on\n")
            .multi_backend_keras
    );
}
