"""Estimator with a user RunConfig, run through tf.estimator.train_and_evaluate."""
import argparse
import json
import os

import numpy as np
import tensorflow as tf

N_FEATURES = 6


def model_fn(features, labels, mode, params):
    x = features["x"]
    net = tf.compat.v1.layers.dense(x, params["hidden"], activation=tf.nn.relu, name="fc1")
    logits = tf.compat.v1.layers.dense(net, 2, name="fc2")
    predicted = tf.argmax(logits, 1)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"class": predicted})

    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    metrics = {"accuracy": tf.compat.v1.metrics.accuracy(labels, predicted)}
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)

    optimizer = tf.compat.v1.train.MomentumOptimizer(learning_rate=params["lr"], momentum=0.9)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_or_create_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def xor_data(n):
    x = np.random.uniform(-1, 1, size=(n, N_FEATURES)).astype(np.float32)
    y = ((x[:, 0] > 0) ^ (x[:, 1] > 0)).astype(np.int32)
    return x, y


def input_fn(x, y, batch_size, training):
    def _fn():
        ds = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
        if training:
            ds = ds.shuffle(len(x)).repeat()
        return ds.batch(batch_size)

    return _fn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_dir", default="xor_model")
    parser.add_argument("--max_steps", type=int, default=40)
    parser.add_argument("--eval_steps", type=int, default=5)
    parser.add_argument("--batch_size", type=int, default=32)
    args = parser.parse_args()

    x_train, y_train = xor_data(3000)
    x_eval, y_eval = xor_data(500)

    run_config = tf.estimator.RunConfig(
        model_dir=args.model_dir,
        save_checkpoints_steps=20,
        save_summary_steps=10,
        log_step_count_steps=10,
        keep_checkpoint_max=2,
    )
    estimator = tf.estimator.Estimator(model_fn=model_fn, config=run_config, params={"hidden": 32, "lr": 0.1})

    train_spec = tf.estimator.TrainSpec(input_fn=input_fn(x_train, y_train, args.batch_size, True), max_steps=args.max_steps)
    eval_spec = tf.estimator.EvalSpec(
        input_fn=input_fn(x_eval, y_eval, args.batch_size, False), steps=args.eval_steps, throttle_secs=0
    )
    metrics, _ = tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
    print("eval:", metrics)

    checksum = 0.0
    for name in estimator.get_variable_names():
        if name.startswith("fc") and "Momentum" not in name:
            value = estimator.get_variable_value(name)
            checksum += float(np.sum(value) + np.sum(np.abs(value)))
    steps = int(estimator.get_variable_value("global_step"))
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
        json.dump({"checksum": checksum, "steps": steps}, f)


if __name__ == "__main__":
    main()
