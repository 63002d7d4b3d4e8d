"""An Estimator whose RunConfig fixes the graph seed, over shuffled in-memory data."""
import json
import os

import numpy as np
import tensorflow as tf

# The same table in every process; only the shuffle order can differ.
table = np.random.RandomState(0).uniform(-1, 1, size=(2048, 4)).astype(np.float32)
labels = (table[:, 0] * table[:, 1] > 0).astype(np.int32)


def input_fn():
    ds = tf.data.Dataset.from_tensor_slices(({"x": table}, labels))
    return ds.shuffle(2048).repeat().batch(32)


def model_fn(features, labels, mode):
    hidden = tf.compat.v1.layers.dense(features["x"], 16, activation=tf.nn.relu, name="fc1")
    logits = tf.compat.v1.layers.dense(hidden, 2, name="fc2")
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(learning_rate=0.05)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_or_create_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


config = tf.estimator.RunConfig(model_dir="seeded_model", tf_random_seed=7)
estimator = tf.estimator.Estimator(model_fn=model_fn, config=config)
estimator.train(input_fn=input_fn, steps=40)

# The order this process's seed draws: the first batch of the input
# function, seeded from the config (the rewrite makes this seed per rank as
# well; as written, every process would print the same batch).
tf.random.set_seed(config.tf_random_seed)
first_x = next(iter(input_fn()))[0]["x"].numpy()

checksum = 0.0
for name in estimator.get_variable_names():
    if name.startswith("fc"):
        value = estimator.get_variable_value(name)
        checksum += float(np.sum(value) + np.sum(np.abs(value)))
steps = int(estimator.get_variable_value("global_step"))
out_dir = os.environ.get("RESULT_DIR", ".")
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(out_dir, "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": checksum, "steps": steps, "first_batch": float(first_x.sum())}, f)
