"""Graph-mode classifier trained from a function: the session is made there, a
nested `train_step` runs the train op on it, and a loop calls `train_step`. A
data function seeds NumPy and draws the train/dev split with it."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

FEATURES = 6
CLASSES = 3


def prepare():
    np.random.seed(10)
    labels = np.random.randint(CLASSES, size=400)
    points = (np.random.normal(size=(400, FEATURES)) + labels[:, None]).astype(np.float32)
    order = np.random.permutation(len(labels))
    points, labels = points[order], labels[order]
    return points[:320], labels[:320], points[320:], labels[320:]


def train(x_train, y_train, num_steps):
    with tf.Graph().as_default():
        sess = tf.Session()
        with sess.as_default():
            inputs = tf.placeholder(tf.float32, [None, FEATURES])
            targets = tf.placeholder(tf.int64, [None])
            weights = tf.Variable(tf.random_normal([FEATURES, CLASSES], stddev=0.3))
            logits = tf.matmul(inputs, weights)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=targets, logits=logits))
            optimizer = tf.train.GradientDescentOptimizer(0.1)
            grads_and_vars = optimizer.compute_gradients(loss)
            train_op = optimizer.apply_gradients(grads_and_vars)
            sess.run(tf.global_variables_initializer())
            # The rate the step applies (Horovod keeps the wrapped optimizer as `_optimizer`).
            learning_rate = getattr(optimizer, "_optimizer", optimizer)._learning_rate

            def train_step(x_batch, y_batch):
                _, value = sess.run([train_op, loss], {inputs: x_batch, targets: y_batch})
                return value

            steps = 0
            for step in range(num_steps):
                rows = np.random.randint(len(y_train), size=32)
                train_step(x_train[rows], y_train[rows])
                steps += 1
            return sess.run(weights), steps, float(learning_rate)


x_train, y_train, x_dev, y_dev = prepare()
final, steps, rate = train(x_train, y_train, 40)
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": float(final.sum() + np.abs(final).sum()), "steps": steps, "rate": rate}, out)
