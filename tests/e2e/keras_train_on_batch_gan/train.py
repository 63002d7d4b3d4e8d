"""A GAN on 2-D points trained batch by batch with `train_on_batch`: two
critic steps per generator step, the generator trained through a combined
model whose discriminator is frozen."""
import json
import os

import numpy as np
import tensorflow as tf

latent = 4
generator = tf.keras.Sequential([
    tf.keras.layers.Dense(8, activation="relu", input_shape=(latent,)),
    tf.keras.layers.Dense(2),
])
discriminator = tf.keras.Sequential([
    tf.keras.layers.Dense(8, activation="relu", input_shape=(2,)),
    tf.keras.layers.Dense(1, activation="sigmoid"),
])
discriminator.compile(optimizer=tf.keras.optimizers.Adam(0.001), loss="binary_crossentropy")

discriminator.trainable = False
combined = tf.keras.Sequential([generator, discriminator])
combined.compile(optimizer=tf.keras.optimizers.Adam(0.001), loss="binary_crossentropy")

first_batch = None
for epoch in range(2):
    for step in range(12):
        noise = np.random.normal(size=(16, latent))
        fake = generator.predict(noise, verbose=0)
        real = np.random.normal(loc=2.0, size=(16, 2))
        if first_batch is None:
            first_batch = float(real.sum())
        for _ in range(2):  # two critic steps per generator step
            d_loss = discriminator.train_on_batch(
                np.concatenate([real, fake]), np.concatenate([np.ones(16), np.zeros(16)])
            )
        g_loss = combined.train_on_batch(noise, np.ones(16))
    print("epoch", epoch, d_loss, g_loss)

checksum = 0.0
for model in (generator, discriminator):
    for weights in model.get_weights():
        checksum += float(np.sum(weights) + np.sum(np.abs(weights)))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({
        "checksum": checksum,
        "steps": int(combined.optimizer.iterations.numpy()),
        "first_batch": first_batch,
    }, out)
