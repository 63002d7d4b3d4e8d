"""TF1 with gradients taken by `tf.gradients` and clipped before
`apply_gradients`: they never pass through the optimizer's own
`compute_gradients`."""
import json
import os

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

features = np.random.rand(800, 6).astype(np.float32)
labels = (features.sum(axis=1) > 3.0).astype(np.int64)

x = tf.compat.v1.placeholder(tf.float32, [None, 6])
y = tf.compat.v1.placeholder(tf.int64, [None])
hidden = tf.compat.v1.layers.dense(x, 12, activation=tf.nn.relu)
logits = tf.compat.v1.layers.dense(hidden, 2)
loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))

tvars = tf.compat.v1.trainable_variables()
grads = tf.gradients(loss, tvars)
clipped, _ = tf.clip_by_global_norm(grads, 5.0)
optimizer = tf.compat.v1.train.AdamOptimizer(0.01)
train_op = optimizer.apply_gradients(zip(clipped, tvars))

steps = 0
with tf.compat.v1.Session() as sess:
    sess.run(tf.compat.v1.global_variables_initializer())
    for step in range(50):
        batch = np.random.randint(0, 800, size=32)
        sess.run(train_op, feed_dict={x: features[batch], y: labels[batch]})
        steps += 1
    weights = sess.run(tvars)

checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in weights))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": steps}, out)
