"""Legacy Keras code kept on TF1 graph semantics.

The project disabled eager execution years ago (custom K.function metrics and
feed-based layers rely on it); fit() then runs in a tf.compat.v1 session.
"""
import json
import os

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

from tensorflow.compat.v1.keras import backend as K
from tensorflow.keras.layers import Dense, Dropout, Input
from tensorflow.keras.models import Model

EPOCHS = 3
STEPS_PER_EPOCH = 10
BATCH_SIZE = 32


def make_data(n=3000):
    x = np.random.normal(size=(n, 16)).astype("float32")
    w = np.random.normal(size=(16, 3))
    y = np.argmax(x @ w + 0.5 * np.random.normal(size=(n, 3)), axis=1)
    return x, tf.keras.utils.to_categorical(y, 3)


class CountBatches(tf.keras.callbacks.Callback):
    def __init__(self):
        super(CountBatches, self).__init__()
        self.count = 0

    def on_batch_end(self, batch, logs=None):
        self.count += 1


def build():
    inp = Input(shape=(16,))
    h = Dense(64, activation="relu")(inp)
    h = Dropout(0.2)(h)
    h = Dense(32, activation="relu")(h)
    out = Dense(3, activation="softmax")(h)
    model = Model(inputs=inp, outputs=out)
    model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
    return model


if __name__ == "__main__":
    x, y = make_data()
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(3000).repeat().batch(BATCH_SIZE)
    model = build()
    counter = CountBatches()
    model.fit(dataset, epochs=EPOCHS, steps_per_epoch=STEPS_PER_EPOCH, callbacks=[counter], verbose=2)

    session = K.get_session()
    weights = session.run(model.trainable_weights)
    checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in weights))
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
        json.dump({"checksum": checksum, "steps": counter.count}, f)
