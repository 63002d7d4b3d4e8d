"""Images read from class folders with image_dataset_from_directory, then fit."""
import json
import os
import tempfile

import numpy as np
import tensorflow as tf

# 128 small images in two class folders: 8 batches of 16, 4 per worker of
# two. Each process writes its own copy in a directory of its own.
image_root = tempfile.mkdtemp()
pixels = np.random.RandomState(3).randint(0, 256, size=(128, 8, 8, 3)).astype("uint8")
for index, image in enumerate(pixels):
    folder = os.path.join(image_root, "bright" if image.mean() > 127 else "dark")
    os.makedirs(folder, exist_ok=True)
    tf.io.write_file(os.path.join(folder, "%03d.png" % index), tf.io.encode_png(image))

train_images = tf.keras.utils.image_dataset_from_directory(
    image_root, image_size=(8, 8), batch_size=16, seed=11
)
model = tf.keras.Sequential([
    tf.keras.layers.Rescaling(1.0 / 255, input_shape=(8, 8, 3)),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(2),
])
model.compile(
    optimizer=tf.keras.optimizers.SGD(learning_rate=0.05),
    loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
)
model.fit(train_images, epochs=2, verbose=2)

first_images, _ = next(iter(train_images))
total = float(sum(w.sum() + np.abs(w).sum() for w in model.get_weights()))
steps = int(model.optimizer.iterations.numpy())
rate = float(tf.keras.backend.get_value(model.optimizer.learning_rate))
out_dir = os.environ.get("RESULT_DIR", ".")
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(out_dir, "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": total, "steps": steps, "rate": rate,
               "first_batch": float(first_images.numpy().sum())}, f)
