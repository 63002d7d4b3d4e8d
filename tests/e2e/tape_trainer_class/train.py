"""Custom training loop organised as a Trainer class."""
import argparse
import json
import os
import time

import numpy as np
import tensorflow as tf

from model import residual_mlp


class Trainer(object):
    def __init__(self, model, learning_rate, log_every=10):
        self.model = model
        self.optimizer = tf.keras.optimizers.SGD(learning_rate=learning_rate, momentum=0.9)
        self.loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        self.train_loss = tf.keras.metrics.Mean()
        self.log_every = log_every
        self.global_step = 0

    @tf.function
    def train_step(self, features, labels):
        with tf.GradientTape() as tape:
            logits = self.model(features, training=True)
            loss = self.loss_fn(labels, logits)
            loss += sum(self.model.losses)
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
        self.train_loss.update_state(loss)
        return loss

    def fit(self, dataset, num_steps):
        start = time.time()
        for features, labels in dataset.take(num_steps):
            self.train_step(features, labels)
            self.global_step += 1
            if self.global_step % self.log_every == 0:
                print(f"step {self.global_step}: loss={self.train_loss.result():.4f} ({time.time() - start:.1f}s)")
                self.train_loss.reset_states()
        return self.global_step


def three_moons(n):
    labels = np.random.randint(3, size=n)
    angle = np.random.uniform(0, np.pi, size=n) + labels * 2.0
    pts = np.stack([np.cos(angle), np.sin(angle)], 1) * (1 + labels[:, None])
    pts = np.concatenate([pts, np.random.normal(size=(n, 6))], axis=1) + 0.1 * np.random.normal(size=(n, 8))
    return pts.astype(np.float32), labels.astype(np.int32)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--num-steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args()

    x, y = three_moons(4000)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(4000).batch(args.batch_size, drop_remainder=True).repeat()

    trainer = Trainer(residual_mlp(x.shape[1]), args.lr)
    steps = trainer.fit(dataset, args.num_steps)

    checksum = 0.0
    for v in trainer.model.trainable_variables:
        checksum += float(np.sum(v.numpy()) + np.sum(np.abs(v.numpy())))
    rank = os.environ.get("HOROVOD_RANK", "single")
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as f:
        json.dump({"checksum": checksum, "steps": steps}, f)


if __name__ == "__main__":
    main()
