"""Keras imported from tensorflow first, data made, and only then
`import tensorflow as tf` (imports spread down a script)."""
from tensorflow import keras
import numpy as np

features = np.random.rand(384, 6).astype("float32")
labels = (features[:, :1] - features[:, 1:2] > 0).astype("float32")

import json
import os

import tensorflow as tf

model = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1, activation="sigmoid")])
model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), loss="binary_crossentropy")
data = tf.data.Dataset.from_tensor_slices((features, labels)).shuffle(384).batch(24)
model.fit(data, epochs=2, verbose=2)

first, _ = next(iter(data))
checksum = float(sum(w.sum() + np.abs(w).sum() for w in model.get_weights()))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": int(model.optimizer.iterations.numpy()), "first_batch": float(first.numpy().sum())}, out)
