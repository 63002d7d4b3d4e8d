"""Graph built inside an explicit tf.Graph, then run in a Session bound to it."""
import argparse
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_eager_execution()


def build(graph, n_in, n_classes, lr):
    with graph.as_default():
        images = tf.placeholder(tf.float32, [None, n_in], name="images")
        labels = tf.placeholder(tf.int64, [None], name="labels")
        with tf.variable_scope("net"):
            h = tf.layers.dense(images, 32, activation=tf.nn.relu)
            logits = tf.layers.dense(h, n_classes)
        loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
        step = tf.train.get_or_create_global_step()
        train_op = tf.train.AdamOptimizer(lr).minimize(loss, global_step=step)
        init_op = tf.global_variables_initializer()
        saver = tf.train.Saver(max_to_keep=1)
    return images, labels, loss, train_op, init_op, saver, step


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--ckpt", default="graph_ckpt/model")
    args = parser.parse_args()

    n_in, n_classes = 16, 4
    proto = np.random.randn(n_classes, n_in)

    graph = tf.Graph()
    images, labels, loss, train_op, init_op, saver, step = build(graph, n_in, n_classes, args.lr)

    with tf.Session(graph=graph) as sess:
        sess.run(init_op)
        for i in range(args.steps):
            y = np.random.randint(n_classes, size=args.batch_size)
            x = proto[y] + np.random.randn(args.batch_size, n_in)
            _, l = sess.run([train_op, loss], {images: x, labels: y})
            if (i + 1) % 10 == 0:
                print("step %d loss %.4f" % (i + 1, l))
        saver.save(sess, args.ckpt, global_step=step)
        with graph.as_default():
            weights = sess.run(tf.trainable_variables())
        steps_done = int(sess.run(step))

    checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in weights))
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
        json.dump({"checksum": checksum, "steps": steps_done}, f)


if __name__ == "__main__":
    main()
