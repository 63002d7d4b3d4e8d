# Top-to-bottom notebook-style script: no main(), constants at the top.
import json
import os

import numpy as np
from tensorflow import keras

EPOCHS = 4
STEPS_PER_EPOCH = 8
BATCH = 48
BOUNDARIES = [12, 24]
LR_VALUES = [0.01, 0.005, 0.001]

# --- data: two interleaved spirals -----------------------------------------
n = 1500
theta = np.sqrt(np.random.rand(n)) * 3 * np.pi
arm = np.random.randint(2, size=n)
r = theta + 0.3 * np.random.randn(n)
sign = np.where(arm == 0, 1.0, -1.0)
X = np.stack([sign * r * np.cos(theta), sign * r * np.sin(theta)], axis=1).astype("float32") / 10.0
Y = arm.astype("float32")


def batches(x, y, batch):
    while True:
        idx = np.random.permutation(len(x))
        for start in range(0, len(x) - batch + 1, batch):
            sel = idx[start:start + batch]
            yield x[sel], y[sel]


# --- model ------------------------------------------------------------------
model = keras.models.Sequential()
model.add(keras.layers.Dense(64, activation="relu", input_dim=2))
model.add(keras.layers.Dense(64, activation="relu"))
model.add(keras.layers.Dense(1, activation="sigmoid"))

schedule = keras.optimizers.schedules.PiecewiseConstantDecay(BOUNDARIES, LR_VALUES)
model.compile(
    loss="binary_crossentropy",
    optimizer=keras.optimizers.RMSprop(learning_rate=schedule),
    metrics=["acc"],
)
model.summary()

history = model.fit(
    batches(X, Y, BATCH),
    steps_per_epoch=STEPS_PER_EPOCH,
    epochs=EPOCHS,
    verbose=2,
)
print("final accuracy", history.history["acc"][-1])

sums = [np.sum(w) + np.sum(np.abs(w)) for w in (v.numpy() for v in model.trainable_weights)]
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as fh:
    json.dump({"checksum": float(np.sum(sums)), "steps": int(model.optimizer.iterations.numpy())}, fh)
