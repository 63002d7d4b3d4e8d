//! Mistakes a Horovod rewrite is easy to make, each one a broken training
//! job: `hvd.size` without its call parentheses, `horovod.tensorflow` for
//! Keras code, callbacks appended as a list or stopping callbacks on rank 0
//! only (a deadlock), `hooks=hooks.append(...)` (None), wrapping the train op
//! instead of the optimizer, a `zip` consumed before the broadcast reads it, a
//! flag set inside `@tf.function` (read only while tracing), the init block
//! between imports, `tf` assumed as the alias, and the file re-printed from
//! its syntax tree (comments lost). Each test runs a fixture through the
//! engine and asserts that the rewrite does not make its mistake.

use std::path::Path;

use distribute::engine::{self, RunRequest};

/// The rewritten text of each changed module of a fixture, by relative path.
fn rewrites(case: &str) -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(case)
        .join("input");
    let request = RunRequest {
        root,
        ..Default::default()
    };
    let outcome = engine::with_large_stack(move || engine::run(&request));
    outcome
        .modules
        .into_iter()
        .filter_map(|module| module.rewritten.map(|text| (module.relative_path, text)))
        .collect()
}

fn only_rewrite(case: &str) -> String {
    let mut all = rewrites(case);
    assert_eq!(
        all.len(),
        1,
        "{case}: expected exactly one rewritten module"
    );
    all.remove(0).1
}

const ALL_TF2_CASES: &[&str] = &[
    "keras_optimizer_object",
    "keras_string_optimizer",
    "keras_lr_positional_keyword_default",
    "keras_lr_schedule",
    "keras_callbacks_inline",
    "keras_callbacks_named",
    "tape_basic",
    "tape_tf_function",
    "tape_manual_variables",
    "tape_step_parameters",
    "string_optimizer_module_alias",
];

#[test]
fn hvd_size_is_always_called() {
    for case in ALL_TF2_CASES {
        for (path, text) in rewrites(case) {
            for (index, _) in text.match_indices(".size") {
                let after = &text[index + ".size".len()..];
                assert!(
                    after.starts_with("()"),
                    "{case}/{path}: `.size` without call parentheses"
                );
            }
        }
    }
}

#[test]
fn keras_code_imports_horovod_tensorflow_keras() {
    for case in [
        "keras_optimizer_object",
        "keras_callbacks_inline",
        "keras_string_optimizer",
    ] {
        let text = only_rewrite(case);
        assert!(
            text.contains("import horovod.tensorflow.keras as hvd"),
            "{case}"
        );
        assert!(
            !text.contains("import horovod.tensorflow as hvd"),
            "{case}: hvd.callbacks needs the keras module"
        );
    }
}

#[test]
fn callbacks_are_not_appended_as_a_list_and_stopping_callbacks_run_everywhere() {
    for case in ["keras_callbacks_inline", "keras_callbacks_named"] {
        let text = only_rewrite(case);
        assert!(
            !text.contains(".append(["),
            "{case}: a list appended as one callback"
        );
        for line in text
            .lines()
            .filter(|line| line.contains("hvd.rank() == 0 else []"))
        {
            for everywhere in [
                "EarlyStopping",
                "ReduceLROnPlateau",
                "LearningRateScheduler",
            ] {
                assert!(
                    !line.contains(everywhere),
                    "{case}: {everywhere} must run on every rank: {line}"
                );
            }
        }
        assert!(
            text.contains("tf.keras.callbacks.EarlyStopping("),
            "{case}: EarlyStopping kept"
        );
    }
}

#[test]
fn a_consumed_zip_is_materialised_before_apply_gradients() {
    let text = only_rewrite("tape_manual_variables");
    assert!(
        text.contains("grads_and_vars = list(zip(grads, [w, b]))"),
        "{text}"
    );
    assert!(
        text.contains("hvd.broadcast_variables([w, b], root_rank=0)"),
        "{text}"
    );
}

