"""Two classifiers on splits a dataset loader returns at once: picked from
the dict of splits and unpacked from a tuple (then continued under the same
name), and unpacked from the list that `split=[...]` asks for. Each worker
must train on its shard of the training split only."""
import json
import os

import numpy as np
import tfds_stand_in  # noqa: F401  (no download in tests)
import tensorflow as tf
import tensorflow_datasets as tfds

dataset, info = tfds.load("points", with_info=True, as_supervised=True)
train_dataset, test_dataset = dataset["train"], dataset["test"]
train_dataset = train_dataset.shuffle(512)
train_dataset = train_dataset.batch(32)
test_dataset = test_dataset.batch(32)

(train_examples, validation_examples), info = tfds.load("points", split=["train", "test"], with_info=True, as_supervised=True)
train_batches = train_examples.shuffle(512).batch(32)
validation_batches = validation_examples.batch(32)


def classifier():
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(8, activation="relu", input_shape=(6,)),
        tf.keras.layers.Dense(1, activation="sigmoid"),
    ])
    model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.05), loss="binary_crossentropy")
    return model


first = classifier()
first.fit(train_dataset, epochs=2, validation_data=test_dataset, verbose=2)
second = classifier()
second.fit(train_batches, epochs=2, validation_data=validation_batches, verbose=2)

steps = int(first.optimizer.iterations.numpy()) + int(second.optimizer.iterations.numpy())
checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for model in (first, second) for w in model.get_weights()))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": steps,
               "rate": float(tf.keras.backend.get_value(first.optimizer.learning_rate))}, out)
