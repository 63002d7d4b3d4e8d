"""Small CNN on synthetic 'digits'; the step functions live in engine/steps.py."""
import argparse
import json
import os

import numpy as np
import tensorflow as tf

from engine.steps import eval_step, train_step


def synthetic_digits(n, size=10, classes=5):
    y = np.random.randint(classes, size=n)
    x = np.random.rand(n, size, size, 1).astype(np.float32) * 0.2
    for i, c in enumerate(y):
        x[i, c * 2:c * 2 + 2, :, 0] = 1.0
    return x, y.astype(np.int64)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.002)
    args = parser.parse_args()

    x, y = synthetic_digits(2000)
    train_ds = tf.data.Dataset.from_tensor_slices((x[:1800], y[:1800])).shuffle(1800).repeat().batch(args.batch_size)
    test_ds = tf.data.Dataset.from_tensor_slices((x[1800:], y[1800:])).batch(100)

    model = tf.keras.Sequential([
        tf.keras.layers.Conv2D(8, 3, activation="relu", input_shape=(10, 10, 1)),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(5),
    ])
    optimizer = tf.keras.optimizers.Adam(args.lr)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    done = 0
    for images, labels in train_ds.take(args.iterations):
        loss = train_step(model, optimizer, loss_fn, images, labels)
        done += 1
        if done % 10 == 0:
            print("iteration", done, "loss", float(loss))

    test_loss = np.mean([float(eval_step(model, loss_fn, a, b)) for a, b in test_ds])
    print("test loss", test_loss)

    checksum = float(sum(np.sum(v.numpy()) + np.sum(np.abs(v.numpy())) for v in model.trainable_variables))
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
        json.dump({"checksum": checksum, "steps": done}, f)


if __name__ == "__main__":
    main()
