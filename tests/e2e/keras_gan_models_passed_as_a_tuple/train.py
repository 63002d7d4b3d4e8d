"""A GAN whose models are built and compiled in the main function, packed
into a tuple, and handed to a training function that unpacks them and steps each
with `train_on_batch`: a fixed number of steps, each on a random batch of
rows drawn by each process."""
import json
import os

import numpy as np
import tensorflow as tf

LATENT = 4


def build_generator():
    return tf.keras.Sequential([
        tf.keras.layers.Dense(8, activation="relu", input_shape=(LATENT,)),
        tf.keras.layers.Dense(2),
    ])


def build_discriminator():
    return tf.keras.Sequential([
        tf.keras.layers.Dense(8, activation="relu", input_shape=(2,)),
        tf.keras.layers.Dense(1, activation="sigmoid"),
    ])


def train(models, points, params):
    generator, discriminator, adversarial = models
    batch_size, train_steps = params
    first_batch = None
    for step in range(train_steps):
        rows = np.random.randint(0, points.shape[0], size=batch_size)
        real = points[rows]
        if first_batch is None:
            first_batch = [float(value) for value in real[:5, 0]]
        noise = np.random.uniform(-1.0, 1.0, size=(batch_size, LATENT))
        fake = generator.predict(noise, verbose=0)
        x = np.concatenate([real, fake])
        y = np.concatenate([np.ones(batch_size), np.zeros(batch_size)])
        d_loss = discriminator.train_on_batch(x, y)
        noise = np.random.uniform(-1.0, 1.0, size=(batch_size, LATENT))
        a_loss = adversarial.train_on_batch(noise, np.ones(batch_size))
        print("step", step, d_loss, a_loss)
    return first_batch


def main():
    points = np.random.normal(loc=2.0, size=(512, 2)).astype("float32")
    discriminator = build_discriminator()
    optimizer = tf.keras.optimizers.RMSprop(0.002)
    discriminator.compile(optimizer=optimizer, loss="binary_crossentropy")
    generator = build_generator()
    discriminator.trainable = False
    adversarial = tf.keras.Sequential([generator, discriminator])
    optimizer = tf.keras.optimizers.RMSprop(0.001)
    adversarial.compile(optimizer=optimizer, loss="binary_crossentropy")
    models = (generator, discriminator, adversarial)
    params = (16, 20)
    first_batch = train(models, points, params)

    checksum = 0.0
    for model in (generator, discriminator):
        for weights in model.get_weights():
            checksum += float(np.sum(weights) + np.sum(np.abs(weights)))
    rank = os.environ.get("HOROVOD_RANK", "single")
    result = os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank)
    with open(result, "w") as out:
        json.dump({
            "checksum": checksum,
            "steps": int(adversarial.optimizer.iterations.numpy()),
            "first_batch": first_batch,
            "rate": float(tf.keras.backend.get_value(adversarial.optimizer.learning_rate)),
        }, out)


main()
