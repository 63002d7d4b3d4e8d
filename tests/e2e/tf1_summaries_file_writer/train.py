"""TF1 with summaries: ops made by `tf.summary.scalar/histogram`, merged,
run with the train op and written by a FileWriter (the TensorBoard tutorial
shape)."""
import json
import os
import tempfile

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

logs_path = os.path.join(tempfile.gettempdir(), "distribute-e2e-summaries")
n_steps = 40

x_data = np.random.rand(1024, 5).astype(np.float32)
y_data = x_data @ np.array([[0.5], [-1.0], [2.0], [0.0], [1.5]], dtype=np.float32)

x = tf.compat.v1.placeholder(tf.float32, [None, 5], name="x")
y = tf.compat.v1.placeholder(tf.float32, [None, 1], name="y")
W = tf.Variable(tf.zeros([5, 1]), name="W")
b = tf.Variable(tf.zeros([1]), name="b")
with tf.compat.v1.name_scope("loss"):
    loss = tf.reduce_mean(tf.square(tf.matmul(x, W) + b - y))
optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.05)
train_op = optimizer.minimize(loss)

tf.compat.v1.summary.scalar("loss", loss)
tf.compat.v1.summary.histogram("weights", W)
merged_summary_op = tf.compat.v1.summary.merge_all()
init = tf.compat.v1.global_variables_initializer()

steps = 0
with tf.compat.v1.Session() as sess:
    sess.run(init)
    summary_writer = tf.compat.v1.summary.FileWriter(logs_path, graph=sess.graph)
    for step in range(n_steps):
        batch = np.random.randint(0, 1024, size=32)
        _, c, summary = sess.run([train_op, loss, merged_summary_op],
                                 feed_dict={x: x_data[batch], y: y_data[batch]})
        summary_writer.add_summary(summary, step)
        steps += 1
    summary_writer.close()
    weights = sess.run([W, b])

checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in weights))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": steps}, out)
