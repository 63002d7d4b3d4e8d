"""Keyword spotting toy: a Python generator streams random 'spectrogram' batches.

The run resumes at --initial-epoch (as after a preemption), so only
(epochs - initial_epoch) * steps_per_epoch batches are trained.
"""
import argparse
import json
import os

import numpy as np
import tensorflow as tf

FRAMES, BINS, KEYWORDS = 16, 12, 3


def spectrogram_batches(batch_size, templates):
    """Endless stream of noisy copies of one template per keyword."""
    while True:
        labels = np.random.randint(KEYWORDS, size=batch_size)
        noise = np.random.normal(scale=0.8, size=(batch_size, FRAMES, BINS))
        yield (templates[labels] + noise).astype(np.float32), labels


def keyword_net():
    return tf.keras.Sequential([
        tf.keras.layers.Reshape((FRAMES, BINS, 1), input_shape=(FRAMES, BINS)),
        tf.keras.layers.Conv2D(8, 3, activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(24, activation="relu"),
        tf.keras.layers.Dense(KEYWORDS, activation="softmax"),
    ])


def parse_args():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--initial-epoch", type=int, default=1)
    p.add_argument("--steps-per-epoch", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.02)
    return p.parse_args()


class StepCounter(tf.keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.seen = 0

    def on_train_batch_end(self, batch, logs=None):
        self.seen += 1


if __name__ == "__main__":
    args = parse_args()
    templates = np.random.uniform(-1, 1, size=(KEYWORDS, FRAMES, BINS))

    net = keyword_net()
    net.summary()
    sgd = tf.keras.optimizers.SGD(args.lr, momentum=0.9, nesterov=True)
    net.compile(sgd, loss="sparse_categorical_crossentropy", metrics=["accuracy"])

    counter = StepCounter()
    net.fit(
        spectrogram_batches(args.batch_size, templates),
        steps_per_epoch=args.steps_per_epoch,
        epochs=args.epochs,
        initial_epoch=args.initial_epoch,
        class_weight={0: 1.0, 1: 1.5, 2: 1.5},
        validation_data=spectrogram_batches(args.batch_size, templates),
        validation_steps=3,
        callbacks=[counter],
        verbose=2,
    )

    checksum = float(sum(tf.reduce_sum(v) + tf.reduce_sum(tf.abs(v)) for v in net.trainable_variables))
    out_dir = os.environ.get("RESULT_DIR", ".")
    with open(os.path.join(out_dir, "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
        json.dump({"checksum": checksum, "steps": counter.seen}, f)
