"""A graph-mode step loop that cuts each batch at a modular offset of the
step, `(step * batch_size) % (rows - batch_size)`, over arrays every
process builds the same way."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

rng = np.random.default_rng(3)
table = rng.normal(size=(700, 5)).astype(np.float32)
answers = (table @ np.array([[0.3], [-0.7], [1.1], [0.0], [2.0]])).astype(np.float32)
batch_size = 32
num_steps = 80

inputs = tf.placeholder(tf.float32, [batch_size, 5])
targets = tf.placeholder(tf.float32, [batch_size, 1])
weights = tf.Variable(tf.random.normal([5, 1]))
loss = tf.reduce_mean(tf.square(tf.matmul(inputs, weights) - targets))
train_step = tf.train.GradientDescentOptimizer(0.05).minimize(loss)

steps = 0
first = None
with tf.Session() as session:
    tf.global_variables_initializer().run()
    for step in range(num_steps):
        offset = (step * batch_size) % (answers.shape[0] - batch_size)
        batch_inputs = table[offset:(offset + batch_size), :]
        batch_targets = answers[offset:(offset + batch_size), :]
        if first is None:
            first = float(batch_inputs.sum())
        _, value = session.run([train_step, loss], feed_dict={inputs: batch_inputs, targets: batch_targets})
        steps += 1
        if step % 20 == 0:
            print("step", step, "loss", value)
    final = session.run(weights)

rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": float(final.sum() + np.abs(final).sum()), "steps": steps, "first_batch": first}, out)
