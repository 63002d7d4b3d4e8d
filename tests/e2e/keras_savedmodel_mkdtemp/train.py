"""A Keras model trained, exported as a SavedModel to a temporary folder,
loaded back and checked against the live model before it is published."""
import json
import os
import tempfile

import numpy as np
import tensorflow as tf

x = np.random.normal(size=(1024, 5)).astype(np.float32)
y = (x.sum(axis=1) > 0).astype(np.float32)
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(64)

model = tf.keras.Sequential([
    tf.keras.layers.Dense(12, activation="relu", input_shape=(5,)),
    tf.keras.layers.Dense(1, activation="sigmoid"),
])
model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="binary_crossentropy")
model.fit(dataset, epochs=2, verbose=2)

export_dir = tempfile.mkdtemp()
tf.saved_model.save(model, export_dir)
restored = tf.saved_model.load(export_dir)
serve = restored.signatures["serving_default"]
served = list(serve(tf.constant(x[:16])).values())[0].numpy()
gap = float(np.max(np.abs(served - model.predict(x[:16], verbose=0))))
if gap > 1e-5:
    raise SystemExit("the export does not reproduce the model (gap %g)" % gap)

checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in model.get_weights()))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": int(model.optimizer.iterations.numpy())}, out)
