"""Compare two classifiers: one from a factory that compiles it with a named
optimizer, then another bound to the same name and compiled at the top level
with an optimizer object.
"""
import json
import os

import numpy as np
from tensorflow import keras
from tensorflow.keras import layers

x = np.random.rand(512, 16).astype("float32")
y = (x.sum(axis=1) > 8).astype("int64")


def get_model():
    model = keras.Sequential([layers.Dense(32, activation="relu"), layers.Dense(2, activation="softmax")])
    model.compile(optimizer="rmsprop", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


model = get_model()
history_first = model.fit(x, y, epochs=4, batch_size=32, verbose=2)
first = model

model = keras.Sequential([layers.Dense(32, activation="relu"), layers.Dense(2, activation="softmax")])
model.compile(optimizer=keras.optimizers.RMSprop(1e-3), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
history_second = model.fit(x, y, epochs=4, batch_size=32, verbose=2)

trained = [first, model]
checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for m in trained for w in (v.numpy() for v in m.trainable_variables)))
steps = int(sum(m.optimizer.iterations.numpy() for m in trained))
# The factory's optimizer: the one a rebinding further down had hidden.
rate = float(keras.backend.get_value(first.optimizer.learning_rate))
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
    json.dump({"checksum": checksum, "steps": steps, "rate": rate}, f)
