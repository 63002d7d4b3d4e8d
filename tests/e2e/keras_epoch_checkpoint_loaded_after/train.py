"""A fit on arrays writing one checkpoint per epoch, and the last epoch's
file loaded by its number afterwards: the epochs must stay as written (each
worker trains on its share of the rows instead), and the shares must hold
the same number of rows, or one worker runs one more step per epoch than the
other (641 rows: 321 and 320, one batch more of 32)."""
import json
import os

import numpy as np
import tensorflow as tf

rng = np.random.RandomState(11)
x_train = rng.rand(641, 6).astype("float32")
y_train = (x_train.sum(axis=1) > 3.0).astype("float32")

os.makedirs("checkpoints", exist_ok=True)
checkpoint = tf.keras.callbacks.ModelCheckpoint("checkpoints/weights.{epoch:02d}.h5", save_weights_only=True)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(8, activation="relu", input_shape=(6,)),
    tf.keras.layers.Dense(1, activation="sigmoid"),
])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.05), loss="binary_crossentropy")
model.fit(x_train, y_train, batch_size=32, epochs=2, verbose=2, callbacks=[checkpoint])
steps = int(model.optimizer.iterations.numpy())

model.load_weights("checkpoints/weights.02.h5")

total = float(sum(w.sum() + np.abs(w).sum() for w in model.get_weights()))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": total, "steps": steps,
               "rate": float(tf.keras.backend.get_value(model.optimizer.learning_rate))}, f)
