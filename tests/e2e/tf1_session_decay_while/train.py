"""Two-layer MLP in TF1 graph mode, fed from a one-shot dataset iterator.

The learning rate decays exponentially with the global step; the loop runs
until the global step, read back from the session, reaches --max_steps.
"""
from __future__ import print_function

import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

flags = tf.app.flags
flags.DEFINE_integer("max_steps", 40, "Number of training steps.")
flags.DEFINE_integer("batch_size", 64, "Batch size.")
flags.DEFINE_float("base_lr", 0.1, "Initial learning rate.")
flags.DEFINE_string("save_path", "ckpt/mlp.ckpt", "Checkpoint prefix.")
FLAGS = flags.FLAGS


def inputs(batch_size):
    x = np.random.uniform(-1, 1, size=(6000, 10)).astype(np.float32)
    y = (np.sin(3 * x[:, 0]) * x[:, 1] > 0).astype(np.int64)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(6000).repeat().batch(batch_size)
    return tf.data.make_one_shot_iterator(ds).get_next()


def inference(x):
    w1 = tf.get_variable("w1", [10, 32], initializer=tf.glorot_uniform_initializer())
    b1 = tf.get_variable("b1", [32], initializer=tf.zeros_initializer())
    w2 = tf.get_variable("w2", [32, 2], initializer=tf.glorot_uniform_initializer())
    b2 = tf.get_variable("b2", [2], initializer=tf.zeros_initializer())
    return tf.matmul(tf.nn.tanh(tf.matmul(x, w1) + b1), w2) + b2


def main(_):
    images, labels = inputs(FLAGS.batch_size)
    logits = inference(images)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))

    global_step = tf.train.get_or_create_global_step()
    lr = tf.train.exponential_decay(FLAGS.base_lr, global_step, decay_steps=10, decay_rate=0.9, staircase=True)
    opt = tf.train.MomentumOptimizer(lr, momentum=0.9)
    train_op = opt.minimize(loss, global_step=global_step)
    saver = tf.train.Saver()

    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    step = 0
    while step < FLAGS.max_steps:
        _, loss_value, step = sess.run([train_op, loss, global_step])
        if step % 10 == 0:
            print("step %d, lr %.4f, loss %.4f" % (step, sess.run(lr), loss_value))
    saver.save(sess, FLAGS.save_path, global_step=global_step)

    weights = sess.run(tf.trainable_variables())
    checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in weights))
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
        json.dump({"checksum": checksum, "steps": int(step)}, f)
    sess.close()


if __name__ == "__main__":
    tf.app.run()
