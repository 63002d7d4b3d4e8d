"""Regression on a synthetic target, configured with absl flags.

SGD with Nesterov momentum on an exponentially decaying learning rate; the
model is exported as a SavedModel at the end.
"""
import json
import os

from absl import app
from absl import flags
from absl import logging
import numpy as np
import tensorflow as tf

FLAGS = flags.FLAGS

flags.DEFINE_integer("epochs", 3, "Number of epochs.")
flags.DEFINE_integer("steps_per_epoch", 12, "Batches per epoch.")
flags.DEFINE_integer("validation_steps", 4, "Validation batches per epoch.")
flags.DEFINE_integer("batch_size", 64, "Global batch size.")
flags.DEFINE_float("base_lr", 0.02, "Initial learning rate.")
flags.DEFINE_float("decay_rate", 0.9, "Decay factor per `decay_steps`.")
flags.DEFINE_integer("decay_steps", 10, "Steps between decays.")
flags.DEFINE_string("export_dir", "exported/regressor", "Where the SavedModel goes.")


def synthetic_regression(n, d=8):
    x = np.random.normal(size=(n, d)).astype("float32")
    w = np.random.normal(size=(d, 1)).astype("float32")
    y = np.sin(x @ w) + 0.1 * np.random.normal(size=(n, 1)).astype("float32")
    return x, y


def input_pipeline(x, y, batch_size, training):
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if training:
        ds = ds.shuffle(len(x), reshuffle_each_iteration=True)
    return ds.repeat().batch(batch_size, drop_remainder=training)


def create_model(d):
    inputs = tf.keras.Input(shape=(d,), name="features")
    h = tf.keras.layers.Dense(32, activation="tanh")(inputs)
    h = tf.keras.layers.Dense(32, activation="tanh")(h)
    outputs = tf.keras.layers.Dense(1, name="prediction")(h)
    return tf.keras.Model(inputs=inputs, outputs=outputs, name="regressor")


def main(argv):
    del argv  # Unused.
    x, y = synthetic_regression(4000)
    train_ds = input_pipeline(x[:3500], y[:3500], FLAGS.batch_size, training=True)
    val_ds = input_pipeline(x[3500:], y[3500:], FLAGS.batch_size, training=False)

    lr_schedule = tf.keras.optimizers.schedules.ExponentialDecay(
        FLAGS.base_lr, decay_steps=FLAGS.decay_steps, decay_rate=FLAGS.decay_rate, staircase=True
    )
    optimizer = tf.keras.optimizers.SGD(learning_rate=lr_schedule, momentum=0.9, nesterov=True)

    model = create_model(x.shape[1])
    model.compile(optimizer=optimizer, loss="mse", metrics=[tf.keras.metrics.MeanAbsoluteError()])

    early_stop = tf.keras.callbacks.EarlyStopping(monitor="val_loss", patience=5, restore_best_weights=False)
    model.fit(
        train_ds,
        validation_data=val_ds,
        epochs=FLAGS.epochs,
        steps_per_epoch=FLAGS.steps_per_epoch,
        validation_steps=FLAGS.validation_steps,
        callbacks=[early_stop],
        verbose=2,
    )
    logging.info("finished after %d optimizer steps", int(optimizer.iterations))

    model.save(FLAGS.export_dir)

    checksum = 0.0
    for v in model.trainable_variables:
        checksum += float(tf.reduce_sum(v)) + float(tf.reduce_sum(tf.abs(v)))
    result_dir = os.environ.get("RESULT_DIR", ".")
    tag = os.environ.get("HOROVOD_RANK", "single")
    with open(os.path.join(result_dir, "result-%s.json" % tag), "w") as f:
        json.dump({"checksum": checksum, "steps": int(optimizer.iterations)}, f)


if __name__ == "__main__":
    app.run(main)
