"""A graph-mode trainer class: its input pipeline comes from a helper module
that downloads the data the first time (and builds graph ops), and its
checkpoint is saved by a method handed the saver."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

from inputs import pipeline

tf.disable_v2_behavior()

HERE = os.path.dirname(os.path.abspath(__file__))
URL = "file://" + os.path.join(HERE, "remote", "rows.csv.gz")


class Regression:
    def __init__(self, batch_size):
        self.batch_size = batch_size

    def build(self):
        with tf.name_scope("data"):
            data = pipeline.training_pipeline(URL, "data", self.batch_size)
            iterator = tf.data.make_initializable_iterator(data)
            self.start_epoch = iterator.initializer
            rows, answers = iterator.get_next()
        self.weights = tf.Variable(tf.zeros([3, 1]))
        self.loss = tf.reduce_mean(tf.square(tf.matmul(rows, self.weights) - answers))
        self.train_op = tf.train.GradientDescentOptimizer(0.1).minimize(self.loss)

    def keep(self, sess, saver, epoch):
        saver.save(sess, os.path.join("checkpoints", "regression"), epoch)

    def train(self, epochs):
        steps = 0
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            saver = tf.train.Saver()
            for epoch in range(epochs):
                sess.run(self.start_epoch)
                try:
                    while True:
                        sess.run(self.train_op)
                        steps += 1
                except tf.errors.OutOfRangeError:
                    pass
                self.keep(sess, saver, epoch)
            final = sess.run(self.weights)
        return steps, final


model = Regression(32)
model.build()
steps, final = model.train(6)
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": float(final.sum() + np.abs(final).sum()), "steps": steps, "loops": {"training steps": steps}}, out)
