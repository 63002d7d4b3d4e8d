"""A graph built and initialised in main(), whose session is handed to a
helper that runs the train op a given number of times: the loop cannot be
divided where it runs, so the rate must stay as written."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

rows = np.random.default_rng(5).normal(size=(64, 3)).astype(np.float32)
truth = (rows @ np.array([[1.5], [-2.0], [0.5]])).astype(np.float32)


def run_steps(sess, train_op, feed, steps):
    done = 0
    for _ in range(steps):
        sess.run(train_op, feed_dict=feed)
        done += 1
    return done


def main():
    inputs = tf.placeholder(tf.float32, [None, 3])
    targets = tf.placeholder(tf.float32, [None, 1])
    weights = tf.Variable(tf.random.normal([3, 1]))
    loss = tf.reduce_mean(tf.square(tf.matmul(inputs, weights) - targets))
    gradient = tf.gradients(loss, weights)[0]
    train_op = tf.train.GradientDescentOptimizer(learning_rate=0.05).minimize(loss)
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    feed = {inputs: rows, targets: truth}
    before, first_gradient = sess.run([weights, gradient], feed_dict=feed)
    steps = run_steps(sess, train_op, feed, 1)
    # Plain gradient descent: the first step moved the weights by rate * gradient.
    largest = int(np.argmax(np.abs(first_gradient)))
    rate = float((before - sess.run(weights)).ravel()[largest] / first_gradient.ravel()[largest])
    steps += run_steps(sess, train_op, feed, 59)
    final = sess.run(weights)
    rank = os.environ.get("HOROVOD_RANK", "single")
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
        json.dump({"checksum": float(final.sum() + np.abs(final).sum()), "steps": steps, "rate": rate, "loops": {"training steps": steps}}, out)


if __name__ == "__main__":
    main()
