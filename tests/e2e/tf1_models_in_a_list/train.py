"""Two graph-mode nets kept in a list, both trained by one `sess.run` of
`[nets[0].train, nets[1].train]`, in a `while` loop that walks each epoch's
rows until the end of the data: each worker runs its share of the epochs."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

data = np.random.uniform(-1, 1, size=(200, 2)).astype(np.float32)
data[:, 1] = data[:, 0] ** 2
BATCH = 32

tf_x = tf.placeholder(tf.float32, [None, 1])
tf_y = tf.placeholder(tf.float32, [None, 1])


class Net(object):
    def __init__(self, width):
        hidden = tf.layers.dense(tf_x, width, tf.nn.tanh)
        self.out = tf.layers.dense(hidden, 1)
        self.loss = tf.losses.mean_squared_error(tf_y, self.out)
        self.optimizer = tf.train.GradientDescentOptimizer(0.1)
        self.train = self.optimizer.minimize(self.loss)


nets = [Net(8), Net(16)]
sess = tf.Session()
sess.run(tf.global_variables_initializer())

steps = 0
rate = None
for epoch in range(4):
    np.random.shuffle(data)
    step = 0
    in_epoch = True
    while in_epoch:
        start, end = (step * BATCH) % len(data), ((step + 1) * BATCH) % len(data)
        step += 1
        if end < start:
            end = len(data)
            in_epoch = False
        sess.run([nets[0].train, nets[1].train], {tf_x: data[start:end, 0:1], tf_y: data[start:end, 1:2]})
        steps += 1

optimizer = nets[0].optimizer
rate = float(getattr(optimizer, "_optimizer", optimizer)._learning_rate)
weights = sess.run(tf.trainable_variables())
checksum = float(sum(w.sum() + np.abs(w).sum() for w in weights))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": checksum, "steps": steps, "rate": rate}, f)
