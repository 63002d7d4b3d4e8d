"""Graph-mode sequence model fed by a batch generator object that keeps one
cursor per row of the batch (`self._cursor[b]`), each advanced by one position
per call: every process that calls it as often walks the same positions."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

SERIES = np.sin(np.arange(3000) / 15.0).astype(np.float32)
WINDOW = 6
BATCH = 8


class BatchGenerator(object):
    def __init__(self, series, batch_size, window):
        self._series = series
        self._size = len(series) - window - 1
        self._batch_size = batch_size
        self._window = window
        segment = self._size // batch_size
        self._cursor = [offset * segment for offset in range(batch_size)]

    def next(self):
        inputs = np.zeros((self._batch_size, self._window), dtype=np.float32)
        targets = np.zeros((self._batch_size,), dtype=np.float32)
        for b in range(self._batch_size):
            start = self._cursor[b]
            inputs[b] = self._series[start:start + self._window]
            targets[b] = self._series[start + self._window]
            self._cursor[b] = (self._cursor[b] + 1) % self._size
        return inputs, targets


window_in = tf.placeholder(tf.float32, [None, WINDOW])
target = tf.placeholder(tf.float32, [None])
weights = tf.Variable(tf.random_normal([WINDOW, 1], stddev=0.3))
loss = tf.reduce_mean(tf.square(tf.reshape(tf.matmul(window_in, weights), [-1]) - target))
train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)

batches = BatchGenerator(SERIES, BATCH, WINDOW)
steps = 0
with tf.Session() as session:
    session.run(tf.global_variables_initializer())
    for step in range(60):
        inputs, targets = batches.next()
        session.run(train_op, feed_dict={window_in: inputs, target: targets})
        steps += 1
    final = session.run(weights)

rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": float(final.sum() + np.abs(final).sum()), "steps": steps}, out)
