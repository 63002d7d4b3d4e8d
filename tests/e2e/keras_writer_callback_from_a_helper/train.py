"""A TensorBoard callback made by a helper of the script, passed to fit:
what the helper returns writes logs, so rank 0 alone keeps it."""
import glob
import json
import os

import numpy as np
import tensorflow as tf


def create_tensorboard_callback(dir_name, experiment_name):
    log_dir = os.path.join(dir_name, experiment_name)
    tensorboard_callback = tf.keras.callbacks.TensorBoard(log_dir=log_dir)
    print("Saving TensorBoard log files to:", log_dir)
    return tensorboard_callback


x = np.random.RandomState(2).rand(512, 6).astype("float32")
y = (x @ np.arange(1, 7, dtype="float32")[:, None]) / 10.0
model = tf.keras.Sequential([
    tf.keras.layers.InputLayer(input_shape=(6,)),
    tf.keras.layers.Dense(12, activation="relu"),
    tf.keras.layers.Dense(1),
])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(x, y, batch_size=32, epochs=4, verbose=2,
          callbacks=[create_tensorboard_callback("logs", "helper")])

checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in model.get_weights()))
rank = os.environ.get("HOROVOD_RANK", "single")
# Rank 0 alone writes the training events; another rank's would make two.
writers = len(glob.glob(os.path.join("logs", "helper", "train", "events.*")))
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": int(model.optimizer.iterations.numpy()),
               "rate": float(tf.keras.backend.get_value(model.optimizer.learning_rate)),
               "loops": {"event_files": writers}}, out)
