"""A TF1 model trained with gradients taken by hand and clipped by their
global norm in one expression, then applied by an optimizer."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_eager_execution()

rng = np.random.RandomState(5)
data = rng.rand(640, 4).astype("float32")
target = (data.sum(axis=1, keepdims=True) > 2.0).astype("float32")

x = tf.placeholder(tf.float32, [None, 4])
y = tf.placeholder(tf.float32, [None, 1])
hidden = tf.layers.dense(x, 8, tf.nn.tanh)
logits = tf.layers.dense(hidden, 1)
cost = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))
tvars = tf.trainable_variables()
grads, _ = tf.clip_by_global_norm(tf.gradients(cost, tvars), 5.0)
optimizer = tf.train.AdamOptimizer(0.01)
train_op = optimizer.apply_gradients(zip(grads, tvars))

sess = tf.Session()
sess.run(tf.global_variables_initializer())
steps = 0
first = None
for step in range(40):
    picked = np.random.randint(0, len(data), 32)
    if first is None:
        first = float(picked[:5].sum())
    sess.run(train_op, feed_dict={x: data[picked], y: target[picked]})
    steps += 1

values = sess.run(tvars)
checksum = float(sum(np.sum(v) + np.sum(np.abs(v)) for v in values))
rate = getattr(optimizer, "_optimizer", optimizer)._lr
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
    json.dump({"checksum": checksum, "steps": steps, "rate": float(rate), "first_batch": first}, f)
