"""Graph-mode regression: each epoch walks an initializable iterator to its end."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

# The same table in every process: only the split makes the workers' batches differ.
rng = np.random.default_rng(11)
features = rng.normal(size=(640, 4)).astype(np.float32)
targets = (features @ np.array([[0.5], [-1.0], [2.0], [0.1]], dtype=np.float32)).astype(np.float32)

dataset = tf.data.Dataset.from_tensor_slices((features, targets))
dataset = dataset.batch(32)
iterator = tf.data.make_initializable_iterator(dataset)
x, y = iterator.get_next()

w = tf.Variable(tf.random_normal([4, 1], stddev=0.5))
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
train_op = tf.train.GradientDescentOptimizer(0.05).minimize(loss)

steps = 0
first_batch = None
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for epoch in range(3):
        sess.run(iterator.initializer)
        try:
            while True:
                if first_batch is None:
                    # Draws one batch here, so the first epoch trains on one fewer.
                    first_batch = float(sess.run(x).sum())
                    continue
                sess.run(train_op)
                steps += 1
        except tf.errors.OutOfRangeError:
            pass
    final = sess.run(w)

rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": float(final.sum() + np.abs(final).sum()), "steps": steps, "first_batch": first_batch}, f)
