"""One epoch of `fit` on in-memory arrays, the epoch count left to Keras'
default: it cannot be divided, so each worker must train on its share of
the rows."""
import json
import os

import numpy as np
import tensorflow as tf

np.random.seed(3)  # every process builds the same rows
rows = np.random.rand(512, 6).astype("float32")
labels = (rows.sum(axis=1) > 3.0).astype("float32")

model = tf.keras.Sequential([
    tf.keras.layers.Dense(8, activation="relu", input_shape=(6,)),
    tf.keras.layers.Dense(1, activation="sigmoid"),
])
model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=0.001), loss="binary_crossentropy")
model.fit(rows, labels, batch_size=32, shuffle=False)

checksum = 0.0
for weights in model.get_weights():
    checksum += float(np.sum(weights) + np.sum(np.abs(weights)))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({
        "checksum": checksum,
        "steps": int(model.optimizer.iterations.numpy()),
        "rate": float(tf.keras.backend.get_value(model.optimizer.learning_rate)),
    }, out)
