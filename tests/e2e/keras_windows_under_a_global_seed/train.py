"""Windows of one series shuffled with a seed of their own, under a fixed
global TensorFlow seed: TensorFlow draws the shuffle order from both seeds,
so the global seed must stay the same on every worker for the shards taken
by rank to split one order. A second dataset built the same way, which
nothing trains on, shows the order every worker draws."""
import json
import os

import numpy as np
import tensorflow as tf

tf.random.set_seed(7)
WINDOW = 10
series = (np.cos(np.arange(2000) * 0.03) + np.arange(2000) * 0.002).astype("float32")


def windows():
    return tf.keras.utils.timeseries_dataset_from_array(
        series[:-WINDOW],
        targets=series[WINDOW:],
        sequence_length=WINDOW,
        shuffle=True,
        seed=3,
        batch_size=64,
        end_index=1024,
    )


train_windows = tf.keras.utils.timeseries_dataset_from_array(
    series[:-WINDOW],
    targets=series[WINDOW:],
    sequence_length=WINDOW,
    shuffle=True,
    seed=3,
    batch_size=64,
    end_index=1024,
)
probe_order = [float(targets.numpy().sum()) for _, targets in windows().take(4)]
model = tf.keras.Sequential([
    tf.keras.layers.InputLayer(input_shape=(WINDOW,)),
    tf.keras.layers.Dropout(0.1),
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
    json.dump({"checksum": checksum, "steps": steps, "rate": rate, "first_batch": float(first_windows.numpy().sum()),
               "shared": {"probe_order": probe_order}}, f)
