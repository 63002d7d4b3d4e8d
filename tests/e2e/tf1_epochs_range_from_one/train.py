"""TF1 tutorial style: epochs counted from 1, mini-batches drawn by a
helper, a running average of the cost, a prediction loop after training."""
import json
import os

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
np.random.seed(7)

learning_rate = 0.05
training_epochs = 3
batch_size = 16
n_examples = 640
display_step = 1

features = np.random.normal(size=(n_examples, 6)).astype(np.float32)
targets = (features @ np.arange(1, 7, dtype=np.float32).reshape(6, 1)) * 0.1
cursor = 0
first_batch = None


def next_batch(size):
    global cursor, first_batch
    order = np.random.randint(0, n_examples, size=size)
    if first_batch is None:
        first_batch = float(np.sum(features[order]))
    cursor += size
    return features[order], targets[order]


X = tf.compat.v1.placeholder(tf.float32, [None, 6])
Y = tf.compat.v1.placeholder(tf.float32, [None, 1])
W = tf.Variable(tf.compat.v1.random_normal([6, 1]))
b = tf.Variable(tf.zeros([1]))
pred = tf.matmul(X, W) + b
cost = tf.reduce_mean(tf.square(pred - Y))
optimizer = tf.compat.v1.train.GradientDescentOptimizer(learning_rate).minimize(cost)
init = tf.compat.v1.global_variables_initializer()

steps = 0
predictions = 0
with tf.compat.v1.Session() as sess:
    sess.run(init)
    for epoch in range(1, training_epochs + 1):
        avg_cost = 0.
        total_batch = int(n_examples / batch_size)
        for i in range(total_batch):
            batch_xs, batch_ys = next_batch(batch_size)
            _, c = sess.run([optimizer, cost], feed_dict={X: batch_xs, Y: batch_ys})
            avg_cost += c / total_batch
            steps += 1
        if epoch % display_step == 0:
            print("Epoch:", '%04d' % epoch, "cost=", "{:.9f}".format(avg_cost))
    # A few predictions after training: not training, never divided.
    for i in range(4):
        value = sess.run(pred, feed_dict={X: features[i:i + 1]})
        predictions += 1
    weights = sess.run(tf.compat.v1.trainable_variables())

checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in weights))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": steps, "first_batch": first_batch,
               "loops": {"predictions": predictions}}, out)
