"""Config-driven experiment: every fit() argument comes from one settings dict.

The dict is what gets logged next to the results, so the exact fit arguments
of each run are on record.
"""
import json
import os

import numpy as np
import tensorflow as tf

SETTINGS = {
    "data": {"n_train": 2560, "n_val": 256, "n_features": 12, "batch_size": 32},
    "model": {"units": [32, 16], "dropout": 0.1},
    "optimizer": {"learning_rate": 0.002},
    "fit": {"epochs": 3, "steps_per_epoch": 10, "validation_steps": 4, "verbose": 2},
}


def datasets(cfg):
    n = cfg["n_train"] + cfg["n_val"]
    x = np.random.normal(size=(n, cfg["n_features"])).astype(np.float32)
    y = (np.abs(x[:, 0]) + 0.5 * x[:, 1] > 1.0).astype(np.float32)
    train = tf.data.Dataset.from_tensor_slices((x[: cfg["n_train"]], y[: cfg["n_train"]]))
    val = tf.data.Dataset.from_tensor_slices((x[cfg["n_train"]:], y[cfg["n_train"]:]))
    bs = cfg["batch_size"]
    return train.shuffle(cfg["n_train"]).repeat().batch(bs), val.repeat().batch(bs)


def model_from(cfg, n_features):
    model = tf.keras.Sequential([tf.keras.Input(shape=(n_features,))])
    for units in cfg["units"]:
        model.add(tf.keras.layers.Dense(units, activation="relu"))
        model.add(tf.keras.layers.Dropout(cfg["dropout"]))
    model.add(tf.keras.layers.Dense(1, activation="sigmoid"))
    return model


class StepLog(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.steps = 0

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1


def main():
    train_ds, val_ds = datasets(SETTINGS["data"])
    model = model_from(SETTINGS["model"], SETTINGS["data"]["n_features"])
    model.compile(
        optimizer=tf.keras.optimizers.Adam(**SETTINGS["optimizer"]),
        loss="binary_crossentropy",
        metrics=["accuracy"],
    )
    step_log = StepLog()
    fit_kwargs = dict(SETTINGS["fit"])
    fit_kwargs["callbacks"] = [tf.keras.callbacks.EarlyStopping(monitor="val_loss", patience=3), step_log]
    print("fit arguments:", {k: v for k, v in fit_kwargs.items() if k != "callbacks"})
    history = model.fit(train_ds, validation_data=val_ds, **fit_kwargs)
    print("final val accuracy", history.history["val_accuracy"][-1])

    checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in (v.numpy() for v in model.trainable_variables)))
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
        json.dump({"checksum": checksum, "steps": step_log.steps}, f)


if __name__ == "__main__":
    main()
