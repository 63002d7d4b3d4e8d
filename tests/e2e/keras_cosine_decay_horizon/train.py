"""A cosine-decayed rate over exactly the steps the training takes."""
import json
import os

import numpy as np
import tensorflow as tf

rows, batch, epochs = 1024, 32, 4
total_steps = epochs * (rows // batch)
features = np.random.normal(size=(rows, 6)).astype("float32")
targets = features.sum(axis=1, keepdims=True).astype("float32")
data = tf.data.Dataset.from_tensor_slices((features, targets)).shuffle(rows).batch(batch)

schedule = tf.keras.optimizers.schedules.CosineDecay(0.01, total_steps, alpha=0.1)
model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(6,)), tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=schedule), loss="mse")
model.fit(data, epochs=epochs, verbose=2)

steps = int(model.optimizer.iterations.numpy())
# The rate the schedule gives at the last step: its floor once the decay is done.
final_rate = float(model.optimizer.learning_rate(model.optimizer.iterations).numpy()) if callable(model.optimizer.learning_rate) else float(tf.keras.backend.get_value(model.optimizer.learning_rate))
total = float(sum(w.sum() + np.abs(w).sum() for w in model.get_weights()))
out_dir = os.environ.get("RESULT_DIR", ".")
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(out_dir, "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": total, "steps": steps, "rate": final_rate}, f)
