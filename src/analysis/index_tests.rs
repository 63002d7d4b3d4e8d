//! Table tests for the index's answers.

use super::*;
use crate::analysis::training::Analysis;

fn with_index(text: &str, check: impl FnOnce(&SemanticIndex, &ScopeIndex, &str)) {
    let directory = tempfile::tempdir().unwrap();
    std::fs::write(directory.path().join("train.py"), text).unwrap();
    let package = Package::load(directory.path(), &["train.py".to_string()]);
    let analysis = Analysis::new(&package);
    let module = &analysis.modules[0];
    check(&module.index, &module.scopes[0].facts, text);
}

const PRELUDE: &str = "import tensorflow as tf\nimport horovod.tensorflow as hvd\n";
/// A tape whose gradients an optimizer applies makes the module a training
/// module, whose values the index resolves.
const TRAINS: &str = "with tf.GradientTape() as tape:\n    pass\nopt.apply_gradients([])\n";

#[test]
fn abstract_values_follow_assignments() {
    let cases: &[(&str, &str, AbstractValue)] = &[
        ("lr = 0.001", "lr", AbstractValue::Number),
        (
            "lr = 0.001 * hvd.size()",
            "lr",
            AbstractValue::ScaledByWorkers,
        ),
        (
            "n = hvd.local_size()\nlr = 0.01 * n",
            "lr",
            AbstractValue::ScaledByWorkers,
        ),
        (
            "lr = 0.001 * hvd.size()\nrate = lr",
            "rate",
            AbstractValue::ScaledByWorkers,
        ),
        (
            "d = 'out' if hvd.rank() == 0 else None",
            "d",
            AbstractValue::RankDependent,
        ),
        (
            "hook = hvd.BroadcastGlobalVariablesHook(0)",
            "hook",
            AbstractValue::Horovod,
        ),
        (
            "opt = tf.keras.optimizers.Adam(0.1)",
            "opt",
            AbstractValue::Optimizer,
        ),
        (
            "s = tf.keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.9)",
            "s",
            AbstractValue::Schedule,
        ),
        (
            "sess = tf.compat.v1.Session()",
            "sess",
            AbstractValue::Session,
        ),
        ("m = tf.summary.merge_all()", "m", AbstractValue::SummaryOp),
        (
            "w = tf.summary.create_file_writer('d')",
            "w",
            AbstractValue::FileWriter,
        ),
        (
            "ds = tf.data.Dataset.range(4)",
            "ds",
            AbstractValue::Dataset,
        ),
        ("x = compute()", "x", AbstractValue::Unknown),
    ];
    for (code, name, expected) in cases {
        let text = format!("{PRELUDE}{code}\n{TRAINS}");
        with_index(&text, |_, top_level, _| {
            let assignment = top_level
                .assignments
                .iter()
                .rev()
                .find(|assignment| assignment.name == *name)
                .expect("the name is assigned");
            assert_eq!(assignment.value_kind, *expected, "{code}");
        });
    }
}

#[test]
fn calls_know_their_loops_and_conditions() {
    let text = format!(
        "{PRELUDE}for epoch in range(3):\n    for x in data:\n        if epoch > 1:\n            step(x)\n    log(epoch)\n"
    );
    with_index(&text, |_, top_level, text| {
        let calls = &top_level.calls;
        let step = calls
            .iter()
            .find(|site| &text[span(site.call)] == "step(x)")
            .unwrap();
        assert_eq!(step.enclosing_loops.len(), 2);
        assert_eq!(step.conditions.len(), 1);
        let log = calls
            .iter()
            .find(|site| &text[span(site.call)] == "log(epoch)")
            .unwrap();
        assert_eq!(log.enclosing_loops.len(), 1);
        assert!(log.conditions.is_empty());
    });
}

#[test]
fn each_statement_comes_with_its_own_calls_only() {
    let text = format!(
        "{PRELUDE}{TRAINS}total = f(g(1))\nfor i in range(3):\n    h(i)\n    if k():\n        m()\ndef inner():\n    n()\n"
    );
    with_index(&text, |_, top_level, text| {
        let seen: Vec<(String, Vec<&str>)> = top_level
            .statements_with_calls()
            .map(|(statement, calls)| {
                let first_line = text[span(statement)].lines().next().unwrap().to_string();
                let mut called: Vec<&str> = calls
                    .iter()
                    .map(|site| &text[span(&*site.call.func)])
                    .collect();
                called.sort_unstable();
                (first_line, called)
            })
            // The prelude and the tape's block.
            .filter(|(line, _)| {
                !["import", "with", "pass", "opt.apply_gradients"]
                    .iter()
                    .any(|s| line.starts_with(s))
            })
            .collect();
        let expected: Vec<(String, Vec<&str>)> = vec![
            ("total = f(g(1))".into(), vec!["f", "g"]),
            ("for i in range(3):".into(), vec!["range"]),
            ("h(i)".into(), vec!["h"]),
            ("if k():".into(), vec!["k"]),
            ("m()".into(), vec!["m"]),
            // A function's body is its own scope.
            ("def inner():".into(), vec![]),
        ];
        assert_eq!(seen, expected);
    });
}

#[test]
fn rank_zero_blocks_and_init_are_found() {
    let text = format!(
        "{PRELUDE}print('before')\nhvd.init()\nif hvd.rank() == 0:\n    print('a')\nif 0 == hvd.local_rank():\n    print('b')\nif hvd.rank() == 1:\n    print('c')\n"
    );
    with_index(&text, |index, _, text| {
        assert_eq!(index.rank_zero_blocks.len(), 2);
        let before = text.find("print('before')").unwrap();
        let after = text.find("print('a')").unwrap();
        assert!(index.runs_before_init(before));
        assert!(!index.runs_before_init(after));
    });
}
