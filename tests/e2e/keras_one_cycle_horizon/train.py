"""A fit under a one-cycle callback whose total step count is computed from
the epochs and the batches per epoch: once the epochs are divided among the
workers, the total must be divided too, or each worker stops training at the
top of the cycle. The result says how much of the cycle each process ran."""
import json
import os

import numpy as np
import tensorflow as tf

x = np.random.rand(256, 3).astype("float32")
y = x.sum(axis=1)
batch_size = 32
epochs = 4
total_steps = epochs * (len(x) // batch_size)


class OneCycle(tf.keras.callbacks.Callback):
    def __init__(self, peak, total):
        super().__init__()
        self.peak = peak
        self.total = total
        self.seen = 0
        self.highest = 0.0

    def on_train_batch_begin(self, batch, logs=None):
        half = self.total / 2
        if self.seen < half:
            rate = self.peak * (self.seen + 1) / half
        else:
            rate = self.peak * (self.total - self.seen) / half
        tf.keras.backend.set_value(self.model.optimizer.lr, rate)
        self.seen += 1

    def on_train_batch_end(self, batch, logs=None):
        self.highest = max(self.highest, float(self.model.optimizer.lr.numpy()))


model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(3,)), tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
cycle = OneCycle(0.02, total_steps)
model.fit(x, y, batch_size=batch_size, epochs=epochs, callbacks=[cycle], verbose=2)

checksum = sum(float(tf.reduce_sum(v) + tf.reduce_sum(tf.abs(v))) for v in model.trainable_variables)
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump(
        {
            "checksum": checksum,
            "steps": cycle.seen,
            "rate": cycle.highest,
            "loops": {"percent of the cycle run": round(100 * cycle.seen / cycle.total)},
        },
        out,
    )