#[test]
fn the_broadcast_flag_lives_outside_tf_function_and_needs_no_global() {
    let text = only_rewrite("tape_tf_function");
    let step_start = text.find("@tf.function").unwrap();
    let step_end = step_start + text[step_start..].find("\n\n\n").unwrap();
    assert!(
        !text[step_start..step_end].contains("broadcast"),
        "broadcast inside the traced step:\n{}",
        &text[step_start..step_end]
    );
    assert!(
        !text.contains("global "),
        "a module-level loop needs no `global`"
    );
    let flag_definition = text
        .find("\nbroadcast_done = False\n")
        .expect("flag defined at the loop's level");
    let loop_start = text.find("\nfor step, (images, labels)").unwrap();
    assert!(
        flag_definition < loop_start,
        "the flag is set before the loop"
    );

    // The step called from a function: the flag is a local of that function.
    let text = only_rewrite("tape_step_parameters");
    assert!(
        text.contains("    broadcast_done = False\n    for step in range("),
        "{text}"
    );
    assert!(
        text.contains("hvd.broadcast_variables(model.variables, root_rank=0)"),
        "parameters mapped to the caller's arguments:\n{text}"
    );
}

#[test]
fn init_block_follows_all_imports_and_is_formatted() {
    for case in ALL_TF2_CASES {
        for (path, text) in rewrites(case) {
            let init = text
                .find("hvd.init()")
                .unwrap_or_else(|| panic!("{case}/{path}: no hvd.init()"));
            let last_import = text
                .lines()
                .scan(0, |offset, line| {
                    let start = *offset;
                    *offset += line.len() + 1;
                    Some((start, line))
                })
                .filter(|(_, line)| line.starts_with("import ") || line.starts_with("from "))
                .map(|(start, _)| start)
                .max()
                .unwrap();
            assert!(
                init > last_import,
                "{case}/{path}: hvd.init() placed between imports"
            );
            assert!(
                !text.contains("for gpu in gpus: "),
                "{case}/{path}: one-line loop"
            );
        }
    }
}

#[test]
fn generated_code_uses_the_modules_alias_for_tensorflow() {
    let text = only_rewrite("string_optimizer_module_alias");
    assert!(
        text.contains("tfk.keras.optimizers.Adagrad(learning_rate=0.001 * hvd.size())"),
        "{text}"
    );
    assert!(
        text.contains("tfk.config.experimental.list_physical_devices"),
        "{text}"
    );
    assert!(!text.contains(" tf."), "{text}");
    let text = only_rewrite("import_tensorflow_plain");
    assert!(
        text.contains("tensorflow.config.experimental.set_memory_growth(gpu, True)"),
        "{text}"
    );
}

#[test]
fn the_original_text_outside_edits_survives() {
    let original = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/keras_optimizer_object/input/train.py"
    ))
    .unwrap();
    let text = only_rewrite("keras_optimizer_object");
    for line in original
        .lines()
        .filter(|line| !line.contains("Adam(") && !line.contains(".fit("))
    {
        assert!(text.contains(line), "line lost or reformatted: {line:?}");
    }
}

#[test]
fn hooks_get_a_new_list_not_the_result_of_append() {
    let text = only_rewrite("tf1_monitored_session_hooks");
    assert!(
        text.contains("hooks=[*hooks, hvd.BroadcastGlobalVariablesHook(0)]"),
        "{text}"
    );
    assert!(!text.contains(".append("), "{text}");
    let text = only_rewrite("tf1_estimator_same_module");
    assert!(
        text.contains("hooks=[hvd.BroadcastGlobalVariablesHook(0)]"),
        "{text}"
    );
}

#[test]
fn the_optimizer_is_wrapped_never_the_train_op() {
    let text = only_rewrite("tf1_session_chained_minimize");
    assert!(text.contains("optimizer = tf.train.AdamOptimizer(0.01 * hvd.size())\noptimizer = hvd.DistributedOptimizer(optimizer)\ntrain_op = optimizer.minimize(loss)\n"), "{text}");
    assert!(!text.contains("DistributedOptimizer(train_op"), "{text}");
    assert!(!text.contains(".minimize(loss))"), "{text}");
}
