"""A TF1 lesson: a first graph only shows how variables are initialised,
then a regression graph is trained in a session of its own, and trained
again from scratch in a second session fetching its ops by name."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_eager_execution()

demo = tf.Graph()
with demo.as_default():
    w = tf.Variable(np.array([1.0, 2.0]), name="w")
with tf.Session(graph=demo) as sess:
    sess.run(tf.global_variables_initializer())
    print("initialised:", sess.run(w))

g = tf.Graph()
with g.as_default():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    y = tf.placeholder(tf.float32, [None, 1], name="y")
    weight = tf.Variable(tf.random_normal([3, 1]), name="weight")
    cost = tf.reduce_mean(tf.square(tf.matmul(x, weight) - y), name="cost")
    step = tf.train.get_or_create_global_step()
    train_op = tf.train.GradientDescentOptimizer(0.05).minimize(cost, global_step=step, name="train_op")

data = np.random.rand(320, 3).astype("float32")
target = data.sum(axis=1, keepdims=True)
first = None
with tf.Session(graph=g) as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(40):
        picked = np.random.randint(0, len(data), 16)
        if first is None:
            first = float(data[picked].sum())
        sess.run(train_op, feed_dict={x: data[picked], y: target[picked]})

with tf.Session(graph=g) as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(40):
        picked = np.random.randint(0, len(data), 16)
        sess.run(["cost:0", "train_op"], feed_dict={"x:0": data[picked], "y:0": target[picked]})
    values = sess.run(weight)
    steps = int(sess.run(step))

with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
    json.dump({"checksum": float(np.sum(values) + np.sum(np.abs(values))), "steps": steps, "first_batch": first}, f)
