//! Mutation tests of the checker used as a lint (SPEC 13.3): correct Horovod
//! programs written for this test (`tests/checker_programs/`), each mutated
//! with one mistake Horovod users make. Every mistake is an error of its
//! invariant at the mutated line; the unmutated programs get no edit and no
//! warning.

use std::path::Path;

use distribute::diagnostics::Severity;
use distribute::engine::{self, RunOutcome, RunRequest};

/// One injected mistake: the program, the code expected, the text replaced
/// and its replacement, and a text on the line the error must be at.
struct Mutation {
    program: &'static str,
    code: &'static str,
    find: &'static str,
    replace: &'static str,
    at: &'static str,
}

const MUTATIONS: &[Mutation] = &[
    Mutation {
        program: "keras_fit.py",
        code: "DST301",
        find: "hvd.init()\n",
        replace: "ranks = hvd.size()\nhvd.init()\n",
        at: "ranks = hvd.size()",
    },
    Mutation {
        program: "keras_fit.py",
        code: "DST302",
        find: "optimizer = hvd.DistributedOptimizer(optimizer)\n",
        replace: "",
        at: "model.compile(",
    },
    Mutation {
        program: "keras_fit.py",
        code: "DST303",
        find: "    hvd.callbacks.BroadcastGlobalVariablesCallback(0),\n",
        replace: "",
        at: "model.fit(",
    },
    Mutation {
        program: "keras_fit.py",
        code: "DST305",
        find: "epochs=max(1, 8 // hvd.size())",
        replace: "epochs=8",
        at: "learning_rate=0.001 * hvd.size()",
    },
    Mutation {
        program: "keras_fit.py",
        code: "DST307",
        find: "if hvd.rank() == 0:\n    model.save_weights",
        replace: "if True:\n    model.save_weights",
        at: "model.save_weights",
    },
    Mutation {
        program: "keras_fit.py",
        code: "DST309",
        find: "import horovod.tensorflow.keras as hvd",
        replace: "import horovod.tensorflow as hvd",
        at: "hvd.callbacks.MetricAverageCallback()",
    },
    Mutation {
        program: "keras_fit.py",
        code: "DST311",
        find: "if gpus:\n    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], \"GPU\")\n",
        replace: "",
        at: "hvd.init()",
    },
    Mutation {
        program: "tape_loop.py",
        code: "DST302",
        find: "    tape = hvd.DistributedGradientTape(tape)\n",
        replace: "",
        at: "grads = tape.gradient",
    },
    Mutation {
        program: "tape_loop.py",
        code: "DST303",
        find: "    if first_batch:\n        hvd.broadcast_variables(model.variables, root_rank=0)\n        hvd.broadcast_variables(optimizer.variables(), root_rank=0)\n",
        replace: "",
        at: "with tf.GradientTape() as tape:",
    },
    Mutation {
        program: "tape_loop.py",
        code: "DST304",
        find: "dataset.shard(hvd.size(), hvd.rank())",
        replace: "dataset.shard(hvd.size(), hvd.rank()).shard(hvd.size(), hvd.rank())",
        at: "dataset.take(",
    },
    Mutation {
        program: "tape_loop.py",
        code: "DST306",
        find: "dataset.shard(hvd.size(), hvd.rank()).shuffle(1000).batch(32).repeat()",
        replace: "dataset.batch(32).repeat()",
        at: "dataset.take(",
    },
    Mutation {
        program: "tape_loop.py",
        code: "DST308",
        find: "        print(step, float(loss))\n",
        replace: "        print(step, float(loss))\n    if float(loss) < 0.05:\n        break\n",
        at: "break",
    },
    // A running average of the loss is still each worker's own.
    Mutation {
        program: "tape_loop.py",
        code: "DST308",
        find: "        print(step, float(loss))\n",
        replace: "        print(step, float(loss))\n    smoothed = 0.9 * smoothed + 0.1 * loss\n    if smoothed < 0.05:\n        break\n",
        at: "break",
    },
    // A saliency map beside training: the gradients of a tape of watched inputs averaged.
    Mutation {
        program: "tape_loop.py",
        code: "DST310",
        find: "    optimizer.apply_gradients(zip(grads, model.trainable_variables))\n",
        replace: "    optimizer.apply_gradients(zip(grads, model.trainable_variables))\n    inputs = tf.ones((1, 4))\n    with tf.GradientTape() as saliency_tape:\n        saliency_tape.watch(inputs)\n        score = tf.reduce_sum(model(inputs))\n    saliency_tape = hvd.DistributedGradientTape(saliency_tape)\n    saliency = saliency_tape.gradient(score, inputs)\n",
        at: "saliency_tape = hvd.DistributedGradientTape(saliency_tape)",
    },
    Mutation {
        program: "tape_loop.py",
        code: "DST310",
        find: "    optimizer.apply_gradients(zip(grads, model.trainable_variables))\n",
        replace: "    print(grads)\n",
        at: "tape = hvd.DistributedGradientTape(tape)",
    },
    Mutation {
        program: "tf1_session.py",
        code: "DST302",
        find: "opt = hvd.DistributedOptimizer(opt)\n",
        replace: "",
        at: "train_op = opt.minimize(loss)",
    },
    Mutation {
        program: "tf1_session.py",
        code: "DST303",
        find: "    sess.run(hvd.broadcast_global_variables(0))\n",
        replace: "",
        at: "with tf.Session(",
    },
    Mutation {
        program: "tf1_session.py",
        code: "DST305",
        find: "range(max(1, 1000 // hvd.size()))",
        replace: "range(1000)",
        at: "0.01 * hvd.size()",
    },
    Mutation {
        program: "tf1_session.py",
        code: "DST311",
        find: "config.gpu_options.visible_device_list = str(hvd.local_rank())\n",
        replace: "",
        at: "tf.Session(config=config)",
    },
];

