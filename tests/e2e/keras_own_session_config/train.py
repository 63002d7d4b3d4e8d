"""Keras in graph mode, run in a session the script makes itself with a
config of its own (memory growth), handed over with set_session."""
import json
import os

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

from tensorflow.compat.v1.keras import backend as K

config = tf.compat.v1.ConfigProto()
config.gpu_options.allow_growth = True
K.set_session(tf.compat.v1.Session(config=config))

rows = np.random.normal(size=(1280, 8)).astype("float32")
labels = (rows[:, :4].sum(axis=1) > rows[:, 4:].sum(axis=1)).astype("float32")


class CountBatches(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.count = 0
        self.first = None

    def on_train_batch_end(self, batch, logs=None):
        self.count += 1


model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)),
    tf.keras.layers.Dense(1, activation="sigmoid"),
])
model.compile(optimizer=tf.keras.optimizers.legacy.SGD(learning_rate=0.05), loss="binary_crossentropy")
counter = CountBatches()
model.fit(rows, labels, batch_size=32, epochs=2, callbacks=[counter], verbose=2)

weights = model.get_weights()
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": float(sum(w.sum() + np.abs(w).sum() for w in weights)), "steps": counter.count}, out)
