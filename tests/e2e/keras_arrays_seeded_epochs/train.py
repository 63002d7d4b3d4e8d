"""Keras on in-memory arrays with fixed seeds, as course notebooks do:
`fit(x, y, epochs=...)` with no steps to divide."""
import json
import os

import numpy as np
import tensorflow as tf

np.random.seed(22)
tf.random.set_seed(22)

x_train = np.random.rand(512, 10).astype(np.float32)
y_train = (x_train[:, :5].sum(axis=1) > 2.5).astype(np.float32)


class CountBatches(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.steps = 0

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1


model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(10,)),
    tf.keras.layers.Dense(1, activation="sigmoid"),
])
model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="binary_crossentropy")
counter = CountBatches()
model.fit(x_train, y_train, batch_size=32, epochs=4, callbacks=[counter])

checksum = 0.0
for variable in model.trainable_variables:
    checksum += float(np.sum(variable.numpy()) + np.sum(np.abs(variable.numpy())))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": counter.steps}, out)
