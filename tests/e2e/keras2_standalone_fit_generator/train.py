"""Standalone Keras 2 as older projects write it: `import keras`, `lr=`, and
a Python generator fed to `fit_generator`."""
import json
import os

import keras
import numpy as np

x_all = np.random.rand(2000, 12).astype("float32")
y_all = keras.utils.to_categorical((x_all[:, :6].sum(axis=1) > 3.0).astype("int64"), 2)


def batches(batch_size=32):
    while True:
        index = np.random.randint(0, len(x_all), size=batch_size)
        yield x_all[index], y_all[index]


class CountBatches(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.steps = 0

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1


model = keras.models.Sequential()
model.add(keras.layers.Dense(16, activation="relu", input_shape=(12,)))
model.add(keras.layers.Dense(2, activation="softmax"))
model.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.Adam(lr=0.005),
              metrics=["accuracy"])
counter = CountBatches()
model.fit_generator(batches(), steps_per_epoch=20, epochs=2, callbacks=[counter])

checksum = 0.0
for weights in model.get_weights():
    checksum += float(np.sum(weights) + np.sum(np.abs(weights)))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": counter.steps}, out)
