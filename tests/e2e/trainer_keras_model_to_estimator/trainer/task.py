"""The training task: the Estimator comes from trainer/model.py."""
import inspect
import json
import os

import numpy as np
import tensorflow as tf

from trainer import model

# TensorFlow 2.12's Estimators look argument lists up with
# inspect.getargspec, which Python 3.11 removed: the job's own shim.
if not hasattr(inspect, "getargspec"):
    inspect.getargspec = inspect.getfullargspec


def input_fn():
    x = np.random.rand(256, 4).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    return tf.data.Dataset.from_tensor_slices(({"hidden_input": x}, y)).repeat().batch(16)


def main(job_dir="job"):
    estimator = model.make_estimator(os.path.join(job_dir, "keras_estimator"), 0.01)
    estimator.train(input_fn, max_steps=40)

    weights = [
        estimator.get_variable_value(name)
        for name in estimator.get_variable_names()
        if name.startswith("layer_with_weights") and "ATTRIBUTES" in name
    ]
    checksum = sum(float(np.sum(w) + np.sum(np.abs(w))) for w in weights)
    steps = int(estimator.get_variable_value("estimator_global_step/.ATTRIBUTES/VARIABLE_VALUE"))
    rank = os.environ.get("HOROVOD_RANK", "single")
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
        json.dump({"checksum": checksum, "steps": steps}, out)
