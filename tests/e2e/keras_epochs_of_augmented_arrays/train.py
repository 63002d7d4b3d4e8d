"""A fit on Keras' image augmenter over in-memory arrays, as generator
scripts train with it: the augmenter shuffles the rows in each process's
own order, so each worker must run its share of the epochs over them."""
import json
import os

import numpy as np
import tensorflow as tf
from tensorflow.keras.preprocessing.image import ImageDataGenerator


def synthetic_images():
    np.random.seed(2)  # every process builds the same rows
    images = np.random.rand(512, 8, 8, 1).astype("float32")
    labels = tf.keras.utils.to_categorical((images.mean(axis=(1, 2, 3)) > 0.5).astype("int64"), 2)
    return images, labels


images, labels = synthetic_images()
model = tf.keras.Sequential([
    tf.keras.layers.Flatten(input_shape=(8, 8, 1)),
    tf.keras.layers.Dense(2, activation="softmax"),
])
model.compile(loss="categorical_crossentropy", optimizer=tf.keras.optimizers.SGD(learning_rate=0.01))
flips = ImageDataGenerator(horizontal_flip=True)
model.fit(flips.flow(images, labels, batch_size=32), epochs=6)

checksum = 0.0
for weights in model.get_weights():
    checksum += float(np.sum(weights) + np.sum(np.abs(weights)))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({
        "checksum": checksum,
        "steps": int(model.optimizer.iterations.numpy()),
        "rate": float(tf.keras.backend.get_value(model.optimizer.learning_rate)),
    }, out)
