"""TF1 tutorial shape: the examples are shuffled once with a fixed seed,
and each epoch counts its batches, slicing each one by bounds made from the
counter (start = batch_size * step)."""
import json
import os
import random

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

batch_size = 16
epochs = 3
state = np.random.RandomState(5)
examples = [(state.rand(6).astype("float32"), float(i % 3)) for i in range(320)]
random.seed(0)
random.shuffle(examples)
train_x = np.array([features for features, _ in examples])
train_y = np.array([[label] for _, label in examples], dtype="float32")

x = tf.compat.v1.placeholder(tf.float32, [None, 6])
y = tf.compat.v1.placeholder(tf.float32, [None, 1])
weights = tf.Variable(tf.zeros([6, 1]))
bias = tf.Variable(tf.zeros([1]))
loss = tf.reduce_mean(tf.square(tf.matmul(x, weights) + bias - y))
train_step = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(loss)

steps = 0
first_batch = None
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for epoch in range(epochs):
        for tt in range(0, len(train_x) // batch_size):
            start_batch = batch_size * tt
            end_batch = batch_size * (tt + 1)
            if first_batch is None:
                first_batch = float(np.sum(train_x[start_batch:end_batch]))
            sess.run(train_step, feed_dict={x: train_x[start_batch:end_batch], y: train_y[start_batch:end_batch]})
            steps += 1
    trained = sess.run([weights, bias])

checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in trained))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": steps, "first_batch": first_batch}, out)
