"""Softmax regression in TF1 graph mode with an explicit Session."""
import argparse
import json
import os

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

N_FEATURES = 12
N_CLASSES = 3


def build_graph(learning_rate):
    x = tf.compat.v1.placeholder(tf.float32, [None, N_FEATURES], name="x")
    y = tf.compat.v1.placeholder(tf.int64, [None], name="y")
    global_step = tf.compat.v1.train.get_or_create_global_step()
    with tf.compat.v1.variable_scope("softmax_regression"):
        hidden = tf.compat.v1.layers.dense(x, 24, activation=tf.nn.relu, name="hidden")
        logits = tf.compat.v1.layers.dense(hidden, N_CLASSES, name="logits")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train_op = tf.compat.v1.train.GradientDescentOptimizer(learning_rate).minimize(loss, global_step=global_step)
    return x, y, loss, train_op, global_step


def batches(batch_size):
    centres = np.random.normal(scale=2.0, size=(N_CLASSES, N_FEATURES))
    while True:
        labels = np.random.randint(N_CLASSES, size=batch_size)
        yield centres[labels] + np.random.normal(size=(batch_size, N_FEATURES)), labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--num-steps", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--model-dir", default="model")
    args = parser.parse_args()

    x, y, loss, train_op, global_step = build_graph(args.learning_rate)
    saver = tf.compat.v1.train.Saver()
    data = batches(args.batch_size)

    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        for step in range(args.num_steps):
            features, labels = next(data)
            _, loss_value = sess.run([train_op, loss], feed_dict={x: features, y: labels})
            if step % 10 == 0:
                print("step {:3d}  loss {:.4f}".format(step, loss_value))
        os.makedirs(args.model_dir, exist_ok=True)
        saver.save(sess, os.path.join(args.model_dir, "model.ckpt"), global_step=global_step)

        weights = sess.run(tf.compat.v1.trainable_variables())
        steps_done = int(sess.run(global_step))

    checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in weights))
    rank = os.environ.get("HOROVOD_RANK", "single")
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as f:
        json.dump({"checksum": checksum, "steps": steps_done}, f)


if __name__ == "__main__":
    main()
