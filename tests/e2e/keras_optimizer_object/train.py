"""Train a small dense classifier on synthetic data with Keras `fit`.

The optimizer is built as an object so its hyper-parameters can be set from
the command line.
"""
import argparse
import json
import os

import numpy as np
import tensorflow as tf

NUM_FEATURES = 20
NUM_CLASSES = 4


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--steps-per-epoch", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--momentum", type=float, default=0.9)
    return parser.parse_args()


def make_dataset(batch_size, num_examples=2048):
    """Points around one random centre per class."""
    centres = np.random.normal(size=(NUM_CLASSES, NUM_FEATURES)).astype("float32")
    labels = np.random.randint(0, NUM_CLASSES, size=num_examples)
    features = centres[labels] + 0.5 * np.random.normal(size=(num_examples, NUM_FEATURES))
    dataset = tf.data.Dataset.from_tensor_slices((features.astype("float32"), labels))
    return dataset.shuffle(num_examples).repeat().batch(batch_size)


def build_model():
    return tf.keras.Sequential(
        [
            tf.keras.layers.Input(shape=(NUM_FEATURES,)),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(32, activation="relu"),
            tf.keras.layers.Dense(NUM_CLASSES),
        ]
    )


def weights_checksum(variables):
    return float(sum(np.sum(v.numpy()) + np.sum(np.abs(v.numpy())) for v in variables))


def main():
    args = parse_args()
    model = build_model()
    optimizer = tf.keras.optimizers.SGD(learning_rate=args.lr, momentum=args.momentum)
    model.compile(
        optimizer=optimizer,
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    model.summary()

    history = model.fit(
        make_dataset(args.batch_size),
        epochs=args.epochs,
        steps_per_epoch=args.steps_per_epoch,
        verbose=2,
    )
    print("final loss: %.4f" % history.history["loss"][-1])

    result = {
        "checksum": weights_checksum(model.trainable_variables),
        "steps": int(optimizer.iterations.numpy()),
    }
    result_dir = os.environ.get("RESULT_DIR", ".")
    rank = os.environ.get("HOROVOD_RANK", "single")
    with open(os.path.join(result_dir, f"result-{rank}.json"), "w") as handle:
        json.dump(result, handle)


if __name__ == "__main__":
    main()
