"""Logistic regression in graph mode, batches cut from arrays by a cursor."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

# The same table in every process: only the split makes the workers' batches differ.
table = np.random.default_rng(3).normal(size=(650, 5)).astype(np.float32)
labels = (table @ np.array([[1.0], [-2.0], [0.5], [0.0], [1.5]], dtype=np.float32) > 0).astype(np.float32)

X = tf.placeholder(tf.float32, [None, 5])
Y = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.random_normal([5, 1], stddev=0.5))
b = tf.Variable(tf.zeros([1]))
loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=Y, logits=tf.matmul(X, w) + b))
train_op = tf.train.GradientDescentOptimizer(0.2).minimize(loss)

steps = 0
first_batch = None
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for epoch in range(3):
        for start, end in zip(range(0, len(table), 32), range(32, len(table) + 1, 32)):
            if first_batch is None:
                first_batch = float(table[start:end].sum())
            sess.run(train_op, feed_dict={X: table[start:end], Y: labels[start:end]})
            steps += 1
        print("epoch", epoch, "loss", sess.run(loss, feed_dict={X: table, Y: labels}))
    final = sess.run([w, b])

checksum = float(sum(v.sum() + np.abs(v).sum() for v in final))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": checksum, "steps": steps, "first_batch": first_batch, "loops": {"epochs": 3}}, f)
