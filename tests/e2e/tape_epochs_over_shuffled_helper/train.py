"""A tape loop over a pipeline a helper shuffles, for a count of epochs."""
import json
import os

import numpy as np
import tensorflow as tf

rng = np.random.default_rng(4)
# The same tables in every process: only the split and the order differ.
train_x = rng.normal(size=(320, 5)).astype("float32")
train_y = train_x @ np.array([[1.0], [0.5], [-1.0], [2.0], [0.0]], dtype="float32")
test_x = rng.normal(size=(64, 5)).astype("float32")
test_y = test_x @ np.array([[1.0], [0.5], [-1.0], [2.0], [0.0]], dtype="float32")


def make_dataset(features, labels):
    # Shuffled anew in each process: shards of it would overlap.
    return tf.data.Dataset.from_tensor_slices((features, labels)).shuffle(1000).batch(32)


train_ds = make_dataset(train_x, train_y)
test_ds = make_dataset(test_x, test_y)

model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(5,))])
optimizer = tf.keras.optimizers.SGD(learning_rate=0.01)
first = None
for epoch in range(4):
    for features, labels in train_ds:
        if first is None:
            first = float(features.numpy().sum())
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(features) - labels))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

test_batches = sum(1 for _ in test_ds)
weights = model.get_weights()
out_dir = os.environ.get("RESULT_DIR", ".")
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(out_dir, "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": float(sum(w.sum() + np.abs(w).sum() for w in weights)),
               "steps": int(optimizer.iterations.numpy()),
               "rate": float(optimizer.learning_rate.numpy()),
               "first_batch": first,
               "loops": {"test batches": test_batches}}, f)
