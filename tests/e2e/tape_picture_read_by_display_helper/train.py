"""An autoencoder trained with a tape; after each epoch a helper saves a
picture of its reconstructions, and a display helper opens the last one
once training is done."""
import json
import os

import numpy as np
import tensorflow as tf
from PIL import Image

EPOCHS = 4

images = np.random.rand(256, 16).astype("float32")
dataset = tf.data.Dataset.from_tensor_slices(images).shuffle(256).batch(32)
model = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="relu"), tf.keras.layers.Dense(16)])
optimizer = tf.keras.optimizers.Adam(0.01)
steps = tf.Variable(0, trainable=False)


def save_reconstructions(epoch):
    picture = (np.clip(model(images[:8]).numpy(), 0.0, 1.0) * 255).astype("uint8")
    Image.fromarray(picture).resize((160, 80)).save("reconstruction_{:03d}.png".format(epoch))


@tf.function
def train_step(batch):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(batch) - batch))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    steps.assign_add(1)
    return loss


def train(data, epochs):
    for epoch in range(epochs):
        for batch in data:
            train_step(batch)
        save_reconstructions(epoch + 1)


def display_reconstructions(epoch):
    return Image.open("reconstruction_{:03d}.png".format(epoch))


train(dataset, EPOCHS)
shown = display_reconstructions(EPOCHS)
print("last picture", shown.size)

checksum = float(sum(np.sum(v) + np.sum(np.abs(v)) for v in (w.numpy() for w in model.trainable_variables)))
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
    json.dump({"checksum": checksum, "steps": int(steps.numpy()), "loops": {"shown": shown.size[0]}}, f)
