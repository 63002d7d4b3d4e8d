"""TF1 ensemble: each member is a class holding the session it was given,
with a train method that runs one optimizer step on the batch passed to it.
Every batch trains every member."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_eager_execution()

BATCH = 16
EPOCHS = 2
MEMBERS = 2


class Member:
    def __init__(self, sess, name):
        self.sess = sess
        with tf.variable_scope(name):
            self.x = tf.placeholder(tf.float32, [None, 5])
            self.y = tf.placeholder(tf.float32, [None, 1])
            w = tf.get_variable("w", [5, 1], initializer=tf.glorot_uniform_initializer())
            b = tf.get_variable("b", [1], initializer=tf.zeros_initializer())
            self.cost = tf.reduce_mean(tf.square(tf.matmul(self.x, w) + b - self.y))
            self.step = tf.Variable(0, trainable=False, name="step")
            self.optimizer = tf.train.GradientDescentOptimizer(0.05).minimize(
                self.cost, global_step=self.step
            )

    def train(self, x_data, y_data):
        return self.sess.run([self.cost, self.optimizer], feed_dict={self.x: x_data, self.y: y_data})


def batches(rows):
    """A random batch each call, as a dataset's next_batch gives."""
    x = np.random.rand(rows, 5).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    while True:
        pick = np.random.choice(rows, BATCH, replace=False)
        yield x[pick], y[pick]


sess = tf.Session()
members = []
for index in range(MEMBERS):
    members.append(Member(sess, "member%d" % index))
sess.run(tf.global_variables_initializer())

source = batches(320)
first = None
for epoch in range(EPOCHS):
    total_batch = 320 // BATCH
    for i in range(total_batch):
        batch_x, batch_y = next(source)
        if first is None:
            first = float(batch_x.sum())
        for member in members:
            cost, _ = member.train(batch_x, batch_y)
    print("epoch", epoch, "cost", cost)

values = sess.run(tf.trainable_variables())
steps = int(sess.run(members[0].step))
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
    json.dump({"checksum": float(sum(np.sum(v) + np.sum(np.abs(v)) for v in values)), "steps": steps, "first_batch": first}, f)
