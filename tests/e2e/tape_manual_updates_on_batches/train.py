"""A line fitted by hand-written gradient descent on mini-batches of a
dataset: no optimizer, the variables are updated with assign_sub."""
import json
import os

import numpy as np
import tensorflow as tf

rows = np.random.RandomState(2).rand(256).astype("float32")
targets = 3.0 * rows + 2.0
dataset = tf.data.Dataset.from_tensor_slices((rows, targets)).batch(32)

W = tf.Variable(0.0)
b = tf.Variable(0.0)
learning_rate = 0.1

steps = 0
first_batch = None
for epoch in range(4):
    for x, y in dataset:
        if first_batch is None:
            first_batch = float(np.sum(x.numpy()))
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(W * x + b - y))
        dW, db = tape.gradient(loss, [W, b])
        W.assign_sub(learning_rate * dW)
        b.assign_sub(learning_rate * db)
        steps += 1
print("W", W.numpy(), "b", b.numpy())

checksum = float(np.abs(W.numpy()) + W.numpy() + np.abs(b.numpy()) + b.numpy())
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": steps, "rate": learning_rate, "first_batch": first_batch}, out)
