"""A tutorial's two cells: first the gradient of w*w is shown, then a line
is fitted by hand-written gradient descent on variables that start at 0."""
import json
import os

import numpy as np
import tensorflow as tf

w = tf.Variable(3.0)
with tf.GradientTape() as tape:
    loss = w * w
slope = tape.gradient(loss, w)
print("the gradient of w*w at 3 is", slope.numpy())

inputs = tf.random.normal([256])
targets = inputs * 3.0 + 2.0 + tf.random.normal([256], stddev=0.1)
W = tf.Variable(0.0)
b = tf.Variable(0.0)
learning_rate = 0.05

steps = 0
for step in range(40):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(inputs * W + b - targets))
    dW, db = tape.gradient(loss, [W, b])
    W.assign_sub(learning_rate * dW)
    b.assign_sub(learning_rate * db)
    steps += 1
print("W", W.numpy(), "b", b.numpy())

checksum = float(np.abs(W.numpy()) + W.numpy() + np.abs(b.numpy()) + b.numpy())
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": steps, "rate": learning_rate, "loops": {"training steps": steps}}, out)
