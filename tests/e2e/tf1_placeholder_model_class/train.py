"""TF1-style MLP: the graph lives in a Model class, batches are fed from numpy."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_eager_execution()

flags = tf.app.flags
flags.DEFINE_integer("num_steps", 40, "training steps")
flags.DEFINE_integer("batch_size", 50, "minibatch size")
flags.DEFINE_float("learning_rate", 0.05, "learning rate")
flags.DEFINE_float("momentum", 0.9, "momentum")
flags.DEFINE_string("save_path", "saved/mlp.ckpt", "where the final weights go")
FLAGS = flags.FLAGS


class Model(object):
    def __init__(self, n_in, n_hidden, n_out):
        self.x = tf.placeholder(tf.float32, shape=[None, n_in], name="x")
        self.y = tf.placeholder(tf.int32, shape=[None], name="y")
        self.keep_prob = tf.placeholder_with_default(1.0, shape=[], name="keep_prob")

        w1 = tf.get_variable("w1", [n_in, n_hidden], initializer=tf.glorot_uniform_initializer())
        b1 = tf.get_variable("b1", [n_hidden], initializer=tf.zeros_initializer())
        w2 = tf.get_variable("w2", [n_hidden, n_out], initializer=tf.glorot_uniform_initializer())
        b2 = tf.get_variable("b2", [n_out], initializer=tf.zeros_initializer())

        hidden = tf.nn.dropout(tf.nn.relu(tf.matmul(self.x, w1) + b1), rate=1 - self.keep_prob)
        self.logits = tf.matmul(hidden, w2) + b2
        self.loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels=self.y, logits=self.logits)
        )
        correct = tf.equal(tf.cast(tf.argmax(self.logits, 1), tf.int32), self.y)
        self.accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))

        self.global_step = tf.Variable(0, trainable=False, name="global_step")
        self.optimizer = tf.train.MomentumOptimizer(FLAGS.learning_rate, FLAGS.momentum, use_nesterov=True)
        self.train_op = self.optimizer.minimize(self.loss, global_step=self.global_step)


def make_data(n, n_in=20, n_out=5):
    prototypes = np.random.randn(n_out, n_in)
    y = np.random.randint(n_out, size=n)
    x = prototypes[y] + 0.8 * np.random.randn(n, n_in)
    return x.astype(np.float32), y.astype(np.int32)


def main(_):
    x_train, y_train = make_data(5000)
    model = Model(20, 64, 5)
    init = tf.global_variables_initializer()

    sess = tf.Session()
    sess.run(init)

    steps = 0
    for i in range(FLAGS.num_steps):
        idx = np.random.choice(len(x_train), FLAGS.batch_size, replace=False)
        feed = {model.x: x_train[idx], model.y: y_train[idx], model.keep_prob: 0.9}
        _, loss, acc = sess.run([model.train_op, model.loss, model.accuracy], feed_dict=feed)
        steps += 1
        if i % 10 == 0:
            print("iter %d: loss %.3f, acc %.3f" % (i, loss, acc))

    os.makedirs(os.path.dirname(FLAGS.save_path), exist_ok=True)
    tf.train.Saver().save(sess, FLAGS.save_path)

    values = sess.run(tf.trainable_variables())
    sess.close()
    checksum = float(sum(np.sum(v) + np.sum(np.abs(v)) for v in values))
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
        json.dump({"checksum": checksum, "steps": steps}, f)


if __name__ == "__main__":
    tf.app.run()
