"""Fit with a checkpoint per epoch, then list the checkpoints and evaluate
each in a loop: rank 0 alone writes them, so every rank must wait for it
before the loop lists and loads them."""
import json
import os

import numpy as np
import tensorflow as tf

CHECKPOINTS = "checkpoints"

x = np.random.RandomState(1).rand(512, 6).astype("float32")
y = (x @ np.arange(1, 7, dtype="float32")[:, None]) / 10.0
model = tf.keras.Sequential([
    tf.keras.layers.InputLayer(input_shape=(6,)),
    tf.keras.layers.Dense(12, activation="relu"),
    tf.keras.layers.Dense(1),
])
model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
every_epoch = tf.keras.callbacks.ModelCheckpoint(
    filepath=os.path.join(CHECKPOINTS, "cp-{epoch:02d}.h5"), save_weights_only=True
)
model.fit(x, y, batch_size=32, epochs=4, callbacks=[every_epoch], verbose=2)

losses = []
for name in sorted(os.listdir(CHECKPOINTS)):
    model.load_weights(os.path.join(CHECKPOINTS, name))
    losses.append(model.evaluate(x, y, verbose=0))
print("loss per checkpoint:", losses)

checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in model.get_weights()))
steps = int(model.optimizer.iterations.numpy())
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
    json.dump({"checksum": checksum, "steps": steps}, f)
