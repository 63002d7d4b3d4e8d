"""Tutorial-style graph code: one session at the top, training run in stages."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

x = tf.placeholder(tf.float32, [None, 4])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.random_normal([4, 1], stddev=0.5))
cost = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
optimizer = tf.train.AdamOptimizer(learning_rate=1e-2).minimize(cost)

session = tf.Session()
session.run(tf.global_variables_initializer())
total_iterations = 0
steps = 0


def random_batch(size):
    points = np.random.rand(size, 4).astype(np.float32)
    return points, points.sum(axis=1, keepdims=True)


def optimize(num_iterations):
    global total_iterations, steps
    for i in range(total_iterations, total_iterations + num_iterations):
        x_batch, y_batch = random_batch(32)
        session.run(optimizer, feed_dict={x: x_batch, y: y_batch})
        steps += 1
    total_iterations += num_iterations


optimize(num_iterations=20)
optimize(num_iterations=40)
final = session.run(w)

rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": float(final.sum() + np.abs(final).sum()), "steps": steps}, f)
