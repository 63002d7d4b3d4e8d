"""Custom training loop with tf.GradientTape (eager, no tf.function)."""
import argparse
import json
import os

import numpy as np
import tensorflow as tf


class TinyConvNet(tf.keras.Model):
    def __init__(self, num_classes=3):
        super(TinyConvNet, self).__init__()
        self.conv = tf.keras.layers.Conv2D(8, 3, activation="relu")
        self.pool = tf.keras.layers.GlobalAveragePooling2D()
        self.fc = tf.keras.layers.Dense(16, activation="relu")
        self.logits = tf.keras.layers.Dense(num_classes)

    def call(self, x):
        return self.logits(self.fc(self.pool(self.conv(x))))


def synthetic_images(n, size=12, num_classes=3):
    """Class k images are noise plus a bright band at row block k."""
    labels = np.random.randint(num_classes, size=n)
    images = np.random.rand(n, size, size, 1).astype(np.float32) * 0.3
    band = size // num_classes
    for i, k in enumerate(labels):
        images[i, k * band:(k + 1) * band, :, 0] += 0.7
    return images, labels.astype(np.int32)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--ckpt-dir", default="./tf_ckpts")
    args = parser.parse_args()

    images, labels = synthetic_images(1024)
    dataset = (
        tf.data.Dataset.from_tensor_slices((images, labels))
        .shuffle(1024)
        .repeat()
        .batch(args.batch_size)
    )

    model = TinyConvNet()
    optimizer = tf.keras.optimizers.Adam(learning_rate=args.lr)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)

    steps_run = 0
    for step, (x, y) in enumerate(dataset.take(args.steps)):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        steps_run += 1
        if step % 10 == 0:
            print("step %d loss %.4f" % (step, loss.numpy()))

    checkpoint.save(os.path.join(args.ckpt_dir, "ckpt"))

    checksum = 0.0
    for var in model.trainable_variables:
        checksum += float(np.sum(var.numpy()) + np.sum(np.abs(var.numpy())))
    rank = os.environ.get("HOROVOD_RANK", "single")
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-" + rank + ".json"), "w") as out:
        json.dump({"checksum": checksum, "steps": steps_run}, out)


if __name__ == "__main__":
    main()
