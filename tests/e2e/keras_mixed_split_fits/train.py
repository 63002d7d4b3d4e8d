"""Two models in one script: a feature model fitted for one epoch over
in-memory arrays (that epoch cannot be divided, so each worker must train on
its share of the rows), then a head fitted for ten epochs (divided). The
steps reported are both models' together, so each model must do half of its
own; the rate reported is the head's."""
import json
import os

import numpy as np
import tensorflow as tf

rows = np.random.default_rng(2).normal(size=(2048, 6)).astype(np.float32)
targets = (rows @ np.arange(1, 7, dtype=np.float32).reshape(6, 1) / 10.0).astype(np.float32)

features = tf.keras.Sequential([tf.keras.layers.Dense(6, input_shape=(6,))])
features.compile(optimizer=tf.keras.optimizers.SGD(0.02), loss="mse")
features.fit(rows, rows, epochs=1, batch_size=64, verbose=0)

head = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(6,))])
head.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
head.fit(rows, targets, epochs=10, batch_size=64, verbose=0)

total = float(sum(w.sum() + np.abs(w).sum() for w in features.get_weights() + head.get_weights()))
steps = int(head.optimizer.iterations.numpy()) + int(features.optimizer.iterations.numpy())
rate = float(tf.keras.backend.get_value(head.optimizer.learning_rate))
out_dir = os.environ.get("RESULT_DIR", ".")
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(out_dir, "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": total, "steps": steps, "rate": rate}, f)
