"""A helper copies a subset of a pool of images into class folders, which
image_dataset_from_directory then reads, as course notebooks make a small
cats-and-dogs set: rank 0 copies, and the others must not list the folders
before it has finished."""
import json
import os
import pathlib
import shutil
import tempfile

import numpy as np
import tensorflow as tf

# A pool of 160 small images, each process its own copy in a folder of its own.
pool = pathlib.Path(tempfile.mkdtemp())
pixels = np.random.RandomState(5).randint(0, 256, size=(160, 8, 8, 3)).astype("uint8")
for index, image in enumerate(pixels):
    kind = "bright" if image.mean() > 127 else "dark"
    tf.io.write_file(str(pool / ("%s.%03d.png" % (kind, index))), tf.io.encode_png(image))

subset_root = pathlib.Path("small")


def make_subset(subset_name, start_index, end_index):
    for kind in ("bright", "dark"):
        folder = subset_root / subset_name / kind
        os.makedirs(folder)
        names = ["%s.%03d.png" % (kind, i) for i in range(start_index, end_index)]
        for name in names:
            if (pool / name).exists():
                shutil.copyfile(src=pool / name, dst=folder / name)


# The first 128 indices hold 128 images in all: 8 batches of 16, 4 per
# worker of two.
make_subset("train", start_index=0, end_index=128)

train_images = tf.keras.utils.image_dataset_from_directory(
    subset_root / "train", image_size=(8, 8), batch_size=16, seed=11
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

copied = sum(len(files) for _, _, files in os.walk(subset_root / "train"))
total = float(sum(w.sum() + np.abs(w).sum() for w in model.get_weights()))
steps = int(model.optimizer.iterations.numpy())
rate = float(tf.keras.backend.get_value(model.optimizer.learning_rate))
out_dir = os.environ.get("RESULT_DIR", ".")
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(out_dir, "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": total, "steps": steps, "rate": rate, "loops": {"copied": copied}}, f)
