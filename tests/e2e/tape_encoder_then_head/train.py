"""An encoder trained first, then a head trained on its frozen features: two loops, two models."""
import json
import os

import numpy as np
import tensorflow as tf

rng = np.random.default_rng(21)
# The same table in every process: only a split makes the workers' batches differ.
inputs = rng.normal(size=(640, 6)).astype("float32")
targets = (inputs[:, :3].sum(axis=1, keepdims=True) > 0).astype("float32")

encoder = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="tanh", input_shape=(6,))])
decoder = tf.keras.Sequential([tf.keras.layers.Dense(6, input_shape=(4,))])
pretrain_optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)

first = None
for step in range(40):
    rows = np.random.choice(len(inputs), size=16)
    if first is None:
        first = float(inputs[rows].sum())
    with tf.GradientTape() as tape:
        rebuilt = decoder(encoder(inputs[rows]))
        loss = tf.reduce_mean(tf.square(rebuilt - inputs[rows]))
    variables = encoder.trainable_variables + decoder.trainable_variables
    grads = tape.gradient(loss, variables)
    pretrain_optimizer.apply_gradients(zip(grads, variables))

head = tf.keras.Sequential([tf.keras.layers.Dense(1, activation="sigmoid", input_shape=(4,))])
head_optimizer = tf.keras.optimizers.SGD(learning_rate=0.1)
head_steps = 0
for step in range(30):
    rows = np.random.choice(len(inputs), size=16)
    features = encoder(inputs[rows])
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.keras.losses.binary_crossentropy(targets[rows], head(features)))
    grads = tape.gradient(loss, head.trainable_variables)
    head_optimizer.apply_gradients(zip(grads, head.trainable_variables))
    head_steps += 1

weights = encoder.get_weights() + decoder.get_weights() + head.get_weights()
out_dir = os.environ.get("RESULT_DIR", ".")
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(out_dir, "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": float(sum(w.sum() + np.abs(w).sum() for w in weights)),
               "steps": int(pretrain_optimizer.iterations.numpy()) + head_steps,
               "first_batch": first}, f)
