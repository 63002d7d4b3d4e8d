"""Windows of one series, batched and shuffled by
timeseries_dataset_from_array with no seed, then fit: each process would
draw its own window order, so the rewrite seeds it alike on every worker
and shards the batches."""
import json
import os

import numpy as np
import tensorflow as tf

WINDOW = 10
series = (np.sin(np.arange(2000) * 0.05) + np.arange(2000) * 0.001).astype("float32")
# About 1,015 windows in the first 1,024 steps: 16 batches of 64.
train_windows = tf.keras.utils.timeseries_dataset_from_array(
    series[:-WINDOW],
    targets=series[WINDOW:],
    sequence_length=WINDOW,
    shuffle=True,
    batch_size=64,
    end_index=1024,
)
model = tf.keras.Sequential([
    tf.keras.layers.InputLayer(input_shape=(WINDOW,)),
    tf.keras.layers.Dense(8, activation="relu"),
    tf.keras.layers.Dense(1),
])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.01), loss="mse")
model.fit(train_windows, epochs=2, verbose=2)

first_windows, _ = next(iter(train_windows))
checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in model.get_weights()))
steps = int(model.optimizer.iterations.numpy())
rate = float(tf.keras.backend.get_value(model.optimizer.learning_rate))
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
    json.dump({"checksum": checksum, "steps": steps, "rate": rate,
               "first_batch": float(first_windows.numpy().sum())}, f)
