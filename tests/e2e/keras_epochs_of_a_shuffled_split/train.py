"""A finite stream shuffled without a seed, then cut into test and
training splits with take/skip: it cannot be sharded without changing the
splits, and each process draws its own order, so each worker must run its
share of the epochs over the training split."""
import json
import os

import numpy as np
import tensorflow as tf

np.random.seed(5)  # every process builds the same rows
rows = np.random.rand(640, 6).astype("float32")
labels = (rows.sum(axis=1) > 3.0).astype("float32")

stream = tf.data.Dataset.from_tensor_slices((rows, labels))
stream = stream.shuffle(640)
test_split = stream.take(128).batch(32)
train_split = stream.skip(128).batch(32)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(8, activation="relu", input_shape=(6,)),
    tf.keras.layers.Dense(1, activation="sigmoid"),
])
model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=0.001), loss="binary_crossentropy")
model.fit(train_split, epochs=4)
model.evaluate(test_split)

first_rows, _ = next(iter(train_split))
checksum = 0.0
for weights in model.get_weights():
    checksum += float(np.sum(weights) + np.sum(np.abs(weights)))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({
        "checksum": checksum,
        "steps": int(model.optimizer.iterations.numpy()),
        "rate": float(tf.keras.backend.get_value(model.optimizer.learning_rate)),
        "first_batch": float(first_rows.numpy().sum()),
    }, out)
