"""Copies its data into place with a shell program run through subprocess,
then fits on it."""
import json
import os
import subprocess

import numpy as np
import tensorflow as tf

subprocess.check_call(["cp", "rows.csv", "train_rows.csv"])
table = np.loadtxt("train_rows.csv", delimiter=",", dtype="float32")
rows, targets = table[:, :4], table[:, 4:]

model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(4,)), tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.05), loss="mse")
model.fit(rows, targets, epochs=4, batch_size=32, shuffle=True, verbose=0)

checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in model.get_weights()))
steps = int(model.optimizer.iterations.numpy())
rate = float(tf.keras.backend.get_value(model.optimizer.learning_rate))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": steps, "rate": rate}, out)
