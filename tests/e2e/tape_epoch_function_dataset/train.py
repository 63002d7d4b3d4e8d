"""An epoch loop calling a function that walks a finite tf.data pipeline
once, with a `@tf.function` step: nothing bounds the steps but the data."""
import json
import os

import numpy as np
import tensorflow as tf

EPOCHS = 3
BATCH_SIZE = 40

x = np.random.rand(960, 5).astype(np.float32)
y = (x @ np.array([[1.0], [-2.0], [0.5], [3.0], [-1.0]], dtype=np.float32))
dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(960).batch(BATCH_SIZE)

model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.Adam(0.01)
loss_fn = tf.keras.losses.MeanSquaredError()
progress = {"steps": 0, "first_batch": None}


@tf.function
def train_step(features, labels):
    with tf.GradientTape() as tape:
        loss = loss_fn(labels, model(features, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


def train_one_epoch(data):
    total = 0.0
    for features, labels in data:
        if progress["first_batch"] is None:
            progress["first_batch"] = float(tf.reduce_sum(features))
        total += float(train_step(features, labels))
        progress["steps"] += 1
    return total


for epoch in range(EPOCHS):
    epoch_loss = train_one_epoch(dataset)
    print("epoch", epoch, "loss", epoch_loss)

checksum = 0.0
for variable in model.trainable_variables:
    checksum += float(np.sum(variable.numpy()) + np.sum(np.abs(variable.numpy())))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": progress["steps"], "first_batch": progress["first_batch"]}, out)
