"""A model bound to the name of the function that builds it
(`classifier = classifier(inputs)`), fitted, saved and loaded back on the
next line: the save runs on rank 0, so every rank must wait for it before
loading the file."""
import json
import os

import numpy as np
import tensorflow as tf


def classifier(inputs):
    hidden = tf.keras.layers.Dense(12, activation="relu")(inputs)
    outputs = tf.keras.layers.Dense(1)(hidden)
    model = tf.keras.Model(inputs, outputs)
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
    return model


inputs = tf.keras.Input(shape=(6,))
classifier = classifier(inputs)
x = np.random.RandomState(1).rand(512, 6).astype("float32")
y = (x @ np.arange(1, 7, dtype="float32")[:, None]) / 10.0
classifier.fit(x, y, batch_size=32, epochs=4, verbose=2)

classifier.save("classifier.h5")
reloaded = tf.keras.models.load_model("classifier.h5")
print("reloaded loss:", reloaded.evaluate(x, y, verbose=0))

checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in reloaded.get_weights()))
steps = int(classifier.optimizer.iterations.numpy())
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
    json.dump({"checksum": checksum, "steps": steps}, f)
