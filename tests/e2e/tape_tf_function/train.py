"""Training step compiled with @tf.function, driven by a Python loop."""
import argparse
import json
import os

import numpy as np
import tensorflow as tf
from tensorflow.keras import Model, layers


class Autoencoder(Model):
    def __init__(self, dim, code_size=4):
        super().__init__()
        self.encoder = tf.keras.Sequential([layers.Dense(24, activation="relu"), layers.Dense(code_size)])
        self.decoder = tf.keras.Sequential([layers.Dense(24, activation="relu"), layers.Dense(dim)])

    def call(self, x):
        return self.decoder(self.encoder(x))


DIM = 16

model = Autoencoder(DIM)
optimizer = tf.keras.optimizers.Adam(learning_rate=2e-3)
mse = tf.keras.losses.MeanSquaredError()
train_loss = tf.keras.metrics.Mean(name="train_loss")


@tf.function
def train_step(batch):
    with tf.GradientTape() as tape:
        reconstruction = model(batch, training=True)
        loss = mse(batch, reconstruction)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    train_loss(loss)
    return loss


def low_rank_data(n, dim, rank=3):
    basis = np.random.normal(size=(rank, dim))
    codes = np.random.normal(size=(n, rank))
    return (codes @ basis + 0.01 * np.random.normal(size=(n, dim))).astype(np.float32)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--steps-per-epoch", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()

    data = tf.data.Dataset.from_tensor_slices(low_rank_data(4096, DIM))
    batches = iter(data.shuffle(4096).repeat().batch(args.batch_size))

    for epoch in range(args.epochs):
        train_loss.reset_states()
        for step in range(args.steps_per_epoch):
            train_step(next(batches))
        print(f"epoch {epoch + 1}: loss {train_loss.result():.5f}")

    checksum = float(tf.add_n([tf.reduce_sum(w) + tf.reduce_sum(tf.abs(w)) for w in model.trainable_weights]))
    rank = os.environ.get("HOROVOD_RANK", "single")
    path = os.path.join(os.environ.get("RESULT_DIR", "."), f"result-{rank}.json")
    with open(path, "w") as f:
        json.dump({"checksum": checksum, "steps": int(optimizer.iterations)}, f)


if __name__ == "__main__":
    main()
