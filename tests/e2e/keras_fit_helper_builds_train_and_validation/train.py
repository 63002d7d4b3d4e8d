"""One helper builds the training and the validation pipelines alike."""
import json
import os

import numpy as np
import tensorflow as tf

rng = np.random.default_rng(3)
# The same tables in every process: only a split makes the workers' batches differ.
train_x = rng.normal(size=(1024, 6)).astype("float32")
train_y = (train_x.sum(axis=1, keepdims=True) > 0).astype("float32")
val_x = rng.normal(size=(256, 6)).astype("float32")
val_y = (val_x.sum(axis=1, keepdims=True) > 0).astype("float32")


def make_dataset(features, labels):
    dataset = tf.data.Dataset.from_tensor_slices((features, labels)).map(
        lambda x, y: (x * 0.5, y)
    )
    return dataset.batch(32).prefetch(tf.data.AUTOTUNE)


train_ds = make_dataset(train_x, train_y)
val_ds = make_dataset(val_x, val_y)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(8, activation="relu", input_shape=(6,)),
    tf.keras.layers.Dense(1, activation="sigmoid"),
])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.05), loss="binary_crossentropy")
model.fit(train_ds, validation_data=val_ds, epochs=2, verbose=2)

# Every worker validates on all of the validation data.
validation_batches = sum(1 for _ in val_ds)
first_input, _ = next(iter(train_ds))
total = float(sum(w.sum() + np.abs(w).sum() for w in model.get_weights()))
steps = int(model.optimizer.iterations.numpy())
rate = float(tf.keras.backend.get_value(model.optimizer.learning_rate))
out_dir = os.environ.get("RESULT_DIR", ".")
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(out_dir, "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": total, "steps": steps, "rate": rate,
               "first_batch": float(first_input.numpy().sum()),
               "loops": {"validation batches": validation_batches}}, f)
