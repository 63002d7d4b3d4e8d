"""A skip-gram style helper that walks the data with a module-level cursor
(`global position`, advanced modulo the data): every process walks the same
positions, so the step loop must stay whole and the rate as written."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

corpus = np.random.default_rng(11).normal(size=(500, 4)).astype(np.float32)
labels = (corpus @ np.array([[0.4], [-1.2], [0.7], [2.1]])).astype(np.float32)
position = 0


def next_examples(count):
    global position
    rows = np.zeros((count, 4), dtype=np.float32)
    answers = np.zeros((count, 1), dtype=np.float32)
    for slot in range(count):
        rows[slot] = corpus[position]
        answers[slot] = labels[position]
        position = (position + 1) % len(corpus)
    return rows, answers


inputs = tf.placeholder(tf.float32, [None, 4])
targets = tf.placeholder(tf.float32, [None, 1])
weights = tf.Variable(tf.random.normal([4, 1]))
loss = tf.reduce_mean(tf.square(tf.matmul(inputs, weights) - targets))
gradient = tf.gradients(loss, weights)[0]
train_op = tf.train.GradientDescentOptimizer(0.05).minimize(loss)

steps = 0
rate = None
with tf.Session() as session:
    session.run(tf.global_variables_initializer())
    for step in range(60):
        batch_rows, batch_answers = next_examples(16)
        feed = {inputs: batch_rows, targets: batch_answers}
        if rate is None:
            before, first_gradient = session.run([weights, gradient], feed_dict=feed)
        session.run(train_op, feed_dict=feed)
        if rate is None:
            # Plain gradient descent: the first step moved the weights by rate * gradient.
            largest = int(np.argmax(np.abs(first_gradient)))
            rate = float((before - session.run(weights)).ravel()[largest] / first_gradient.ravel()[largest])
        steps += 1
    final = session.run(weights)

rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": float(final.sum() + np.abs(final).sum()), "steps": steps, "rate": rate, "loops": {"training steps": steps}}, out)
