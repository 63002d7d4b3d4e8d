"""A graph-mode model class that keeps its own initializer op as an attribute;
a training function takes the model and runs `sess.run(model.init_op)`."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

FEATURES = 8
CLASSES = 3


class Classifier(object):
    def __init__(self, hidden):
        self.inputs = tf.placeholder(tf.float32, [None, FEATURES])
        self.labels = tf.placeholder(tf.int64, [None])
        self.w1 = tf.Variable(tf.random_normal([FEATURES, hidden], stddev=0.3))
        self.w2 = tf.Variable(tf.random_normal([hidden, CLASSES], stddev=0.3))
        logits = tf.matmul(tf.nn.relu(tf.matmul(self.inputs, self.w1)), self.w2)
        self.loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=self.labels, logits=logits))
        self.learning_rate = tf.constant(0.05)
        self.optimizer = tf.train.GradientDescentOptimizer(0.05).minimize(self.loss)
        self.init_op = tf.global_variables_initializer()


def draw(batch):
    labels = np.random.randint(CLASSES, size=batch)
    points = np.random.normal(size=(batch, FEATURES)) + labels[:, None]
    return points.astype(np.float32), labels


def train_model(model, epochs):
    steps = 0
    with tf.Session() as sess:
        sess.run(model.init_op)
        for i in range(epochs):
            points, labels = draw(16)
            loss, _ = sess.run([model.loss, model.optimizer],
                               feed_dict={model.inputs: points, model.labels: labels})
            steps += 1
        return sess.run([model.w1, model.w2]), steps


model = Classifier(16)
weights, steps = train_model(model, 40)
checksum = float(sum(w.sum() + np.abs(w).sum() for w in weights))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": checksum, "steps": steps}, f)