fn program_text(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/checker_programs")
            .join(name),
    )
    .unwrap()
}

fn run_on(text: &str) -> RunOutcome {
    let directory = tempfile::tempdir().unwrap();
    std::fs::write(directory.path().join("train.py"), text).unwrap();
    let request = RunRequest {
        root: directory.path().to_path_buf(),
        ..Default::default()
    };
    engine::with_large_stack(move || engine::run(&request))
}

#[test]
fn correct_horovod_programs_get_no_edit_and_no_warning() {
    for name in ["keras_fit.py", "tape_loop.py", "tf1_session.py"] {
        let outcome = run_on(&program_text(name));
        assert_eq!(
            outcome.modules.len(),
            1,
            "{name}: the training module is found"
        );
        let module = &outcome.modules[0];
        assert!(
            module.rewritten.is_none() && module.held_back.is_none(),
            "{name}: edited"
        );
        let loud: Vec<_> = module
            .diagnostics
            .iter()
            .filter(|diagnostic| diagnostic.severity >= Severity::Warning)
            .collect();
        assert!(loud.is_empty(), "{name}: {loud:#?}");
    }
}

#[test]
fn every_injected_mistake_is_an_error_at_its_line() {
    let invariants_covered: std::collections::BTreeSet<&str> =
        MUTATIONS.iter().map(|mutation| mutation.code).collect();
    assert_eq!(
        invariants_covered.len(),
        11,
        "a mutation for every invariant"
    );
    for mutation in MUTATIONS {
        let original = program_text(mutation.program);
        assert!(
            original.contains(mutation.find),
            "{}: `{}` not found",
            mutation.program,
            mutation.find
        );
        let mutated = original.replacen(mutation.find, mutation.replace, 1);
        let line = mutated
            .lines()
            .position(|line| line.contains(mutation.at))
            .unwrap_or_else(|| panic!("`{}` not in the mutated {}", mutation.at, mutation.program))
            + 1;
        let outcome = run_on(&mutated);
        let diagnostics = &outcome.modules[0].diagnostics;
        assert!(
            diagnostics
                .iter()
                .any(|diagnostic| diagnostic.code == mutation.code
                    && diagnostic.severity == Severity::Error
                    && diagnostic.line == line),
            "{} with `{}` replaced: no {} error at line {line}:\n{diagnostics:#?}",
            mutation.program,
            mutation.find.trim(),
            mutation.code
        );
    }
}
