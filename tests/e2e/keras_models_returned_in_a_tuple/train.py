"""An autoencoder built and compiled by a function that returns it with its
encoder; the script fits the autoencoder it unpacks from the tuple."""
import json
import os

import numpy as np
import tensorflow as tf
from tensorflow.keras.layers import Dense, Input
from tensorflow.keras.models import Model


def build():
    inputs = Input(shape=(16,))
    code = Dense(4, activation="relu")(inputs)
    outputs = Dense(16, activation="sigmoid")(code)
    autoencoder = Model(inputs, outputs)
    autoencoder.compile(optimizer="adam", loss="binary_crossentropy")
    encoder = Model(inputs, code)
    return autoencoder, encoder


rows = np.random.RandomState(0).rand(512, 16).astype("float32")
autoencoder, encoder = build()
autoencoder.fit(rows, rows, epochs=4, batch_size=64, shuffle=True, verbose=0)
codes = encoder.predict(rows[:8], verbose=0)
print(codes.shape)

checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in autoencoder.get_weights()))
steps = int(autoencoder.optimizer.iterations.numpy())
rate = float(tf.keras.backend.get_value(autoencoder.optimizer.learning_rate))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": steps, "rate": rate}, out)
