"""Keras on a generator of shuffled batches, as detection tutorials train:
the rows are shuffled under a fixed seed to split off a validation part,
then the program lets go of the seed (`np.random.seed(None)`), and the
generator reshuffles the training rows at every pass."""
import json
import os

import numpy as np
import tensorflow as tf

rows = np.arange(640)
features = np.random.RandomState(5).rand(640, 10).astype(np.float32)
labels = (features[:, :5].sum(axis=1) > 2.5).astype(np.float32)


def batches(indices, batch_size):
    while True:
        np.random.shuffle(indices)
        for start in range(0, len(indices) - batch_size + 1, batch_size):
            chosen = indices[start:start + batch_size]
            yield features[chosen], labels[chosen]


class CountBatches(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.steps = 0

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1


def main():
    np.random.seed(10101)
    np.random.shuffle(rows)
    np.random.seed(None)
    num_val = len(rows) // 10
    train_rows, val_rows = rows[num_val:], rows[:num_val]
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(16, activation="relu", input_shape=(10,)),
        tf.keras.layers.Dense(1, activation="sigmoid"),
    ])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="binary_crossentropy")
    counter = CountBatches()
    model.fit(batches(train_rows.copy(), 32),
              steps_per_epoch=len(train_rows) // 32,
              validation_data=batches(val_rows.copy(), 32),
              validation_steps=max(1, len(val_rows) // 32),
              epochs=2,
              callbacks=[counter])
    checksum = 0.0
    for variable in model.trainable_variables:
        checksum += float(np.sum(variable.numpy()) + np.sum(np.abs(variable.numpy())))
    rank = os.environ.get("HOROVOD_RANK", "single")
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
        json.dump({"checksum": checksum, "steps": counter.steps}, out)


if __name__ == "__main__":
    main()
