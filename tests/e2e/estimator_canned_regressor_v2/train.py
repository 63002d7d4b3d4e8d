"""House-price regression with the TF2 canned tf.estimator.DNNRegressor.

TF 2.12 canned estimators take a legacy Keras optimizer instance; training
stops at --max_steps, counted from the global step kept in the model dir.
"""
import json
import os

import numpy as np
import tensorflow as tf
from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_integer("max_steps", 40, "Global step at which training stops.")
flags.DEFINE_integer("batch_size", 50, "Examples per batch.")
flags.DEFINE_float("learning_rate", 0.05, "Adagrad learning rate.")
flags.DEFINE_string("model_dir", "houses_model", "Where checkpoints go.")


def make_houses(n):
    rooms = np.random.randint(1, 8, size=n).astype(np.float32)
    area = (rooms * 25 + np.random.normal(0, 10, size=n)).astype(np.float32)
    distance = np.random.uniform(0, 30, size=n).astype(np.float32)
    price = (50 + 1.8 * area - 2.5 * distance + np.random.normal(0, 15, size=n)) / 100.0
    return {"rooms": rooms, "area": area, "distance": distance}, price.astype(np.float32)


def train_input_fn():
    features, price = make_houses(5000)
    ds = tf.data.Dataset.from_tensor_slices((features, price))
    return ds.shuffle(5000).repeat().batch(FLAGS.batch_size).prefetch(2)


def main(_):
    model_dir = FLAGS.model_dir
    columns = [
        tf.feature_column.numeric_column("rooms"),
        tf.feature_column.numeric_column("area", normalizer_fn=lambda a: a / 100.0),
        tf.feature_column.numeric_column("distance", normalizer_fn=lambda d: d / 30.0),
    ]
    regressor = tf.estimator.DNNRegressor(
        hidden_units=[20, 10],
        feature_columns=columns,
        optimizer=tf.keras.optimizers.legacy.Adagrad(learning_rate=FLAGS.learning_rate),
        model_dir=model_dir,
    )
    regressor.train(input_fn=train_input_fn, max_steps=FLAGS.max_steps)

    global_step = int(regressor.get_variable_value("global_step"))
    checksum = 0.0
    for name in regressor.get_variable_names():
        if name.startswith("dnn/") and name.rsplit("/", 1)[-1] in ("kernel", "bias"):
            w = regressor.get_variable_value(name)
            checksum += float(np.sum(w) + np.sum(np.abs(w)))
    print("global step", global_step, "checksum", checksum)
    result = os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single"))
    with open(result, "w") as f:
        json.dump({"checksum": checksum, "steps": global_step}, f)


if __name__ == "__main__":
    app.run(main)
