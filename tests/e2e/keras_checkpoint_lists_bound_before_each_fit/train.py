"""Two experiments in a row, each binding `callbacks` to a list with its own
best-model checkpoint right before its fit, then loading that best model
back to evaluate it.
"""
import json
import os

import numpy as np
from tensorflow import keras

x = np.random.rand(512, 4).astype("float32")
y = x.sum(axis=1)

callbacks = [
    keras.callbacks.ModelCheckpoint("dense.keras", save_best_only=True)
]
model = keras.Sequential([keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
model.compile(optimizer="rmsprop", loss="mse")
model.fit(x, y, epochs=4, batch_size=32, validation_split=0.25, callbacks=callbacks, verbose=2)
dense_steps = int(model.optimizer.iterations.numpy())
best_dense = keras.models.load_model("dense.keras")
print("dense:", best_dense.evaluate(x, y, verbose=0))

callbacks = [
    keras.callbacks.ModelCheckpoint("wide.keras", save_best_only=True)
]
model = keras.Sequential([keras.layers.Dense(64, activation="relu"), keras.layers.Dense(1)])
model.compile(optimizer="rmsprop", loss="mse")
model.fit(x, y, epochs=4, batch_size=32, validation_split=0.25, callbacks=callbacks, verbose=2)
wide_steps = int(model.optimizer.iterations.numpy())
best_wide = keras.models.load_model("wide.keras")
print("wide:", best_wide.evaluate(x, y, verbose=0))

trained = [best_dense, best_wide]
checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for m in trained for w in (v.numpy() for v in m.trainable_variables)))
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
    json.dump({"checksum": checksum, "steps": dense_steps + wide_steps}, f)
