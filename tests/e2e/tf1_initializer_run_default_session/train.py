"""Two-layer classifier in graph mode; variables set up with `.run()` on the op."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

FEATURES = 10
CLASSES = 4
STEPS = 60


def sample(batch):
    labels = np.random.randint(CLASSES, size=batch)
    points = np.random.normal(size=(batch, FEATURES)) + labels[:, None]
    return points.astype(np.float32), labels


inputs = tf.placeholder(tf.float32, [None, FEATURES])
targets = tf.placeholder(tf.int64, [None])
weights_in = tf.Variable(tf.random_normal([FEATURES, 32], stddev=0.3))
weights_out = tf.Variable(tf.random_normal([32, CLASSES], stddev=0.3))
logits = tf.matmul(tf.nn.relu(tf.matmul(inputs, weights_in)), weights_out)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=targets, logits=logits))
step_op = tf.train.MomentumOptimizer(0.05, 0.9).minimize(loss)

with tf.Session() as sess:
    tf.global_variables_initializer().run()
    steps = 0
    for step in range(STEPS):
        points, labels = sample(32)
        sess.run(step_op, feed_dict={inputs: points, targets: labels})
        steps += 1
    final = sess.run([weights_in, weights_out])

checksum = float(sum(w.sum() + np.abs(w).sum() for w in final))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": checksum, "steps": steps}, f)
