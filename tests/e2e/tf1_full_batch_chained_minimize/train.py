"""Fit a small curve in graph mode; every step feeds the whole table."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

x_table = np.linspace(-1.0, 1.0, 24).reshape(-1, 1).astype(np.float32)
y_table = (np.sin(3.0 * x_table) + 0.5 * x_table).astype(np.float32)

X = tf.placeholder(tf.float32, [None, 1])
Y = tf.placeholder(tf.float32, [None, 1])
hidden = tf.layers.dense(X, 16, activation=tf.nn.tanh, name="hidden")
output = tf.layers.dense(hidden, 1, name="output")
cost = tf.reduce_mean(tf.square(output - Y))
# The output kernel: its gradient is never zero here (the bias's is, on
# this symmetric table), so one plain step measures the rate.
with tf.variable_scope("output", reuse=True):
    kernel = tf.get_variable("kernel")
kernel_gradient = tf.gradients(cost, kernel)[0]
train = tf.train.GradientDescentOptimizer(learning_rate=0.1).minimize(cost)

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    steps = 0
    rate = None
    for step in range(120):
        before, gradient = sess.run([kernel, kernel_gradient], feed_dict={X: x_table, Y: y_table})
        _, value = sess.run([train, cost], feed_dict={X: x_table, Y: y_table})
        if rate is None:
            # Plain gradient descent: the first step moved the kernel by rate * gradient.
            largest = int(np.argmax(np.abs(gradient)))
            rate = float((before - sess.run(kernel)).ravel()[largest] / gradient.ravel()[largest])
        steps += 1
        if step % 40 == 0:
            print("step", step, "cost", value)
    weights = sess.run(tf.trainable_variables())
    checksum = float(sum(w.sum() + np.abs(w).sum() for w in weights))

out_dir = os.environ.get("RESULT_DIR", ".")
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(out_dir, "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": checksum, "steps": steps, "rate": rate, "loops": {"training steps": steps}}, f)
