"""XOR with Keras: four rows written out, the default batch holds them all."""
import json
import os

import numpy as np
import tensorflow as tf

patterns = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=np.float32)
answers = np.array([[0], [1], [1], [0]], dtype=np.float32)

net = tf.keras.Sequential([
    tf.keras.layers.Dense(8, activation="tanh", input_shape=(2,)),
    tf.keras.layers.Dense(1, activation="sigmoid"),
])
net.compile(optimizer="adam", loss="binary_crossentropy")
net.fit(patterns, answers, epochs=60, verbose=0)
print(net.predict(patterns, verbose=0).round(2))

total = float(sum(w.sum() + np.abs(w).sum() for w in net.get_weights()))
steps = int(net.optimizer.iterations.numpy())
rate = float(tf.keras.backend.get_value(net.optimizer.learning_rate))
out_dir = os.environ.get("RESULT_DIR", ".")
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(out_dir, "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": total, "steps": steps, "rate": rate, "loops": {"training steps": steps}}, f)
