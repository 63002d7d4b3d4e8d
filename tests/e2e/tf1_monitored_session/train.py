"""Linear regression trained with tf.train.MonitoredTrainingSession (TF1 API)."""
import argparse
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()


class FinalWeightsHook(tf.train.SessionRunHook):
    """Reads the trainable variables and the global step when the session ends."""

    def begin(self):
        self._tensors = tf.trainable_variables()
        self._global_step = tf.train.get_global_step()
        self.values = None
        self.global_step = None

    def end(self, session):
        self.values, self.global_step = session.run([self._tensors, self._global_step])


def input_fn(batch_size, dim=6, n=4000):
    true_w = np.random.uniform(-2, 2, size=(dim, 1)).astype(np.float32)
    x = np.random.normal(size=(n, dim)).astype(np.float32)
    y = x @ true_w + 0.5 + 0.05 * np.random.normal(size=(n, 1)).astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(n).repeat().batch(batch_size)
    return tf.data.make_one_shot_iterator(ds).get_next()


def model(features, dim=6):
    w = tf.get_variable("w", shape=[dim, 1])  # glorot uniform, unseeded
    b = tf.get_variable("b", shape=[1], initializer=tf.random_uniform_initializer(-1.0, 1.0))
    return tf.matmul(features, w) + b


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-steps", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--model-dir", default="./monitored_model")
    args = parser.parse_args()

    global_step = tf.train.get_or_create_global_step()
    features, targets = input_fn(args.batch_size)
    predictions = model(features)
    loss = tf.losses.mean_squared_error(targets, predictions)
    optimizer = tf.train.MomentumOptimizer(learning_rate=args.lr, momentum=0.9)
    train_op = optimizer.minimize(loss, global_step=global_step)

    final_weights = FinalWeightsHook()
    hooks = [
        tf.train.StopAtStepHook(last_step=args.max_steps),
        tf.train.LoggingTensorHook({"step": global_step, "loss": loss}, every_n_iter=10),
        final_weights,
    ]

    steps_run = 0
    with tf.train.MonitoredTrainingSession(checkpoint_dir=args.model_dir, hooks=hooks) as sess:
        while not sess.should_stop():
            sess.run(train_op)
            steps_run += 1

    checksum = sum(float(np.sum(v) + np.sum(np.abs(v))) for v in final_weights.values)
    rank = os.environ.get("HOROVOD_RANK", "single")
    report = {"checksum": checksum, "steps": steps_run, "global_step": int(final_weights.global_step)}
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as fp:
        json.dump(report, fp)


if __name__ == "__main__":
    main()
