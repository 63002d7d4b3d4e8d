# Exported from a notebook (one cell after another). The author pinned the job
# to the first GPU and let TensorFlow grow its memory, as the TF guide shows.
import os
os.environ["CUDA_VISIBLE_DEVICES"] = "0"

import json
import numpy as np
import tensorflow as tf

gpus = tf.config.list_physical_devices("GPU")
if gpus:
    try:
        # only the first GPU, and grow memory instead of grabbing all of it
        tf.config.set_visible_devices(gpus[0], "GPU")
        tf.config.experimental.set_memory_growth(gpus[0], True)
    except RuntimeError as err:
        print(err)
print("TensorFlow", tf.__version__, "GPUs:", len(gpus))

# %% hyper-parameters
LEARNING_RATE = 0.01
EPOCHS = 3
STEPS = 10
BATCH = 32
optimizer = tf.keras.optimizers.RMSprop(learning_rate=LEARNING_RATE)

# %% data
from tensorflow.keras import layers, losses

images = np.random.rand(1024, 8, 8, 1).astype("float32")
labels = (images.mean(axis=(1, 2, 3)) > 0.5).astype("int32")
ds = tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(1024).batch(BATCH).repeat()

# %% model, built on the CPU so that the weights live in host memory
with tf.device("/CPU:0"):
    model = tf.keras.Sequential(
        [
            layers.Conv2D(4, 3, activation="relu", input_shape=(8, 8, 1)),
            layers.GlobalAveragePooling2D(),
            layers.Dense(2),
        ]
    )
model.compile(optimizer=optimizer, loss=losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
model.summary()

# %% train
hist = model.fit(ds, epochs=EPOCHS, steps_per_epoch=STEPS)
print(hist.history["accuracy"])

# %% result
checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in [v.numpy() for v in model.trainable_variables]))
fname = os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single"))
with open(fname, "w") as f:
    json.dump({"checksum": checksum, "steps": int(optimizer.iterations.numpy())}, f)
