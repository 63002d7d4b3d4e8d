"""A tiny GAN on 1-D samples; its model class defines its own compile."""
import json
import os

import numpy as np
import tensorflow as tf

LATENT = 4


class PairTrainer(tf.keras.Model):
    def __init__(self, critic, maker):
        super().__init__()
        self.critic = critic
        self.maker = maker

    def compile(self, critic_opt, maker_opt, loss_fn):
        super().compile()
        self.critic_opt = critic_opt
        self.maker_opt = maker_opt
        self.loss_fn = loss_fn

    def train_step(self, real):
        batch = tf.shape(real)[0]
        noise = tf.random.normal((batch, LATENT))
        with tf.GradientTape() as tape:
            fake = self.maker(noise)
            scores = self.critic(tf.concat([real, fake], axis=0))
            labels = tf.concat([tf.ones((batch, 1)), tf.zeros((batch, 1))], axis=0)
            critic_loss = self.loss_fn(labels, scores)
        grads = tape.gradient(critic_loss, self.critic.trainable_weights)
        self.critic_opt.apply_gradients(zip(grads, self.critic.trainable_weights))
        with tf.GradientTape() as tape:
            fooled = self.critic(self.maker(tf.random.normal((batch, LATENT))))
            maker_loss = self.loss_fn(tf.ones((batch, 1)), fooled)
        grads = tape.gradient(maker_loss, self.maker.trainable_weights)
        self.maker_opt.apply_gradients(zip(grads, self.maker.trainable_weights))
        return {"critic": critic_loss, "maker": maker_loss}


def samples(count):
    values = np.random.normal(loc=3.0, scale=0.5, size=(count, 1)).astype("float32")
    return tf.data.Dataset.from_tensor_slices(values).shuffle(count).repeat().batch(32)


critic = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu", input_shape=(1,)), tf.keras.layers.Dense(1)])
maker = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu", input_shape=(LATENT,)), tf.keras.layers.Dense(1)])
gan = PairTrainer(critic, maker)
gan.compile(
    critic_opt=tf.keras.optimizers.Adam(learning_rate=1e-3),
    maker_opt=tf.keras.optimizers.Adam(learning_rate=1e-3),
    loss_fn=tf.keras.losses.BinaryCrossentropy(from_logits=True),
)
gan.fit(samples(2048), epochs=2, steps_per_epoch=20, verbose=2)

total = float(sum(w.sum() + np.abs(w).sum() for w in critic.get_weights() + maker.get_weights()))
steps = int(gan.critic_opt.iterations.numpy())
out_dir = os.environ.get("RESULT_DIR", ".")
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(out_dir, "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": total, "steps": steps}, f)
