"""Two train ops made by a function and held by a model object
(`self.d_opt, self.g_opt = make_train_ops(...)`), run per batch of a data
object whose batches() shuffles only when asked (off here): the loop that
runs them is found, every worker walks the same batches, so it stays whole
and the rates as written."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()


class Batches:
    def __init__(self, rows, answers, shuffle=False):
        self.rows, self.answers = rows, answers
        self.shuffle = shuffle

    def batches(self, size):
        if self.shuffle:
            order = np.random.permutation(len(self.rows))
            self.rows, self.answers = self.rows[order], self.answers[order]
        for start in range(0, len(self.rows), size):
            yield self.rows[start:start + size], self.answers[start:start + size]


def make_train_ops(first_loss, second_loss, rate):
    first = tf.train.GradientDescentOptimizer(rate).minimize(first_loss)
    second = tf.train.GradientDescentOptimizer(rate).minimize(second_loss)
    return first, second


class Pair:
    def __init__(self, rate):
        self.inputs = tf.placeholder(tf.float32, [None, 4])
        self.targets = tf.placeholder(tf.float32, [None, 1])
        self.weights = tf.Variable(tf.random.normal([4, 1]))
        self.bias = tf.Variable(tf.zeros([1]))
        predicted = tf.matmul(self.inputs, self.weights) + self.bias
        self.loss = tf.reduce_mean(tf.square(predicted - self.targets))
        self.bias_loss = tf.reduce_mean(tf.square(self.bias - 0.5))
        self.d_opt, self.g_opt = make_train_ops(self.loss, self.bias_loss, rate)


rows = np.random.default_rng(5).normal(size=(320, 4)).astype(np.float32)
answers = (rows @ np.array([[0.3], [-0.8], [1.1], [0.5]])).astype(np.float32)
data = Batches(rows, answers)
pair = Pair(0.05)

steps = 0
rate = None
with tf.Session() as session:
    session.run(tf.global_variables_initializer())
    for epoch in range(2):
        for batch_rows, batch_answers in data.batches(32):
            feed = {pair.inputs: batch_rows, pair.targets: batch_answers}
            if rate is None:
                gradient = tf.gradients(pair.loss, pair.weights)[0]
                before, first_gradient = session.run([pair.weights, gradient], feed_dict=feed)
            session.run(pair.d_opt, feed_dict=feed)
            if rate is None:
                largest = int(np.argmax(np.abs(first_gradient)))
                rate = float((before - session.run(pair.weights)).ravel()[largest] / first_gradient.ravel()[largest])
            session.run(pair.g_opt)
            steps += 1
    final = session.run(pair.weights)

rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": float(final.sum() + np.abs(final).sum()), "steps": steps, "rate": rate, "loops": {"training steps": steps}}, out)
