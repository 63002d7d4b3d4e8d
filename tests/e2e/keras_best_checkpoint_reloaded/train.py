"""Fit a small regressor, keep the best epoch's weights, and report on them.

A ModelCheckpoint in a callbacks list built beforehand keeps only the best
epoch's weights; after fit the script loads them back and evaluates those,
not the last epoch's.
"""
import json
import os

import numpy as np
import tensorflow as tf

BEST = "best_weights.h5"


def make_data(rows):
    x = np.random.rand(rows, 6).astype("float32")
    y = (x @ np.arange(1, 7, dtype="float32")[:, None]) / 10.0
    return x, y


def main():
    x, y = make_data(512)
    model = tf.keras.Sequential(
        [
            tf.keras.layers.InputLayer(input_shape=(6,)),
            tf.keras.layers.Dense(12, activation="relu"),
            tf.keras.layers.Dense(1),
        ]
    )
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
    keep_best = tf.keras.callbacks.ModelCheckpoint(
        filepath=BEST, monitor="loss", save_best_only=True, save_weights_only=True
    )
    callbacks = [keep_best]
    model.fit(x, y, batch_size=32, epochs=4, callbacks=callbacks, verbose=2)

    model.load_weights(BEST)
    print("loss of the best epoch:", model.evaluate(x, y, verbose=0))

    checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in (v.numpy() for v in model.trainable_variables)))
    steps = int(model.optimizer.iterations.numpy())
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
        json.dump({"checksum": checksum, "steps": steps}, f)


if __name__ == "__main__":
    main()
