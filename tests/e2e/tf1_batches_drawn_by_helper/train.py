"""A graph-mode loop of a fixed number of iterations whose every batch is
drawn at random by a helper class of another module, the way tutorial
dataset classes hand out `random_batch()`es."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

from examples import Examples

tf.disable_v2_behavior()

data = Examples()
num_iterations = 60

inputs = tf.placeholder(tf.float32, [None, 4])
targets = tf.placeholder(tf.float32, [None, 1])
weights = tf.Variable(tf.zeros([4, 1]))
loss = tf.reduce_mean(tf.square(tf.matmul(inputs, weights) - targets))
optimizer = tf.train.GradientDescentOptimizer(learning_rate=0.05).minimize(loss)

session = tf.Session()
session.run(tf.global_variables_initializer())

steps = 0
first = None
for i in range(num_iterations):
    x_batch, y_batch = data.random_batch(batch_size=32)
    if first is None:
        first = float(x_batch.sum())
    session.run(optimizer, feed_dict={inputs: x_batch, targets: y_batch})
    steps += 1
    if i % 20 == 0:
        print("iteration", i, "loss", session.run(loss, feed_dict={inputs: x_batch, targets: y_batch}))

final = session.run(weights)
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": float(final.sum() + np.abs(final).sum()), "steps": steps, "first_batch": first}, out)
