"""A regression trained with GradientTape that keeps a checkpoint per epoch
in a folder it creates with os.mkdir the first time."""
import json
import os

import numpy as np
import tensorflow as tf

CKPT_DIR = "checkpoints"

if not os.path.exists(CKPT_DIR):
    os.mkdir(CKPT_DIR)

x = np.random.normal(size=(1024, 6)).astype(np.float32)
y = (x @ np.linspace(-1.0, 1.0, 6).astype(np.float32))[:, None]
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(64)

model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="tanh", input_shape=(6,)), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.02)
checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
manager = tf.train.CheckpointManager(checkpoint, CKPT_DIR, max_to_keep=2)

steps = 0
first_batch = None
for epoch in range(3):
    for features, targets in dataset:
        if first_batch is None:
            first_batch = float(tf.reduce_sum(features))
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(features) - targets) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        steps += 1
    manager.save()

checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in model.get_weights()))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": steps, "first_batch": first_batch}, out)
