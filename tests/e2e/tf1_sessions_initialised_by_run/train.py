"""A TF1 lesson in notebook style: each graph gets its own sessions, whose
variables are initialised with `init.run()`. The first graph is evaluated
once, then trained on the whole data set at every step; the second is
trained in two phases whose train ops are kept in a list, first on random
batches a data object draws, then on a generator's shuffled batches. Each
training session saves a checkpoint, keeping the path `save` returns under
a name that the next one binds again. A cursor kept in a global walks the
samples shown at the end, and no training loop calls it."""
import json
import logging
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_eager_execution()

rng = np.random.RandomState(7)
features = rng.rand(320, 3).astype("float32")
targets = features.sum(axis=1, keepdims=True)


class Batches:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def next_batch(self, size):
        picked = np.random.randint(0, len(self.x), size)
        return self.x[picked], self.y[picked]


def shuffle_batch(x, y, batch_size):
    order = np.random.permutation(len(x))
    for batch in np.array_split(order, len(x) // batch_size):
        yield x[batch], y[batch]


data = Batches(features, targets)
sample_index = 0


def next_sample():
    global sample_index
    sample = features[sample_index:sample_index + 4]
    sample_index = (sample_index + 4) % len(features)
    return sample

checkpoints = os.path.join(os.environ.get("RESULT_DIR", "."), "checkpoints")
os.makedirs(checkpoints, exist_ok=True)

x1 = tf.placeholder(tf.float32, [None, 3])
y1 = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.random_normal([3, 1]))
cost = tf.reduce_mean(tf.square(tf.matmul(x1, w) - y1))
training_op = tf.train.GradientDescentOptimizer(0.05).minimize(cost)
init = tf.global_variables_initializer()

with tf.Session() as sess:
    init.run()
    initial_cost = cost.eval(feed_dict={x1: features, y1: targets})

full_batch = 0
with tf.Session() as sess:
    init.run()
    for iteration in range(30):
        training_op.run(feed_dict={x1: features, y1: targets})
        logging.info("full-batch step %d", iteration)
        full_batch += 1
    first_graph = w.eval()
    save_path = tf.train.Saver().save(sess, os.path.join(checkpoints, "first_graph.ckpt"))

tf.reset_default_graph()

X = tf.placeholder(tf.float32, [None, 3])
Y = tf.placeholder(tf.float32, [None, 1])
w_hidden = tf.Variable(tf.random_normal([3, 4]))
w_out = tf.Variable(tf.random_normal([4, 1]))
prediction = tf.matmul(tf.nn.relu(tf.matmul(X, w_hidden)), w_out)
loss = tf.reduce_mean(tf.square(prediction - Y))
optimizer = tf.train.GradientDescentOptimizer(0.01)
phase1_training_op = optimizer.minimize(loss, var_list=[w_out])
phase2_training_op = optimizer.minimize(loss)
training_ops = [phase1_training_op, phase2_training_op]
init = tf.global_variables_initializer()

steps = 0
first = None
with tf.Session() as sess:
    init.run()
    for phase in range(2):
        if phase == 0:
            for iteration in range(20):
                x_batch, y_batch = data.next_batch(16)
                if first is None:
                    first = float(x_batch[:5, 0].sum())
                sess.run(training_ops[phase], feed_dict={X: x_batch, Y: y_batch})
                steps += 1
        else:
            for epoch in range(4):
                for x_batch, y_batch in shuffle_batch(features, targets, 32):
                    sess.run(training_ops[phase], feed_dict={X: x_batch, Y: y_batch})
                    steps += 1
    second_graph = sess.run([w_hidden, w_out])
    save_path = tf.train.Saver().save(sess, os.path.join(checkpoints, "second_graph.ckpt"))

shown = 0
for _ in range(3):
    print(next_sample().sum())
    shown += 1

values = [first_graph] + second_graph
checksum = float(sum(np.sum(v) + np.sum(np.abs(v)) for v in values))
rate = getattr(optimizer, "_optimizer", optimizer)._learning_rate
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
    json.dump({"checksum": checksum, "steps": steps, "rate": float(rate), "first_batch": first,
               "loops": {"full_batch": full_batch, "shown": shown}}, f)
