"""A GAN-style tape loop that walks its images with a cursor of its own:
`start += batch_size`, wrapping to 0 near the end. Every worker would walk
the same positions, so the loop must stay whole and the rate as written."""
import json
import os

import numpy as np
import tensorflow as tf

rows = np.linspace(-1.0, 1.0, 48 * 6, dtype=np.float32).reshape(48, 6)
batch_size = 8
model = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="tanh"), tf.keras.layers.Dense(6)])
model.build((None, 6))
optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)


@tf.function
def train_step(real):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(real) - real))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


steps = 0
start = 0
for step in range(30):
    real = rows[start:start + batch_size]
    train_step(real)
    steps += 1
    start += batch_size
    if start > len(rows) - batch_size:
        start = 0

rate = float(optimizer.learning_rate.numpy())
checksum = sum(float(np.sum(v.numpy()) + np.sum(np.abs(v.numpy()))) for v in model.trainable_variables)
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": steps, "rate": rate, "loops": {"training steps": steps}}, out)
