"""A regression whose output directory and files are made by the package's
helpers, which its __init__ re-exports with a star import."""
import json
import os

import numpy as np
import tensorflow as tf

import util

out_dir = os.path.join(os.environ.get("RESULT_DIR", "."), "run")
util.make_dir(out_dir)
util.save_text(os.path.join(out_dir, "settings.txt"), "epochs=4\n")

rows = np.random.RandomState(1).rand(256, 3).astype("float32")
targets = rows.sum(axis=1, keepdims=True)
model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(3,))])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(rows, targets, epochs=4, batch_size=32, verbose=0)
util.save_text(os.path.join(out_dir, "done.txt"), "done\n")

checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in model.get_weights()))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({
        "checksum": checksum,
        "steps": int(model.optimizer.iterations.numpy()),
        "rate": float(tf.keras.backend.get_value(model.optimizer.learning_rate)),
    }, out)
