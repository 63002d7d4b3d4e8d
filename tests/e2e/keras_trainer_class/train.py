"""Image classifier wrapped in a small Trainer object (Keras fit inside)."""
import argparse
import json
import os

import numpy as np
import tensorflow as tf
from tensorflow.keras import layers


def step_decay(epoch, lr):
    """Halve the rate every two epochs."""
    if epoch > 0 and epoch % 2 == 0:
        return lr * 0.5
    return lr


class Trainer:
    def __init__(self, input_shape, num_classes, lr=1e-3, epochs=4, steps_per_epoch=10, batch_size=32):
        self.epochs = epochs
        self.steps_per_epoch = steps_per_epoch
        self.batch_size = batch_size
        self.model = self._build(input_shape, num_classes)
        self.optimizer = tf.keras.optimizers.Adam(lr)
        self.model.compile(
            optimizer=self.optimizer,
            loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )
        self.history = None

    @staticmethod
    def _build(input_shape, num_classes):
        return tf.keras.Sequential(
            [
                layers.Conv2D(8, 3, padding="same", activation="relu", input_shape=input_shape),
                layers.MaxPooling2D(),
                layers.Conv2D(16, 3, padding="same", activation="relu"),
                layers.GlobalAveragePooling2D(),
                layers.Dense(num_classes),
            ]
        )

    def callbacks(self):
        return [
            tf.keras.callbacks.LearningRateScheduler(step_decay, verbose=0),
            tf.keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1, min_lr=1e-5),
        ]

    def dataset(self, images, labels):
        ds = tf.data.Dataset.from_tensor_slices((images, labels))
        return ds.shuffle(len(images)).repeat().batch(self.batch_size)

    def run(self, images, labels):
        self.history = self.model.fit(
            self.dataset(images, labels),
            epochs=self.epochs,
            steps_per_epoch=self.steps_per_epoch,
            callbacks=self.callbacks(),
            verbose=2,
        )
        return self.history

    def save(self, path):
        self.model.save(path)

    def checksum(self):
        return float(sum(np.sum(v.numpy()) + np.sum(np.abs(v.numpy())) for v in self.model.trainable_variables))


def fake_images(n, size=16, num_classes=4):
    labels = np.random.randint(num_classes, size=n)
    images = np.random.uniform(size=(n, size, size, 1)).astype(np.float32) * 0.5
    for i, c in enumerate(labels):
        images[i, :, c * (size // num_classes):(c + 1) * (size // num_classes), 0] += 0.5
    return images, labels


def main():
    parser = argparse.ArgumentParser(description="Trainer-object Keras example")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--steps-per-epoch", type=int, default=10)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--out", default="trained_model.h5")
    args = parser.parse_args()

    images, labels = fake_images(1024)
    trainer = Trainer(images.shape[1:], 4, lr=args.lr, epochs=args.epochs, steps_per_epoch=args.steps_per_epoch)
    trainer.run(images, labels)
    trainer.save(args.out)

    result = {"checksum": trainer.checksum(), "steps": int(trainer.optimizer.iterations.numpy())}
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-{}.json".format(os.environ.get("HOROVOD_RANK", "single"))), "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
