"""A windowed-series helper called for two training fits (a rate search,
then the fit kept), its result printed once: the shard goes inside the
helper, on the windows before they are flattened and shuffled, so each
worker trains each fit on its own windows."""
import json
import os

import numpy as np
import tensorflow as tf

time = np.arange(1044, dtype="float32")
series = (np.sin(time / 15.0) + 0.1 * np.cos(time / 3.0)).astype("float32")


def windowed_dataset(values, window_size, batch_size, shuffle_buffer):
    dataset = tf.data.Dataset.from_tensor_slices(values)
    dataset = dataset.window(window_size + 1, shift=1, drop_remainder=True)
    dataset = dataset.flat_map(lambda window: window.batch(window_size + 1))
    dataset = dataset.shuffle(shuffle_buffer).map(lambda window: (window[:-1], window[-1]))
    return dataset.batch(batch_size).prefetch(1)


class StepCounter(tf.keras.callbacks.Callback):
    """Counts the batches trained (the optimizer's own counter is not one
    per batch for every optimizer)."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def on_train_batch_end(self, batch, logs=None):
        self.count += 1


counter = StepCounter()


def forecaster():
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(8, activation="relu", input_shape=[20]),
        tf.keras.layers.Dense(1),
    ])
    model.compile(loss="mse", optimizer=tf.keras.optimizers.SGD(learning_rate=1e-3, momentum=0.9))
    return model


train_set = windowed_dataset(series, 20, 32, 256)
print(train_set)
search = forecaster()
search.fit(train_set, epochs=2, verbose=2, callbacks=[counter])

train_set = windowed_dataset(series, 20, 64, 256)
model = forecaster()
model.fit(train_set, epochs=2, verbose=2, callbacks=[counter])

steps = counter.count
checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for m in (search, model) for w in m.get_weights()))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": steps,
               "rate": float(tf.keras.backend.get_value(model.optimizer.learning_rate))}, out)
