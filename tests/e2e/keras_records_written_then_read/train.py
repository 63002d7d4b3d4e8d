"""Convert arrays to a TFRecord file in a helper, then train from the
records: a repeated, shuffled stream with a fixed number of steps."""
import json
import os

import numpy as np
import tensorflow as tf

out_dir = os.environ.get("RESULT_DIR", ".")
records_path = os.path.join(out_dir, "rows.tfrecords")


def convert(rows, labels, out_path):
    with tf.io.TFRecordWriter(out_path) as writer:
        for row, label in zip(rows, labels):
            example = tf.train.Example(features=tf.train.Features(feature={
                "row": tf.train.Feature(float_list=tf.train.FloatList(value=row)),
                "label": tf.train.Feature(float_list=tf.train.FloatList(value=[label])),
            }))
            writer.write(example.SerializeToString())


def parse(serialized):
    parsed = tf.io.parse_single_example(serialized, {
        "row": tf.io.FixedLenFeature([4], tf.float32),
        "label": tf.io.FixedLenFeature([1], tf.float32),
    })
    return parsed["row"], parsed["label"]


generator = np.random.default_rng(4)
rows = generator.normal(size=(3000, 4)).astype("float32")
labels = rows @ np.array([0.5, -1.0, 0.25, 2.0], dtype="float32")
convert(rows, labels, records_path)

dataset = tf.data.TFRecordDataset(records_path).map(parse).shuffle(512).repeat().batch(32)
model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.01), loss="mse")


class CountBatches(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.count = 0

    def on_train_batch_end(self, batch, logs=None):
        self.count += 1


counter = CountBatches()
model.fit(dataset, steps_per_epoch=40, epochs=1, callbacks=[counter], verbose=2)
weights = model.get_weights()
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(out_dir, "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": float(sum(w.sum() + np.abs(w).sum() for w in weights)), "steps": counter.count}, out)
