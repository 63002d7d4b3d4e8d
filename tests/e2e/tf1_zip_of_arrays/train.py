"""TF1 linear regression fed one example at a time from two zipped arrays."""
import json
import os

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

# The same points in every process: only a split makes the workers' examples differ.
train_X = np.linspace(-1.0, 1.0, 40).astype("float32")
train_Y = 3.0 * train_X + 0.5

X = tf.compat.v1.placeholder(tf.float32)
Y = tf.compat.v1.placeholder(tf.float32)
W = tf.Variable(np.random.randn(), dtype=tf.float32, name="weight")
b = tf.Variable(np.random.randn(), dtype=tf.float32, name="bias")
global_step = tf.compat.v1.train.get_or_create_global_step()
cost = tf.square(X * W + b - Y) / 2.0
optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(cost, global_step=global_step)

first = None
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for epoch in range(4):
        for (x, y) in zip(train_X, train_Y):
            if first is None:
                first = float(x)
            sess.run(optimizer, feed_dict={X: x, Y: y})
    weights = sess.run([W, b])
    steps = int(sess.run(global_step))

out_dir = os.environ.get("RESULT_DIR", ".")
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(out_dir, "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": float(sum(abs(w) + w for w in weights)), "steps": steps, "first_batch": first}, f)
