"""A script written for several GPUs of one machine: the model built and
compiled in a MirroredStrategy's scope, the batch scaled by its replicas."""
import json
import os

import numpy as np
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()
batch_size = 16 * strategy.num_replicas_in_sync
with strategy.scope():
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(8, activation="relu", input_shape=(3,)),
        tf.keras.layers.Dense(1),
    ])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")


class CountBatches(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.batches = 0

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1


x = np.random.rand(256, 3).astype("float32")
y = x.sum(axis=1)
counter = CountBatches()
model.fit(x, y, batch_size=batch_size, epochs=4, callbacks=[counter], verbose=2)

checksum = sum(float(tf.reduce_sum(v) + tf.reduce_sum(tf.abs(v))) for v in model.trainable_variables)
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": counter.batches}, out)
