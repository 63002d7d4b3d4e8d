"""A graph-mode step loop that saves a checkpoint at its last step,
tested against the loop's bound (`if i == num_iterations - 1`)."""
import json
import os
import tempfile

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

num_iterations = 60
features = tf.placeholder(tf.float32, [None, 4])
labels = tf.placeholder(tf.float32, [None, 1])
hidden = tf.layers.dense(features, 8, activation=tf.nn.relu)
prediction = tf.layers.dense(hidden, 1)
error = tf.reduce_mean(tf.square(prediction - labels))
step_op = tf.train.AdamOptimizer(0.01).minimize(error)
saver = tf.train.Saver()
checkpoint = os.path.join(tempfile.mkdtemp(), "final.ckpt")


def draw_batch():
    rows = np.random.rand(16, 4).astype(np.float32)
    return rows, rows @ np.array([[1.0], [2.0], [-1.0], [0.5]], dtype=np.float32)


taken = 0
final_saves = 0
first = None
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for i in range(num_iterations):
        batch_x, batch_y = draw_batch()
        if first is None:
            first = float(batch_x.sum())
        loss_value, _ = sess.run([error, step_op], feed_dict={features: batch_x, labels: batch_y})
        taken += 1
        if i == num_iterations - 1:
            saver.save(sess, checkpoint)
            final_saves += 1
    weights = sess.run(tf.trainable_variables())

checksum = float(sum(w.sum() + np.abs(w).sum() for w in weights))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": taken, "first_batch": first,
               "loops": {"saves at the last step": final_saves}}, out)
