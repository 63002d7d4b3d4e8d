"""Train ConvNet on synthetic digits on a single GPU.

Run from examples/mnist_keras/:  python -m mnist_keras.train --epochs 3
"""
import argparse
import os
import tempfile

import tensorflow as tf

from mnist_keras.data import NUM_CLASSES, load_datasets
from mnist_keras.model import ConvNet


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3, help="Adam learning rate")
    parser.add_argument("--steps-per-epoch", type=int, default=100)
    parser.add_argument("--output", default="mnist_keras_out", help="where the final weights go")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    train_ds, test_ds = load_datasets(batch_size=args.batch_size)

    model = ConvNet(num_classes=NUM_CLASSES)
    optimizer = tf.keras.optimizers.Adam(learning_rate=args.lr)
    model.compile(
        optimizer=optimizer,
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )

    ckpt_dir = tempfile.mkdtemp(prefix="mnist_keras_ckpt_")
    callbacks = [
        # Keep the best weights seen so far.
        tf.keras.callbacks.ModelCheckpoint(
            os.path.join(ckpt_dir, "best.weights.h5"),
            save_weights_only=True,
            save_best_only=True,
        ),
        tf.keras.callbacks.EarlyStopping(monitor="val_loss", patience=2),
    ]

    model.fit(
        train_ds,
        epochs=args.epochs,
        steps_per_epoch=args.steps_per_epoch,
        validation_data=test_ds,
        callbacks=callbacks,
    )
    loss, accuracy = model.evaluate(test_ds)
    print(f"test loss {loss:.4f}, accuracy {accuracy:.3f}")
    print("checkpoints in", ckpt_dir)

    os.makedirs(args.output, exist_ok=True)
    model.save_weights(os.path.join(args.output, "final.weights.h5"))


if __name__ == "__main__":
    main()
