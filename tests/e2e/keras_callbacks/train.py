#!/usr/bin/env python
"""Binary classification with the usual set of Keras callbacks."""

import argparse
import json
import os
import time

import numpy as np
import tensorflow as tf
from tensorflow.keras import callbacks, layers


class BatchCounter(callbacks.Callback):
    """Counts the training batches actually run and times each epoch."""

    def __init__(self):
        super().__init__()
        self.batches = 0
        self._epoch_start = None

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_start = time.time()

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        logs["epoch_seconds"] = time.time() - self._epoch_start


def make_data(n=2000, d=12):
    x = np.random.randn(n, d).astype(np.float32)
    w = np.random.randn(d)
    y = (x @ w + 0.3 * np.random.randn(n) > 0).astype(np.float32)
    return x, y


def build_model(d):
    model = tf.keras.Sequential(name="binary_mlp")
    model.add(layers.Dense(32, activation="relu", input_shape=(d,)))
    model.add(layers.Dropout(0.1))
    model.add(layers.Dense(16, activation="relu"))
    model.add(layers.Dense(1, activation="sigmoid"))
    return model


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--steps-per-epoch", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--checkpoint-dir", default="checkpoints")
    parser.add_argument("--log-dir", default="logs")
    args = parser.parse_args(argv)

    x, y = make_data()
    split = int(0.9 * len(x))
    train = tf.data.Dataset.from_tensor_slices((x[:split], y[:split])).shuffle(split).repeat().batch(args.batch_size)
    val = tf.data.Dataset.from_tensor_slices((x[split:], y[split:])).batch(args.batch_size)

    model = build_model(x.shape[1])
    opt = tf.keras.optimizers.Adam(learning_rate=args.lr)
    model.compile(optimizer=opt, loss="binary_crossentropy", metrics=["accuracy"])

    os.makedirs(args.checkpoint_dir, exist_ok=True)
    counter = BatchCounter()
    cbs = [
        callbacks.ModelCheckpoint(
            os.path.join(args.checkpoint_dir, "weights-{epoch:02d}.h5"),
            save_weights_only=True,
        ),
        callbacks.EarlyStopping(monitor="loss", patience=2),
        callbacks.CSVLogger(os.path.join(args.log_dir, "history.csv")),
        callbacks.TensorBoard(log_dir=args.log_dir, update_freq="epoch"),
        counter,
    ]
    os.makedirs(args.log_dir, exist_ok=True)
    model.fit(
        train,
        epochs=args.epochs,
        steps_per_epoch=args.steps_per_epoch,
        validation_data=val,
        callbacks=cbs,
        verbose=2,
    )

    checksum = sum(float(tf.reduce_sum(v) + tf.reduce_sum(tf.abs(v))) for v in model.trainable_variables)
    result_file = os.path.join(
        os.environ.get("RESULT_DIR", "."), "result-{}.json".format(os.environ.get("HOROVOD_RANK", "single"))
    )
    with open(result_file, "w") as f:
        json.dump({"checksum": checksum, "steps": counter.batches}, f)
    print("wrote", result_file)


if __name__ == "__main__":
    main()
