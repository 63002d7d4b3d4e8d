"""A TF1 script whose data is generated under a fixed seed, then shuffled
in place at the start of every epoch and walked by a `while` loop that cuts
batches until the end of the rows."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_eager_execution()
np.random.seed(1)

EPOCHS = 6
BATCH = 32
x = np.linspace(-2, 2, 320)[:, None]
noise = np.random.normal(0, 0.1, x.shape)
train_data = np.hstack((x, x ** 2 + noise)).astype("float32")

tf_x = tf.placeholder(tf.float32, [None, 1])
tf_y = tf.placeholder(tf.float32, [None, 1])
hidden = tf.layers.dense(tf_x, 8, tf.nn.relu)
output = tf.layers.dense(hidden, 1)
loss = tf.losses.mean_squared_error(tf_y, output)
optimizer = tf.train.GradientDescentOptimizer(0.05)
train_op = optimizer.minimize(loss)

sess = tf.Session()
sess.run(tf.global_variables_initializer())

steps = 0
first = None
for epoch in range(EPOCHS):
    np.random.shuffle(train_data)
    step = 0
    in_epoch = True
    while in_epoch:
        start, end = (step * BATCH) % len(train_data), ((step + 1) * BATCH) % len(train_data)
        step += 1
        if end <= start:
            end = len(train_data)
            in_epoch = False
        b_x, b_y = train_data[start:end, 0:1], train_data[start:end, 1:2]
        if first is None:
            first = float(b_x[:5, 0].sum())
        sess.run(train_op, {tf_x: b_x, tf_y: b_y})
        steps += 1

values = sess.run(tf.trainable_variables())
checksum = float(sum(np.sum(v) + np.sum(np.abs(v)) for v in values))
rate = getattr(optimizer, "_optimizer", optimizer)._learning_rate
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
    json.dump({"checksum": checksum, "steps": steps, "rate": float(rate), "first_batch": first}, f)
