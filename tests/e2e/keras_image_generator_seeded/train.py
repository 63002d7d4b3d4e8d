"""Keras's image augmenter over in-memory images, its iterator seeded: the
seed sets the order it shuffles the examples in, so with one seed every
worker would walk the same batches."""
import json
import os

import numpy as np
import tensorflow as tf
from tensorflow.keras.preprocessing.image import ImageDataGenerator

rng = np.random.RandomState(5)
images = rng.rand(512, 8, 8, 1).astype("float32")
labels = tf.keras.utils.to_categorical((images.mean(axis=(1, 2, 3)) > 0.5).astype("int64"), 2)

augmenter = ImageDataGenerator(rescale=1.0)
batches = augmenter.flow(images, labels, batch_size=16, seed=7)

model = tf.keras.Sequential([
    tf.keras.layers.Flatten(input_shape=(8, 8, 1)),
    tf.keras.layers.Dense(2, activation="softmax"),
])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.05), loss="categorical_crossentropy")
model.fit(batches, steps_per_epoch=16, epochs=2, verbose=2)

first_images, _ = batches[0]
total = float(sum(w.sum() + np.abs(w).sum() for w in model.get_weights()))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": total, "steps": int(model.optimizer.iterations.numpy()),
               "rate": float(tf.keras.backend.get_value(model.optimizer.learning_rate)),
               "first_batch": float(first_images.sum())}, f)
