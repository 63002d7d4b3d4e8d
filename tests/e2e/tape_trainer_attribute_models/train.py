"""A trainer object holds an encoder and a decoder as attributes and steps
both under one tape, in a @tf.function method its own train method calls;
the dataset reaches that method as a parameter of a call on a new trainer.
The broadcast must name both models (through `self`), the dataset must be
sharded at its source, and each worker takes half the steps."""
import json
import os

import numpy as np
import tensorflow as tf


class Trainer:
    def __init__(self):
        self.encoder = tf.keras.Sequential([tf.keras.layers.Dense(6, activation="tanh")])
        self.decoder = tf.keras.Sequential([tf.keras.layers.Dense(4)])
        self.optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
        self.steps = 0
        self.first_batch = None

    @tf.function
    def train_step(self, x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(self.decoder(self.encoder(x)) - x))
        variables = self.encoder.trainable_variables + self.decoder.trainable_variables
        grads = tape.gradient(loss, variables)
        self.optimizer.apply_gradients(zip(grads, variables))
        return loss

    def train(self, dataset, epochs):
        for epoch in range(epochs):
            for x in dataset:
                if self.first_batch is None:
                    self.first_batch = float(tf.reduce_sum(x))
                self.train_step(x)
                self.steps += 1


rows = np.linspace(-1.0, 1.0, 128 * 4, dtype=np.float32).reshape(128, 4)
ds = tf.data.Dataset.from_tensor_slices(rows).batch(16)
trainer = Trainer()
trainer.train(ds, 3)

variables = trainer.encoder.variables + trainer.decoder.variables
checksum = sum(float(np.sum(v.numpy()) + np.sum(np.abs(v.numpy()))) for v in variables)
rate = float(trainer.optimizer.learning_rate.numpy())
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": trainer.steps, "first_batch": trainer.first_batch, "rate": rate}, out)
