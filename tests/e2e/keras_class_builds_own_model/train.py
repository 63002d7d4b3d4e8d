"""A trainer class whose model one of its methods builds and compiles
(`self.model = self._build_model()`), fitted in another method on arrays:
the optimizer compiled in the builder must be the one wrapped."""
import json
import os

import numpy as np
import tensorflow as tf


class Trainer:
    def __init__(self, features):
        self.features = features
        self.model = self._build_model()

    def _build_model(self):
        model = tf.keras.Sequential([
            tf.keras.layers.Dense(8, activation="relu", input_shape=(self.features,)),
            tf.keras.layers.Dense(1, activation="sigmoid"),
        ])
        model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.05), loss="binary_crossentropy")
        return model

    def train(self, x, y):
        self.model.fit(x, y, batch_size=32, epochs=4, verbose=2)


rng = np.random.RandomState(3)
x_train = rng.rand(256, 5).astype("float32")
y_train = (x_train.sum(axis=1) > 2.5).astype("float32")
trainer = Trainer(5)
trainer.train(x_train, y_train)

model = trainer.model
checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in model.get_weights()))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": int(model.optimizer.iterations.numpy()),
               "rate": float(tf.keras.backend.get_value(model.optimizer.learning_rate))}, out)
