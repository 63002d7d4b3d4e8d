"""A GradientTape loop over the training split of a stream shuffled
without a seed and cut by take/skip, inside an epoch loop: each worker
must run its share of the epochs, in its own order."""
import json
import os

import numpy as np
import tensorflow as tf

np.random.seed(9)  # every process builds the same rows
inputs = np.random.rand(600, 5).astype("float32")
targets = inputs.sum(axis=1, keepdims=True).astype("float32")

examples = tf.data.Dataset.from_tensor_slices((inputs, targets)).shuffle(600)
held_out = examples.take(120).batch(40, drop_remainder=True)
train_examples = examples.skip(120).batch(40, drop_remainder=True)

layer = tf.keras.layers.Dense(1)
optimizer = tf.keras.optimizers.SGD(0.01)
first_batch = None
for epoch in range(6):
    for x, y in train_examples:
        if first_batch is None:
            first_batch = float(x.numpy().sum())
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(layer(x) - y))
        grads = tape.gradient(loss, layer.trainable_variables)
        optimizer.apply_gradients(zip(grads, layer.trainable_variables))
    print("epoch", epoch, float(loss))

checksum = 0.0
for weights in layer.get_weights():
    checksum += float(np.sum(weights) + np.sum(np.abs(weights)))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({
        "checksum": checksum,
        "steps": int(optimizer.iterations.numpy()),
        "rate": float(tf.keras.backend.get_value(optimizer.learning_rate)),
        "first_batch": first_batch,
    }, out)
