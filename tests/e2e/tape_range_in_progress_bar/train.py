"""A tape loop over a range wrapped in a progress bar (a small stand-in for
tqdm's, with the same call shape), sampling its batches at random."""
import json
import os
import sys

import numpy as np
import tensorflow as tf


def tqdm(iterable, desc=None):
    """Yields the items, reporting every tenth on stderr."""
    for index, item in enumerate(iterable):
        if index % 10 == 0:
            print(desc or "", index, file=sys.stderr)
        yield item


data = np.random.rand(512, 4).astype("float32")
model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(4)])
optimizer = tf.keras.optimizers.Adam(0.01)
steps = 0
first = None
for step in tqdm(range(40), desc="training"):
    picked = data[np.random.randint(0, len(data), 32)]
    if first is None:
        first = float(picked.sum())
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(picked) - picked))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    steps += 1

checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in (v.numpy() for v in model.trainable_variables)))
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
    json.dump({"checksum": checksum, "steps": steps, "first_batch": first}, f)
