"""TF2 notebook style: hand-built variables at module level, a repeated and
shuffled tf.data pipeline, `enumerate(data.take(steps), 1)` driving a
`@tf.function` step."""
import json
import os

import numpy as np
import tensorflow as tf

tf.random.set_seed(3)
np.random.seed(3)

learning_rate = 0.1
training_steps = 40
batch_size = 32
display_step = 10

x_train = np.random.rand(2000, 8).astype(np.float32)
y_train = (x_train.sum(axis=1) > 4.0).astype(np.int64)

train_data = tf.data.Dataset.from_tensor_slices((x_train, y_train))
train_data = train_data.repeat().shuffle(2000, seed=5).batch(batch_size).prefetch(1)

random_normal = tf.initializers.RandomNormal()
weights = {"h1": tf.Variable(random_normal([8, 16])), "out": tf.Variable(random_normal([16, 2]))}
biases = {"b1": tf.Variable(tf.zeros([16])), "out": tf.Variable(tf.zeros([2]))}


def neural_net(x):
    layer_1 = tf.nn.sigmoid(tf.add(tf.matmul(x, weights["h1"]), biases["b1"]))
    return tf.matmul(layer_1, weights["out"]) + biases["out"]


def cross_entropy(logits, y_true):
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y_true, logits=logits))


optimizer = tf.optimizers.SGD(learning_rate)


@tf.function
def run_optimization(x, y):
    with tf.GradientTape() as g:
        loss = cross_entropy(neural_net(x), y)
    trainable_variables = list(weights.values()) + list(biases.values())
    gradients = g.gradient(loss, trainable_variables)
    optimizer.apply_gradients(zip(gradients, trainable_variables))


steps = 0
first_batch = None
for step, (batch_x, batch_y) in enumerate(train_data.take(training_steps), 1):
    if first_batch is None:
        first_batch = float(tf.reduce_sum(batch_x))
    run_optimization(batch_x, batch_y)
    steps += 1
    if step % display_step == 0:
        print("step: %i, loss: %f" % (step, cross_entropy(neural_net(batch_x), batch_y)))

checksum = 0.0
for variable in list(weights.values()) + list(biases.values()):
    checksum += float(np.sum(variable.numpy()) + np.sum(np.abs(variable.numpy())))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": steps, "first_batch": first_batch}, out)
