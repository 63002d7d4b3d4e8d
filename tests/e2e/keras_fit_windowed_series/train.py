"""Forecast the next value of a series from a window of the values before it."""
import json
import os

import numpy as np
import tensorflow as tf

WINDOW = 20
# 1044 points give 1024 windows of 21: 32 batches of 32, 16 per worker of two
# (Keras counts one optimizer step more per fit of a stream whose count
# TensorFlow does not know, after flat_map: 65 for two epochs).
steps_in_time = np.arange(1044, dtype="float32")
series = np.sin(steps_in_time / 15.0) + 0.05 * np.cos(steps_in_time / 2.0)


def windows_of(values, batch_size):
    stream = tf.data.Dataset.from_tensor_slices(values)
    stream = stream.window(WINDOW + 1, shift=1, drop_remainder=True)
    stream = stream.flat_map(lambda window: window.batch(WINDOW + 1))
    stream = stream.shuffle(256, seed=1)
    stream = stream.map(lambda window: (window[:-1], window[-1:]))
    return stream.batch(batch_size)


train_windows = windows_of(series, 32)
model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(WINDOW,)),
    tf.keras.layers.Dense(1),
])
model.compile(loss="mse", optimizer=tf.keras.optimizers.SGD(learning_rate=0.01, momentum=0.9))
model.fit(train_windows, epochs=2, verbose=2)

# The last value of the first window each process reads: which part of the
# series it starts from.
first_inputs, _ = next(iter(train_windows))
total = float(sum(w.sum() + np.abs(w).sum() for w in model.get_weights()))
steps = int(model.optimizer.iterations.numpy())
rate = float(tf.keras.backend.get_value(model.optimizer.learning_rate))
out_dir = os.environ.get("RESULT_DIR", ".")
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(out_dir, "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": total, "steps": steps, "rate": rate,
               "first_batch": float(first_inputs.numpy().sum())}, f)
