"""Examples stored as TFRecord files, listed with list_files and read back for fit."""
import json
import os
import tempfile

import numpy as np
import tensorflow as tf

# Eight files of 128 records: 1024 examples, 32 batches of 32 (Keras counts
# one step more per fit of a stream of unknown count: 65 for two epochs); the
# files hold equal counts, which the checker cannot see (DST308). Each process
# writes its own copy in a directory of its own.
records_dir = tempfile.mkdtemp()
table = np.random.default_rng(5).normal(size=(1024, 6)).astype("float32")
for part in range(8):
    path = os.path.join(records_dir, "part-%d.tfrecord" % part)
    with tf.io.TFRecordWriter(path) as writer:
        for row in table[part * 128:(part + 1) * 128]:
            feature = {"x": tf.train.Feature(float_list=tf.train.FloatList(value=row))}
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())


def parse(record):
    x = tf.io.parse_single_example(record, {"x": tf.io.FixedLenFeature([6], tf.float32)})["x"]
    return x, tf.reduce_sum(x, keepdims=True)


files = tf.data.Dataset.list_files(os.path.join(records_dir, "*.tfrecord"))
examples = files.interleave(tf.data.TFRecordDataset, cycle_length=1)
examples = examples.map(parse).batch(32)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(8, activation="relu", input_shape=(6,)),
    tf.keras.layers.Dense(1),
])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.01), loss="mse")
model.fit(examples, epochs=2, verbose=2)

first_x, _ = next(iter(examples))
total = float(sum(w.sum() + np.abs(w).sum() for w in model.get_weights()))
steps = int(model.optimizer.iterations.numpy())
rate = float(tf.keras.backend.get_value(model.optimizer.learning_rate))
out_dir = os.environ.get("RESULT_DIR", ".")
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(out_dir, "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": total, "steps": steps, "rate": rate,
               "first_batch": float(first_x.numpy().sum())}, f)
