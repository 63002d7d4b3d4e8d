"""A loss recorded every few generations, then lined up with the generation numbers."""
import json
import os

import numpy as np
import tensorflow as tf

generations = 70
eval_every = 2
features = np.random.default_rng(11).normal(size=(600, 4)).astype("float32")
labels = (features @ np.array([[1.0], [-2.0], [0.5], [3.0]], dtype="float32")).astype("float32")

weights = tf.Variable(tf.random.normal([4, 1]))
optimizer = tf.keras.optimizers.SGD(learning_rate=0.01)

train_loss = []
first = None
for i in range(generations):
    rows = np.random.choice(len(features), size=10)
    if first is None:
        first = float(features[rows].sum())
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.matmul(features[rows], weights) - labels[rows]))
    grads = tape.gradient(loss, [weights])
    optimizer.apply_gradients(zip(grads, [weights]))
    if (i + 1) % eval_every == 0:
        train_loss.append(float(loss))

# One generation number per recorded loss: the two must line up.
eval_indices = range(0, generations, eval_every)
curve = np.stack([np.array(eval_indices, dtype="float32"), np.array(train_loss, dtype="float32")])
print("loss curve", curve.shape)

final = weights.numpy()
out_dir = os.environ.get("RESULT_DIR", ".")
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(out_dir, "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": float(final.sum() + np.abs(final).sum()),
               "steps": int(optimizer.iterations.numpy()),
               "rate": float(optimizer.learning_rate.numpy()),
               "first_batch": first}, f)
