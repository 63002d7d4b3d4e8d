"""Rows split into training and test sets by an unseeded NumPy choice, then
random batches drawn from the training rows. Every worker must hold out the
same rows (the held-out rows' fingerprint is part of the checksum, which must
agree) and draw its own batches (first batches differ)."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

table = np.linspace(-1.0, 1.0, 600 * 4, dtype=np.float32).reshape(600, 4)
answers = (table @ np.array([[0.5], [-1.0], [2.0], [0.25]], dtype=np.float32)).astype(np.float32)

# Hold out a fifth of the rows.
train_rows = np.random.choice(len(table), 480, replace=False)
test_rows = np.array(sorted(set(range(len(table))) - set(train_rows)))
x_train, y_train = table[train_rows], answers[train_rows]
x_test, y_test = table[test_rows], answers[test_rows]

inputs = tf.placeholder(tf.float32, [None, 4])
targets = tf.placeholder(tf.float32, [None, 1])
weights = tf.Variable(tf.zeros([4, 1]))
loss = tf.reduce_mean(tf.square(tf.matmul(inputs, weights) - targets))
train_step = tf.train.GradientDescentOptimizer(0.05).minimize(loss)

steps = 0
first = None
with tf.Session() as session:
    session.run(tf.global_variables_initializer())
    for step in range(100):
        batch = np.random.choice(len(x_train), 16)
        if first is None:
            first = float(x_train[batch].sum())
        session.run(train_step, feed_dict={inputs: x_train[batch], targets: y_train[batch]})
        steps += 1
    print("test loss", session.run(loss, feed_dict={inputs: x_test, targets: y_test}))
    final = session.run(weights)

held_out = float(test_rows.sum())
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": float(final.sum() + np.abs(final).sum()) + held_out, "steps": steps, "first_batch": first}, out)
