"""A tiny GAN that learns a 2-D ring of Gaussians.

Generator and discriminator each have their own optimizer; one compiled step
records both tapes at once, the way the DCGAN tutorial does.
"""
import json
import os
import time

import numpy as np
import tensorflow as tf

NOISE_DIM = 8
BATCH_SIZE = 64
TRAIN_STEPS = 30
LOG_EVERY = 10


def ring_samples(n, modes=8, radius=2.0):
    angles = 2 * np.pi * np.random.randint(modes, size=n) / modes
    centres = np.stack([radius * np.cos(angles), radius * np.sin(angles)], axis=1)
    return (centres + 0.05 * np.random.randn(n, 2)).astype(np.float32)


def make_generator():
    return tf.keras.Sequential(
        [
            tf.keras.layers.Dense(32, activation="relu", input_shape=(NOISE_DIM,)),
            tf.keras.layers.Dense(32, activation="relu"),
            tf.keras.layers.Dense(2),
        ],
        name="generator",
    )


def make_discriminator():
    return tf.keras.Sequential(
        [
            tf.keras.layers.Dense(32, input_shape=(2,)),
            tf.keras.layers.LeakyReLU(0.2),
            tf.keras.layers.Dense(1),
        ],
        name="discriminator",
    )


cross_entropy = tf.keras.losses.BinaryCrossentropy(from_logits=True)


def discriminator_loss(real_output, fake_output):
    real_loss = cross_entropy(tf.ones_like(real_output), real_output)
    fake_loss = cross_entropy(tf.zeros_like(fake_output), fake_output)
    return real_loss + fake_loss


def generator_loss(fake_output):
    return cross_entropy(tf.ones_like(fake_output), fake_output)


generator = make_generator()
discriminator = make_discriminator()
generator_optimizer = tf.keras.optimizers.Adam(1e-3, beta_1=0.5)
discriminator_optimizer = tf.keras.optimizers.Adam(1e-3, beta_1=0.5)


@tf.function
def train_step(real):
    noise = tf.random.normal([BATCH_SIZE, NOISE_DIM])
    with tf.GradientTape() as gen_tape, tf.GradientTape() as disc_tape:
        fake = generator(noise, training=True)
        real_output = discriminator(real, training=True)
        fake_output = discriminator(fake, training=True)
        gen_loss = generator_loss(fake_output)
        disc_loss = discriminator_loss(real_output, fake_output)

    gradients_of_generator = gen_tape.gradient(gen_loss, generator.trainable_variables)
    gradients_of_discriminator = disc_tape.gradient(disc_loss, discriminator.trainable_variables)

    generator_optimizer.apply_gradients(zip(gradients_of_generator, generator.trainable_variables))
    discriminator_optimizer.apply_gradients(zip(gradients_of_discriminator, discriminator.trainable_variables))
    return gen_loss, disc_loss


def train(dataset, steps):
    start = time.time()
    done = 0
    for step, real in enumerate(dataset.take(steps)):
        g, d = train_step(real)
        done += 1
        if (step + 1) % LOG_EVERY == 0:
            print("step {}: gen {:.3f} disc {:.3f} ({:.1f}s)".format(step + 1, g, d, time.time() - start))
    return done


if __name__ == "__main__":
    data = ring_samples(10000)
    dataset = tf.data.Dataset.from_tensor_slices(data).shuffle(10000).batch(BATCH_SIZE, drop_remainder=True).repeat()
    steps_done = train(dataset, TRAIN_STEPS)

    variables = generator.trainable_variables + discriminator.trainable_variables
    checksum = float(sum(tf.reduce_sum(v) + tf.reduce_sum(tf.abs(v)) for v in variables))
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
        json.dump({"checksum": checksum, "steps": steps_done}, f)
