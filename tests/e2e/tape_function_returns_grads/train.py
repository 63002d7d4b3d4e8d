"""Autoencoder whose compiled function only computes gradients.

The gradients come back to Python, where they are clipped per tensor and
applied; this keeps the optimizer outside the traced function so that the
learning rate can be changed between steps.
"""
import argparse
import json
import os

import numpy as np
import tensorflow as tf


class AutoEncoder(tf.keras.Model):
    def __init__(self, dim, code):
        super().__init__()
        self.enc = tf.keras.layers.Dense(code, activation="relu")
        self.dec = tf.keras.layers.Dense(dim)

    def call(self, x):
        return self.dec(self.enc(x))


def parse():
    ap = argparse.ArgumentParser()
    ap.add_argument("--num-steps", type=int, default=40)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--decay-at", type=int, default=30)
    return ap.parse_args()


def main():
    args = parse()
    dim = 24
    basis = np.random.normal(size=(4, dim)).astype(np.float32)
    coeffs = np.random.normal(size=(8192, 4)).astype(np.float32)
    data = coeffs @ basis + 0.05 * np.random.normal(size=(8192, dim)).astype(np.float32)
    batches = iter(tf.data.Dataset.from_tensor_slices(data).shuffle(8192).repeat().batch(args.batch))

    model = AutoEncoder(dim, 6)
    opt = tf.keras.optimizers.SGD(learning_rate=args.lr, momentum=0.8)

    @tf.function(jit_compile=False, reduce_retracing=True)
    def gradients(x):
        with tf.GradientTape() as tape:
            recon = model(x, training=True)
            loss = tf.reduce_mean(tf.square(recon - x))
        return loss, tape.gradient(loss, model.trainable_variables)

    steps_run = 0
    for step in range(args.num_steps):
        if step == args.decay_at:
            opt.learning_rate.assign(opt.learning_rate * 0.1)
        x = next(batches)
        loss, grads = gradients(x)
        grads = [tf.clip_by_norm(g, 5.0) for g in grads]
        opt.apply_gradients(zip(grads, model.trainable_variables))
        steps_run += 1
        if step % 10 == 0:
            print(f"step {step:3d}  loss {loss.numpy():.5f}")

    total = 0.0
    for var in model.trainable_variables:
        total += float(tf.reduce_sum(var) + tf.reduce_sum(tf.abs(var)))
    rank = os.environ.get("HOROVOD_RANK", "single")
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), f"result-{rank}.json"), "w") as f:
        json.dump({"checksum": total, "steps": steps_run}, f)


if __name__ == "__main__":
    main()
