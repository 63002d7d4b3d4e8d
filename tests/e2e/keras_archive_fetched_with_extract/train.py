"""An archive fetched with get_file(..., extract=True) into a cache every
process shares, its folder then listed and read, as the time-series and
image tutorials fetch theirs: rank 0 fetches and unpacks first, and the
others must not unpack it again over the files being read."""
import json
import os

import numpy as np
import tensorflow as tf

HERE = os.path.abspath(".")
zip_path = tf.keras.utils.get_file(
    "points.zip",
    "file://" + os.path.join(HERE, "remote", "points.zip"),
    cache_dir=os.path.join(HERE, "cache"),
    extract=True,
)
folder = os.path.join(os.path.dirname(zip_path), "points")

parts = sorted(os.listdir(folder))
table = np.concatenate([np.loadtxt(os.path.join(folder, part), delimiter=",", dtype=np.float32) for part in parts])
features, labels = table[:, :5], table[:, 5]

model = tf.keras.Sequential([
    tf.keras.layers.Dense(8, activation="relu", input_shape=(5,)),
    tf.keras.layers.Dense(1, activation="sigmoid"),
])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.05), loss="binary_crossentropy")
model.fit(features, labels, batch_size=32, epochs=4, verbose=2)

checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in model.get_weights()))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": int(model.optimizer.iterations.numpy()),
               "rate": float(tf.keras.backend.get_value(model.optimizer.learning_rate)),
               "loops": [len(parts)]}, out)
