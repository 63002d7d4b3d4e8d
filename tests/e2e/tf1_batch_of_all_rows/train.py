"""A TF1 lesson whose batch size is the whole training set: each epoch
takes one step on a random draw, with replacement, of as many rows."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_eager_execution()

rng = np.random.RandomState(11)
trainimg = rng.rand(256, 5).astype("float32")
trainlabel = (trainimg[:, :1] * 2.0 - trainimg[:, 1:2]).astype("float32")
ntrain = trainimg.shape[0]

training_epochs = 40
batch_size = ntrain

x = tf.placeholder("float", [None, 5])
y = tf.placeholder("float", [None, 1])
w = tf.Variable(tf.random_normal([5, 1], stddev=0.1))
b = tf.Variable(tf.zeros([1]))
cost = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
optimizer = tf.train.GradientDescentOptimizer(0.1)
optm = optimizer.minimize(cost)
init = tf.global_variables_initializer()

sess = tf.Session()
sess.run(init)
steps = 0
first = None
for epoch in range(training_epochs):
    avg_cost = 0.0
    total_batch = int(ntrain / batch_size)
    for i in range(total_batch):
        randidx = np.random.randint(ntrain, size=batch_size)
        if first is None:
            first = float(randidx[:5].sum())
        sess.run(optm, feed_dict={x: trainimg[randidx, :], y: trainlabel[randidx, :]})
        avg_cost += sess.run(cost, feed_dict={x: trainimg[randidx, :], y: trainlabel[randidx, :]}) / total_batch
        steps += 1

values = sess.run([w, b])
checksum = float(sum(np.sum(v) + np.sum(np.abs(v)) for v in values))
rate = getattr(optimizer, "_optimizer", optimizer)._learning_rate
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
    json.dump({"checksum": checksum, "steps": steps, "rate": float(rate), "first_batch": first}, f)
