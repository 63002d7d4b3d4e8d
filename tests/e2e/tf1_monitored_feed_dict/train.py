"""Polynomial regression in graph mode: MonitoredTrainingSession fed from numpy,
with tf.compat.v1 spelled out and a user-made ConfigProto."""
import argparse
import json
import os

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

DEGREE = 5


def features(t):
    return np.stack([t ** k for k in range(1, DEGREE + 1)], axis=1).astype(np.float32)


def sample(batch_size, coeffs):
    t = np.random.uniform(-1, 1, size=batch_size)
    y = features(t) @ coeffs + 0.05 * np.random.randn(batch_size)
    return features(t), y.astype(np.float32)[:, None]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args()

    coeffs = np.random.uniform(-1, 1, size=DEGREE).astype(np.float32)

    inputs = tf.compat.v1.placeholder(tf.float32, [None, DEGREE])
    targets = tf.compat.v1.placeholder(tf.float32, [None, 1])
    hidden = tf.compat.v1.layers.dense(inputs, 16, activation=tf.nn.tanh)
    prediction = tf.compat.v1.layers.dense(hidden, 1)
    loss = tf.compat.v1.losses.mean_squared_error(targets, prediction)

    global_step = tf.compat.v1.train.get_or_create_global_step()
    train_op = tf.compat.v1.train.RMSPropOptimizer(args.lr, decay=0.95).minimize(loss, global_step=global_step)

    session_config = tf.compat.v1.ConfigProto(allow_soft_placement=True, log_device_placement=False)
    session_config.intra_op_parallelism_threads = 1
    final_weights = tf.compat.v1.train.FinalOpsHook(final_ops=tf.compat.v1.trainable_variables())

    steps = 0
    with tf.compat.v1.train.MonitoredTrainingSession(
        hooks=[tf.compat.v1.train.StopAtStepHook(num_steps=args.steps), final_weights],
        config=session_config,
        log_step_count_steps=None,
    ) as mon_sess:
        while not mon_sess.should_stop():
            x, y = sample(args.batch, coeffs)
            _, loss_value = mon_sess.run([train_op, loss], feed_dict={inputs: x, targets: y})
            steps += 1
            if steps % 10 == 0:
                print("step", steps, "loss", loss_value)

    checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in final_weights.final_ops_values))
    out = os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single"))
    with open(out, "w") as f:
        json.dump({"checksum": checksum, "steps": steps}, f)


if __name__ == "__main__":
    main()
