"""A model with two inputs, fitted on a list holding one array per input;
the per-epoch history is plotted against the epochs afterwards."""
import json
import os

import numpy as np
import tensorflow as tf

state = np.random.RandomState(0)
prices = state.rand(256, 3).astype("float32")
volumes = state.rand(256, 2).astype("float32")
targets = (prices.sum(axis=1) - volumes.sum(axis=1)).reshape(-1, 1)

price_input = tf.keras.Input(shape=(3,))
volume_input = tf.keras.Input(shape=(2,))
merged = tf.keras.layers.Concatenate()([price_input, volume_input])
hidden = tf.keras.layers.Dense(8, activation="relu")(merged)
output = tf.keras.layers.Dense(1)(hidden)
model = tf.keras.Model([price_input, volume_input], output)
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.05), loss="mse")

inputs = [prices, volumes]
epochs = 4
history = model.fit(inputs, targets, epochs=epochs, batch_size=32, verbose=0)
for epoch, loss in zip(range(1, epochs + 1), history.history["loss"]):
    print("epoch %d: loss %.4f" % (epoch, loss))

checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in model.get_weights()))
steps = int(model.optimizer.iterations.numpy())
rate = float(tf.keras.backend.get_value(model.optimizer.learning_rate))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": steps, "rate": rate}, out)
