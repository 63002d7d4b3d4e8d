"""A tape loop over a text_dataset_from_directory, which shuffles its files
in each process its own way unless seeded: sharding it by rank needs one
order in every worker, or the shards overlap. Features are the text's length
and its count of spaces; labels are the directory names."""
import json
import os

import numpy as np
import tensorflow as tf

here = os.path.dirname(os.path.abspath(__file__))
ds = tf.keras.utils.text_dataset_from_directory(os.path.join(here, "texts"), batch_size=4)


def features(text, label):
    length = tf.cast(tf.strings.length(text), tf.float32) / 100.0
    spaces = tf.cast(tf.strings.length(tf.strings.regex_replace(text, "[^ ]", "")), tf.float32) / 50.0
    return tf.stack([length, spaces], axis=1), label


ds = ds.map(features)
model = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="tanh"), tf.keras.layers.Dense(2)])
model.build((None, 2))
optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

steps = 0
first_batch = None
for epoch in range(3):
    for x, y in ds:
        if first_batch is None:
            first_batch = float(tf.reduce_sum(x))
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        steps += 1

checksum = sum(float(np.sum(v.numpy()) + np.sum(np.abs(v.numpy()))) for v in model.trainable_variables)
rate = float(optimizer.learning_rate.numpy())
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": steps, "first_batch": first_batch, "rate": rate}, out)
