"""Two-layer network written with raw tf.Variables (no Keras model)."""
import argparse
import json
import os

import tensorflow as tf

IN_DIM, HIDDEN, OUT_DIM = 10, 32, 1


def init_params():
    w1 = tf.Variable(tf.random.normal([IN_DIM, HIDDEN], stddev=0.3), name="w1")
    b1 = tf.Variable(tf.zeros([HIDDEN]), name="b1")
    w2 = tf.Variable(tf.random.normal([HIDDEN, OUT_DIM], stddev=0.3), name="w2")
    b2 = tf.Variable(tf.random.uniform([OUT_DIM], -0.1, 0.1), name="b2")
    return [w1, b1, w2, b2]


def forward(params, x):
    w1, b1, w2, b2 = params
    return tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2


def sample_batch(batch_size, target_w):
    x = tf.random.normal([batch_size, IN_DIM])
    y = tf.sin(tf.matmul(x, target_w))
    return x, y


def train_step(params, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(forward(params, x) - y))
    grads = tape.gradient(loss, params)
    optimizer.apply_gradients(zip(grads, params))
    return loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--num-steps", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=0.05)
    args = parser.parse_args()

    target_w = tf.random.normal([IN_DIM, OUT_DIM])
    params = init_params()
    optimizer = tf.keras.optimizers.SGD(learning_rate=args.learning_rate)

    steps = 0
    for step in range(args.num_steps):
        x, y = sample_batch(args.batch_size, target_w)
        loss = train_step(params, optimizer, x, y)
        steps += 1
        if step % 10 == 0:
            print("step", step, "loss", float(loss))

    checksum = 0.0
    for p in params:
        checksum += float(tf.reduce_sum(p)) + float(tf.reduce_sum(tf.abs(p)))
    rank = os.environ.get("HOROVOD_RANK", "single")
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), f"result-{rank}.json"), "w") as f:
        json.dump({"checksum": checksum, "steps": steps}, f)


if __name__ == "__main__":
    main()
