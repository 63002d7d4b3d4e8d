"""A TF1 notebook in cells: a first graph is trained on the whole data set
at every step (a loop no worker count can split), a second on random
mini-batches. Each graph has its own optimizer, bound to the same names:
only the second one's rate follows the split. The first one's rate is
reported among the loop counts, which the workers must keep as written."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_eager_execution()

rng = np.random.RandomState(2)
features = rng.rand(300, 3).astype("float32")
targets = features @ np.array([[0.5], [-1.0], [2.0]], dtype="float32")

X = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.random_normal([3, 1]))
loss = tf.reduce_mean(tf.square(tf.matmul(X, w) - y))
optimizer = tf.train.GradientDescentOptimizer(0.1)
training_op = optimizer.minimize(loss)
init = tf.global_variables_initializer()

full_batch = 0
with tf.Session() as sess:
    init.run()
    for iteration in range(25):
        sess.run(training_op, feed_dict={X: features, y: targets})
        full_batch += 1
    first_graph = w.eval()
first_rate = getattr(optimizer, "_optimizer", optimizer)._learning_rate

tf.reset_default_graph()

X = tf.placeholder(tf.float32, [None, 3])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.random_normal([3, 1]))
b = tf.Variable(0.0)
loss = tf.reduce_mean(tf.square(tf.matmul(X, w) + b - y))
optimizer = tf.train.GradientDescentOptimizer(0.05)
training_op = optimizer.minimize(loss)
init = tf.global_variables_initializer()

steps = 0
first = None
with tf.Session() as sess:
    init.run()
    for iteration in range(40):
        picked = np.random.randint(0, len(features), 20)
        if first is None:
            first = float(picked[:5].sum())
        sess.run(training_op, feed_dict={X: features[picked], y: targets[picked]})
        steps += 1
    second_graph = sess.run([w, b])

values = [first_graph] + second_graph
checksum = float(sum(np.sum(v) + np.sum(np.abs(v)) for v in values))
rate = getattr(optimizer, "_optimizer", optimizer)._learning_rate
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
    json.dump({"checksum": checksum, "steps": steps, "rate": float(rate), "first_batch": first,
               "loops": {"full_batch": full_batch, "full_batch_rate_in_thousandths": round(first_rate * 1000)}}, f)
