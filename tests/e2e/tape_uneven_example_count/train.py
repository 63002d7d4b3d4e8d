"""A tape loop over every batch of a finite pipeline whose example count
(1001) no worker count above one divides: plain shards of it would be 501
and 500 examples, 11 and 10 batches of 50, and the worker with the extra
batch would wait for its partner in the last allreduce."""
import json
import os

import numpy as np
import tensorflow as tf

EXAMPLES = 1001
BATCH = 50

features = np.random.rand(EXAMPLES, 4).astype(np.float32)
targets = features @ np.array([[0.5], [-1.0], [2.0], [1.5]], dtype=np.float32)
batches = tf.data.Dataset.from_tensor_slices((features, targets)).shuffle(EXAMPLES).batch(BATCH)

net = tf.keras.Sequential([tf.keras.layers.Dense(6, activation="tanh"), tf.keras.layers.Dense(1)])
opt = tf.keras.optimizers.SGD(0.05)
taken = 0
first = None

for epoch in range(2):
    for inputs, wanted in batches:
        if first is None:
            first = float(tf.reduce_sum(inputs))
        with tf.GradientTape() as tape:
            error = tf.reduce_mean(tf.square(net(inputs) - wanted))
        gradients = tape.gradient(error, net.trainable_variables)
        opt.apply_gradients(zip(gradients, net.trainable_variables))
        taken += 1
    print("epoch", epoch, "error", float(error))

checksum = sum(float(np.sum(v.numpy()) + np.sum(np.abs(v.numpy()))) for v in net.trainable_variables)
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": taken, "first_batch": first, "rate": float(opt.learning_rate.numpy())}, out)
