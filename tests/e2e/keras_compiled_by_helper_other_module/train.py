"""Fits the regressor the model module builds and compiles through a helper."""
import json
import os

import numpy as np
import tensorflow as tf

import model as model_lib

rows = np.random.RandomState(0).rand(256, 4).astype("float32")
targets = rows.sum(axis=1, keepdims=True)
regressor = model_lib.build_model(0.05)
regressor.fit(rows, targets, epochs=4, batch_size=32, shuffle=True, verbose=0)

checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in regressor.get_weights()))
steps = int(regressor.optimizer.iterations.numpy())
rate = float(tf.keras.backend.get_value(regressor.optimizer.learning_rate))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": steps, "rate": rate}, out)
