"""A small GAN on 2-D points, trained with GradientTape. After every epoch a
helper renders the generator's samples as a PNG; at the end the PNGs become a
GIF, and the last PNG is read back to check the render."""
import json
import os

import imageio
import numpy as np
import tensorflow as tf
from PIL import Image

LATENT = 4
SAMPLE_DIR = "samples"


def render(points, size=32):
    """A scatter of points as a grey image."""
    canvas = np.zeros((size, size), dtype=np.uint8)
    cells = np.clip(((points + 4.0) / 8.0 * (size - 1)).astype(int), 0, size - 1)
    canvas[cells[:, 1], cells[:, 0]] = 255
    return canvas


def save_samples(generator, epoch):
    noise = tf.random.normal([64, LATENT])
    points = generator(noise, training=False).numpy()
    Image.fromarray(render(points)).save(os.path.join(SAMPLE_DIR, "epoch_%03d.png" % epoch))


generator = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(LATENT,)),
    tf.keras.layers.Dense(2),
])
critic = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(2,)),
    tf.keras.layers.Dense(1),
])
g_opt = tf.keras.optimizers.Adam(1e-3)
c_opt = tf.keras.optimizers.Adam(1e-3)
bce = tf.keras.losses.BinaryCrossentropy(from_logits=True)

real_points = np.random.normal(loc=1.5, size=(2048, 2)).astype(np.float32)
dataset = tf.data.Dataset.from_tensor_slices(real_points).batch(64)

os.makedirs(SAMPLE_DIR, exist_ok=True)
steps = 0
first_batch = None
for epoch in range(3):
    for real in dataset:
        if first_batch is None:
            first_batch = float(tf.reduce_sum(real))
        noise = tf.random.normal([real.shape[0], LATENT])
        with tf.GradientTape() as c_tape:
            fake = generator(noise, training=True)
            c_loss = bce(tf.ones_like(real[:, :1]), critic(real)) + bce(tf.zeros_like(real[:, :1]), critic(fake))
        c_grads = c_tape.gradient(c_loss, critic.trainable_variables)
        c_opt.apply_gradients(zip(c_grads, critic.trainable_variables))
        with tf.GradientTape() as g_tape:
            g_loss = bce(tf.ones_like(real[:, :1]), critic(generator(noise, training=True)))
        g_grads = g_tape.gradient(g_loss, generator.trainable_variables)
        g_opt.apply_gradients(zip(g_grads, generator.trainable_variables))
        steps += 1
    save_samples(generator, epoch)
    print("epoch", epoch, float(c_loss), float(g_loss))

frames = [imageio.imread(os.path.join(SAMPLE_DIR, "epoch_%03d.png" % epoch)) for epoch in range(3)]
imageio.mimsave(os.path.join(SAMPLE_DIR, "training.gif"), frames)
last = Image.open(os.path.join(SAMPLE_DIR, "epoch_002.png"))
if last.size != (32, 32):
    raise SystemExit("unexpected render size %s" % (last.size,))

checksum = 0.0
for model in (generator, critic):
    for weights in model.get_weights():
        checksum += float(np.sum(weights) + np.sum(np.abs(weights)))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": steps, "first_batch": first_batch}, out)
