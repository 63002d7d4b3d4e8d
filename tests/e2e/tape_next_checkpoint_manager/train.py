"""Denoising model trained step by step from a dataset iterator, with
checkpoints kept by tf.train.CheckpointManager (resumable)."""
import argparse
import json
import os

import numpy as np
import tensorflow as tf


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--train_steps", type=int, default=36)
    p.add_argument("--save_every", type=int, default=10)
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--learning_rate", type=float, default=5e-3)
    p.add_argument("--ckpt_dir", type=str, default="./checkpoints")
    return p.parse_args()


class Denoiser(tf.keras.Model):
    def __init__(self, width):
        super().__init__()
        self.enc = tf.keras.layers.Dense(width, activation="relu")
        self.dec = tf.keras.layers.Dense(24)

    def call(self, inputs):
        return self.dec(self.enc(inputs))


def noisy_pairs(batch_size):
    clean = np.random.normal(size=(5000, 24)).astype(np.float32).cumsum(axis=1) / 5.0
    noisy = clean + 0.2 * np.random.normal(size=clean.shape).astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices((noisy, clean))
    return ds.shuffle(5000).repeat().batch(batch_size).prefetch(2)


def main():
    args = parse_args()
    net = Denoiser(width=32)
    optimizer = tf.keras.optimizers.Adam(learning_rate=args.learning_rate, beta_1=0.8)

    ckpt = tf.train.Checkpoint(step=tf.Variable(0, dtype=tf.int64), optimizer=optimizer, net=net)
    manager = tf.train.CheckpointManager(ckpt, args.ckpt_dir, max_to_keep=3)
    ckpt.restore(manager.latest_checkpoint)
    if manager.latest_checkpoint:
        print("Restored from {}".format(manager.latest_checkpoint))
    else:
        print("Initializing from scratch.")

    @tf.function
    def train_step(noisy, clean):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(net(noisy) - clean))
        variables = net.trainable_variables
        gradients = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(gradients, variables))
        return loss

    iterator = iter(noisy_pairs(args.batch_size))
    steps_run = 0
    for _ in range(args.train_steps):
        noisy, clean = next(iterator)
        loss = train_step(noisy, clean)
        ckpt.step.assign_add(1)
        steps_run += 1
        if int(ckpt.step) % args.save_every == 0:
            save_path = manager.save()
            print("Saved checkpoint for step {}: {} (loss {:.4f})".format(int(ckpt.step), save_path, loss.numpy()))

    checksum = sum(float(tf.reduce_sum(v) + tf.reduce_sum(tf.abs(v))) for v in net.trainable_variables)
    rank = os.environ.get("HOROVOD_RANK", "single")
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-{}.json".format(rank)), "w") as fp:
        json.dump({"checksum": checksum, "steps": steps_run}, fp)


if __name__ == "__main__":
    main()
