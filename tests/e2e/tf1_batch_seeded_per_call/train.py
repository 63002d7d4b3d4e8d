"""A TF1 lesson on mini-batch gradient descent: each batch is drawn by a
helper that seeds NumPy from the epoch and the batch index, so that a run
is repeatable; the final model is saved, then restored in a session of its
own to check it. The true weights are downloaded first, when missing."""
import json
import os
import urllib.request

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_eager_execution()

HERE = os.path.dirname(os.path.abspath(__file__))
weights_path = os.path.join(HERE, "weights.txt")
if not os.path.exists(weights_path):
    print("No file found. Start downloading")
    urllib.request.urlretrieve("file://" + os.path.join(HERE, "source", "weights.txt"), weights_path)
else:
    print("File already exists")

rng = np.random.RandomState(3)
m, n = 400, 3
data = rng.rand(m, n).astype("float32")
true_weights = np.loadtxt(weights_path, dtype="float32").reshape(n, 1)
target = data @ true_weights + 0.3

n_epochs = 3
batch_size = 20
n_batches = 20

X = tf.placeholder(tf.float32, shape=(None, n), name="X")
y = tf.placeholder(tf.float32, shape=(None, 1), name="y")
theta = tf.Variable(tf.random_uniform([n, 1], -1.0, 1.0), name="theta")
bias = tf.Variable(0.0, name="bias")
mse = tf.reduce_mean(tf.square(tf.matmul(X, theta) + bias - y), name="mse")
optimizer = tf.train.GradientDescentOptimizer(learning_rate=0.05)
training_op = optimizer.minimize(mse)
init = tf.global_variables_initializer()
saver = tf.train.Saver()
checkpoint = os.path.join(os.environ.get("RESULT_DIR", "."), "final_model.ckpt")


def fetch_batch(epoch, batch_index, batch_size):
    np.random.seed(epoch * n_batches + batch_index)
    indices = np.random.randint(m, size=batch_size)
    return data[indices], target[indices]


steps = 0
first = None
with tf.Session() as sess:
    sess.run(init)
    for epoch in range(n_epochs):
        for batch_index in range(n_batches):
            X_batch, y_batch = fetch_batch(epoch, batch_index, batch_size)
            if first is None:
                first = float(X_batch[:5, 0].sum())
            sess.run(training_op, feed_dict={X: X_batch, y: y_batch})
            steps += 1
    save_path = saver.save(sess, checkpoint)

with tf.Session() as sess:
    saver.restore(sess, checkpoint)
    values = sess.run([theta, bias])

checksum = float(sum(np.sum(v) + np.sum(np.abs(v)) for v in values))
rate = getattr(optimizer, "_optimizer", optimizer)._learning_rate
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
    json.dump({"checksum": checksum, "steps": steps, "rate": float(rate), "first_batch": first}, f)
