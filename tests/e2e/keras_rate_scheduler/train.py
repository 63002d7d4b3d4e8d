"""A fit whose learning rate follows a LearningRateScheduler of the epoch
(absolute rates), over enough epochs to get a warm-up too; then a short
fine-tuning fit under a one-cycle callback that sets absolute rates itself."""
import json
import os

import numpy as np
import tensorflow as tf


class CountBatches(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.batches = 0

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1


class OneCycleRate(tf.keras.callbacks.Callback):
    def __init__(self, peak, total):
        super().__init__()
        self.peak, self.total, self.seen = peak, total, 0

    def on_train_batch_begin(self, batch, logs=None):
        progress = self.seen / self.total
        self.seen += 1
        self.model.optimizer.learning_rate.assign(self.peak * (1 - abs(2 * progress - 1)))


x = np.random.rand(128, 3).astype("float32")
y = x.sum(axis=1)
model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(3,)), tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
counter = CountBatches()
model.fit(
    x,
    y,
    batch_size=32,
    epochs=12,
    callbacks=[tf.keras.callbacks.LearningRateScheduler(lambda epoch: 0.01 * 0.9 ** epoch), counter],
    verbose=2,
)
model.fit(x, y, batch_size=32, epochs=2, callbacks=[OneCycleRate(0.02, 8), counter], verbose=2)

checksum = sum(float(tf.reduce_sum(v) + tf.reduce_sum(tf.abs(v))) for v in model.trainable_variables)
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": counter.batches}, out)
