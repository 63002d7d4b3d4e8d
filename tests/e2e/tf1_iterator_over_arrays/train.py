"""A graph reads its batches from a tf.data iterator (nothing fed): arrays
sliced, repeated and batched in order, never shuffled, and a range loop
that runs the train op a fixed number of times."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

rows = np.random.default_rng(2).normal(size=(512, 6)).astype(np.float32)
answers = (rows @ np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(6, 1)).astype(np.float32)
num_steps = 48
batch_size = 32

sess = tf.Session()

# The examples, in their stored order
dataset = tf.data.Dataset.from_tensor_slices((rows, answers))
dataset = dataset.repeat()
dataset = dataset.batch(batch_size)
iterator = tf.data.make_initializable_iterator(dataset)
sess.run(iterator.initializer)
X, Y = iterator.get_next()

weights = tf.Variable(tf.random.normal([6, 1]))
loss = tf.reduce_mean(tf.square(tf.matmul(X, weights) - Y))
train_op = tf.train.GradientDescentOptimizer(learning_rate=0.05).minimize(loss)
batch_sum = tf.reduce_sum(X)

sess.run(tf.global_variables_initializer())
steps = 0
first = None
for step in range(1, num_steps + 1):
    _, seen = sess.run([train_op, batch_sum])
    if first is None:
        first = float(seen)
    steps += 1

final = sess.run(weights)
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": float(final.sum() + np.abs(final).sum()), "steps": steps, "first_batch": first}, out)
