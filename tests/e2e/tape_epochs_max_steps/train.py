"""Logistic regression written as a tf.Module, trained epoch by epoch over a
finite dataset, stopped at --max_steps like most research code."""
import argparse
import json
import os

import numpy as np
import tensorflow as tf


class MLP(tf.Module):
    def __init__(self, sizes, name=None):
        super().__init__(name=name)
        self.layers = []
        with self.name_scope:
            for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
                w = tf.Variable(tf.random.normal([fan_in, fan_out], stddev=(2.0 / fan_in) ** 0.5), name="w%d" % i)
                b = tf.Variable(tf.zeros([fan_out]), name="b%d" % i)
                self.layers.append((w, b))

    @tf.Module.with_name_scope
    def __call__(self, x):
        for i, (w, b) in enumerate(self.layers):
            x = tf.matmul(x, w) + b
            if i < len(self.layers) - 1:
                x = tf.nn.relu(x)
        return tf.squeeze(x, -1)


def get_data(n=1200, d=10):
    x = np.random.randn(n, d).astype(np.float32)
    w = np.random.randn(d).astype(np.float32)
    y = (x @ w > 0).astype(np.float32)
    return x, y


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--max_steps", type=int, default=45)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()

    x, y = get_data()
    train_data = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x)).batch(args.batch_size)

    model = MLP([x.shape[1], 16, 1], name="mlp")
    optimizer = tf.keras.optimizers.SGD(args.lr)

    @tf.function
    def train_step(inputs, targets):
        with tf.GradientTape() as tape:
            logits = model(inputs)
            loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=targets, logits=logits))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    global_step = 0
    done = False
    for epoch in range(args.epochs):
        epoch_loss = []
        for inputs, targets in train_data:
            loss = train_step(inputs, targets)
            epoch_loss.append(float(loss))
            global_step += 1
            if global_step >= args.max_steps:
                done = True
                break
        print("epoch %d  step %d  mean loss %.4f" % (epoch, global_step, np.mean(epoch_loss)))
        if done:
            break

    checksum = float(sum(np.sum(v.numpy()) + np.sum(np.abs(v.numpy())) for v in model.trainable_variables))
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
        json.dump({"checksum": checksum, "steps": global_step}, f)


if __name__ == "__main__":
    main()
