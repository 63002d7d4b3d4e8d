"""Standalone Keras 2 imported by member only (no `keras` name bound) and
compiled with a string optimizer: the optimizer the rewrite builds must come
from standalone Keras, which needs `import keras` added."""
import json
import os

import numpy as np
from keras.layers import Dense
from keras.models import Sequential
from keras.utils.np_utils import to_categorical

x_all = np.random.RandomState(3).rand(1024, 10).astype("float32")
y_all = to_categorical((x_all[:, :5].sum(axis=1) > 2.5).astype("int64"), 2)

model = Sequential()
model.add(Dense(16, activation="relu", input_shape=(10,)))
model.add(Dense(2, activation="softmax"))
model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
history = model.fit(x_all, y_all, batch_size=32, epochs=4, verbose=0)

checksum = 0.0
for weights in model.get_weights():
    checksum += float(np.sum(weights) + np.sum(np.abs(weights)))
rate = float(model.optimizer.learning_rate.numpy())
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": int(model.optimizer.iterations.numpy()), "rate": rate}, out)
