"""The training task: the run configuration is made here and completed with
the job directory, the Estimators come from trainer/model.py."""
import json
import os

import numpy as np
import tensorflow as tf

from trainer import model


def input_fn():
    x = np.random.rand(512, 4).astype("float32")
    y = (x.sum(axis=1) > 2).astype("int32")
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(32)


def checksum_of(estimator, prefix):
    total = 0.0
    for name in estimator.get_variable_names():
        if name.startswith(prefix) and name.rsplit("/", 1)[-1] in ("kernel", "bias"):
            weights = estimator.get_variable_value(name)
            total += float(np.sum(weights) + np.sum(np.abs(weights)))
    return total


def main(job_dir="job"):
    run_config = tf.estimator.RunConfig(save_checkpoints_steps=1000)
    run_config = run_config.replace(model_dir=os.path.join(job_dir, "canned"))
    canned = model.build_estimator(run_config)
    canned.train(input_fn, max_steps=20)

    wide_and_deep = model.build_wide_and_deep(
        tf.estimator.RunConfig(model_dir=os.path.join(job_dir, "wide_and_deep"))
    )
    wide_and_deep.train(input_fn, max_steps=20)

    custom = tf.estimator.Estimator(
        model_fn=model.get_model_fn({"learning_rate": 0.01}),
        model_dir=os.path.join(job_dir, "custom"),
    )
    custom.train(input_fn, steps=20)

    trained = [canned, wide_and_deep, custom]
    steps = sum(int(estimator.get_variable_value("global_step")) for estimator in trained)
    checksum = (
        checksum_of(canned, "dnn/")
        + checksum_of(wide_and_deep, "dnn/")
        + checksum_of(wide_and_deep, "linear/")
        + checksum_of(custom, "dense/")
    )
    rank = os.environ.get("HOROVOD_RANK", "single")
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
        json.dump({"checksum": checksum, "steps": steps}, out)
