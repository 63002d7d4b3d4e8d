"""Graph-mode regression on a fixed synthetic table, every step the whole table;
each step also fetches the merged summaries and writes them. The initializer is
a `tf.group` of the global and local ones; the seeds are fixed at the top."""
import json
import os
import tempfile

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

tf.set_random_seed(1)
np.random.seed(1)

x = np.linspace(-1, 1, 40)[:, np.newaxis].astype(np.float32)
y = (np.power(x, 2) + np.random.normal(0, 0.1, size=x.shape)).astype(np.float32)

tf_x = tf.placeholder(tf.float32, x.shape)
tf_y = tf.placeholder(tf.float32, y.shape)
hidden = tf.layers.dense(tf_x, 8, tf.nn.relu, name="hidden")
output = tf.layers.dense(hidden, 1, name="output")
tf.summary.histogram("prediction", output)
loss = tf.losses.mean_squared_error(tf_y, output)
tf.summary.scalar("loss", loss)
with tf.variable_scope("output", reuse=True):
    kernel = tf.get_variable("kernel")
kernel_gradient = tf.gradients(loss, kernel)[0]
train_op = tf.train.GradientDescentOptimizer(learning_rate=0.2).minimize(loss)

sess = tf.Session()
init_op = tf.group(tf.global_variables_initializer(), tf.local_variables_initializer())
sess.run(init_op)
writer = tf.summary.FileWriter(tempfile.mkdtemp(), sess.graph)
merge_op = tf.summary.merge_all()

steps = 0
rate = None
for step in range(60):
    before, gradient = sess.run([kernel, kernel_gradient], {tf_x: x, tf_y: y})
    _, result = sess.run([train_op, merge_op], {tf_x: x, tf_y: y})
    writer.add_summary(result, step)
    if rate is None:
        # Plain gradient descent: the first step moved the kernel by rate * gradient.
        largest = int(np.argmax(np.abs(gradient)))
        rate = float((before - sess.run(kernel)).ravel()[largest] / gradient.ravel()[largest])
    steps += 1

weights = sess.run(tf.trainable_variables())
checksum = float(sum(w.sum() + np.abs(w).sum() for w in weights))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": checksum, "steps": steps, "rate": rate, "loops": {"training steps": steps}}, f)
