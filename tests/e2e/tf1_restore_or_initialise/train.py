"""TF1 graph mode: restore the last checkpoint, or initialise when there is none."""
import json
import os

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

FEATURES = 5
STEPS = 40
CHECKPOINTS = "checkpoints"

inputs = tf.compat.v1.placeholder(tf.float32, [None, FEATURES])
targets = tf.compat.v1.placeholder(tf.float32, [None, 1])
global_step = tf.compat.v1.train.get_or_create_global_step()
hidden = tf.compat.v1.layers.dense(inputs, 8, activation=tf.nn.tanh)
prediction = tf.compat.v1.layers.dense(hidden, 1)
loss = tf.reduce_mean(tf.square(prediction - targets))
train_op = tf.compat.v1.train.GradientDescentOptimizer(0.05).minimize(loss, global_step=global_step)
saver = tf.compat.v1.train.Saver()

session = tf.compat.v1.Session()
try:
    print("Trying to restore the last checkpoint ...")
    last = tf.compat.v1.train.latest_checkpoint(CHECKPOINTS)
    saver.restore(session, save_path=last)
    print("Restored", last)
except ValueError:
    # No checkpoint yet: start from fresh variables.
    print("No checkpoint: initialising the variables instead.")
    session.run(tf.compat.v1.global_variables_initializer())

first = None
for step in range(STEPS):
    batch = np.random.normal(size=(16, FEATURES))
    answers = batch.sum(axis=1, keepdims=True)
    if first is None:
        first = float(batch.sum())
    session.run(train_op, feed_dict={inputs: batch, targets: answers})

os.makedirs(CHECKPOINTS, exist_ok=True)
saver.save(session, os.path.join(CHECKPOINTS, "model"), global_step=global_step)
weights = session.run(tf.compat.v1.trainable_variables())
steps = int(session.run(global_step))
total = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in weights))
out_dir = os.environ.get("RESULT_DIR", ".")
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(out_dir, "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": total, "steps": steps, "first_batch": first}, f)
