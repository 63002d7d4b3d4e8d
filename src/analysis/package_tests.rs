//! Loading a package: which files are parsed, and how modules are named.

use super::*;

#[test]
fn imports_are_followed_only_from_files_that_can_matter() {
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path();
    std::fs::write(root.join("helpers.py"), "import json_tools\n").unwrap();
    std::fs::write(root.join("json_tools.py"), "VALUE = 1\n").unwrap();
    std::fs::write(
        root.join("train.py"),
        "import tensorflow as tf\nimport layers\n",
    )
    .unwrap();
    std::fs::write(root.join("layers.py"), "SIZE = 2\n").unwrap();
    let files: Vec<String> = ["helpers.py", "json_tools.py", "layers.py", "train.py"]
        .map(String::from)
        .to_vec();
    // helpers.py mentions no ML library and imports nothing that does: it
    // cannot hold training code, so neither it nor what it imports is parsed.
    let package = Package::load(root, &files);
    assert!(package.module("helpers").is_none());
    assert!(package.module("json_tools").is_none());
    // train.py mentions tensorflow: what it imports is parsed.
    assert!(package.module("train").is_some());
    assert!(package.module("layers").is_some());
}

#[test]
fn notebooks_import_package_modules_and_no_module_imports_them() {
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path();
    let notebook = r#"{"nbformat": 4, "cells": [{"cell_type": "code", "source": "import tensorflow as tf\nfrom layers import SIZE"}]}"#;
    std::fs::write(root.join("train.ipynb"), notebook).unwrap();
    std::fs::write(root.join("layers.py"), "SIZE = 2\n").unwrap();
    // `ipynb` is a PyPI package that imports notebooks: never this one.
    let other = "import tensorflow\nimport ipynb\nimport train\n";
    std::fs::write(root.join("other.py"), other).unwrap();
    let files: Vec<String> = ["layers.py", "other.py", "train.ipynb"]
        .map(String::from)
        .to_vec();
    let package = Package::load(root, &files);
    assert!(package.module("train:ipynb").is_some());
    assert!(
        package.module("layers").is_some(),
        "imported by the notebook"
    );
    let changed: HashSet<String> = ["layers.py".to_string()].into();
    assert!(package.with_dependents(&changed).contains("train.ipynb"));
    let notebook_changed: HashSet<String> = ["train.ipynb".to_string()].into();
    assert_eq!(package.with_dependents(&notebook_changed), notebook_changed);
}

/// Writes a `trainer` package (a model module using TensorFlow and a task
/// module with the given text) and the other files; returns every path.
fn write_trainer_package(root: &Path, task: &str, others: &[(&str, &str)]) -> Vec<String> {
    std::fs::create_dir(root.join("trainer")).unwrap();
    let trainer = [
        ("trainer/__init__.py", ""),
        ("trainer/model.py", "import tensorflow as tf\n"),
        ("trainer/task.py", task),
    ];
    let mut files = Vec::new();
    for (path, text) in trainer.iter().chain(others) {
        std::fs::write(root.join(path), text).unwrap();
        files.push(path.to_string());
    }
    files
}

#[test]
fn a_driver_importing_training_code_is_parsed_though_it_names_no_ml_library() {
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path();
    let files = write_trainer_package(
        root,
        "from trainer import model\nimport data\n",
        &[("data.py", "ROWS = 3\n"), ("unrelated.py", "import json\n")],
    );
    let package = Package::load(root, &files);
    assert!(package.module("trainer.task").is_some());
    // What the driver imports is followed too; a file importing nothing that matters is not parsed.
    assert!(package.module("data").is_some());
    assert!(package.module("unrelated").is_none());
}

#[test]
fn a_module_training_code_only_imports_drives_nothing() {
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path();
    // `paths` is a utility the training script imports; `report` imports the
    // utility too, and nothing that trains: it cannot drive training code.
    std::fs::write(
        root.join("train.py"),
        "import tensorflow as tf\nimport paths\n",
    )
    .unwrap();
    std::fs::write(root.join("paths.py"), "import os\nROOT = os.getcwd()\n").unwrap();
    std::fs::write(root.join("report.py"), "import paths\nprint(paths.ROOT\n").unwrap();
    std::fs::write(root.join("run.py"), "import train\n").unwrap();
    let files: Vec<String> = ["paths.py", "report.py", "run.py", "train.py"]
        .map(String::from)
        .to_vec();
    let package = Package::load(root, &files);
    assert!(
        package.module("paths").is_some(),
        "imported by training code"
    );
    assert!(package.module("run").is_some(), "a driver of training code");
    assert!(
        package.module("report").is_none() && package.problems.is_empty(),
        "not parsed, so its syntax error is no problem of this run"
    );
}

#[test]
fn a_selection_loads_its_import_neighbourhood_in_a_large_package() {
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path();
    let task = "import tensorflow as tf\nfrom trainer import model\n";
    let mut files = write_trainer_package(root, task, &[]);
    // Many unrelated training scripts: enough that loading them is worth avoiding.
    for index in 0..80 {
        let name = format!("script_{index}.py");
        std::fs::write(root.join(&name), "import tensorflow as tf\n").unwrap();
        files.push(name);
    }
    let selected: HashSet<String> = ["trainer/model.py".to_string()].into();
    let package = Package::from_read_files(root, read_files(root, &files), Some(&selected));
    assert!(package.module("trainer.model").is_some());
    assert!(
        package.module("trainer.task").is_some(),
        "it imports the model"
    );
    assert!(package.module("script_0").is_none());
    // Without a selection, every file that can matter is loaded.
    let whole = Package::from_read_files(root, read_files(root, &files), None);
    assert!(whole.module("script_0").is_some());
}
