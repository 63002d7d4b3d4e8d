"""Train ConvNet on synthetic digits on a single GPU.

Run from examples/mnist_keras/:  python -m mnist_keras.train --epochs 3
"""
import argparse
import os
import tempfile

import tensorflow as tf
import horovod.tensorflow.keras as hvd

from mnist_keras.data import NUM_CLASSES, load_datasets
from mnist_keras.model import ConvNet

hvd.init()
gpus = tf.config.experimental.list_physical_devices("GPU")
for gpu in gpus:
    tf.config.experimental.set_memory_growth(gpu, True)
if gpus:
    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], "GPU")


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
    optimizer = tf.keras.optimizers.Adam(learning_rate=args.lr * hvd.size())
    optimizer = hvd.DistributedOptimizer(optimizer)
    model.compile(
        optimizer=optimizer,
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )

    ckpt_dir = tempfile.mkdtemp(prefix="mnist_keras_ckpt_")
    callbacks = [
        # Keep the best weights seen so far.
        hvd.callbacks.BroadcastGlobalVariablesCallback(0),
        hvd.callbacks.MetricAverageCallback(),
        *([tf.keras.callbacks.ModelCheckpoint(
            os.path.join(ckpt_dir, "best.weights.h5"),
            save_weights_only=True,
            save_best_only=True,
        )] if hvd.rank() == 0 else []),
        tf.keras.callbacks.EarlyStopping(monitor="val_loss", patience=2),
    ]

    model.fit(
        train_ds,
        epochs=args.epochs,
        steps_per_epoch=max(1, args.steps_per_epoch // hvd.size()),
        validation_data=test_ds,
        callbacks=callbacks,
        verbose=1 if hvd.rank() == 0 else 0,
    )
    loss, accuracy = model.evaluate(test_ds, verbose=1 if hvd.rank() == 0 else 0)
    if hvd.rank() == 0:
        print(f"test loss {loss:.4f}, accuracy {accuracy:.3f}")
        print("checkpoints in", ckpt_dir)

    os.makedirs(args.output, exist_ok=True)
    if hvd.rank() == 0:
        model.save_weights(os.path.join(args.output, "final.weights.h5"))


if __name__ == "__main__":
    main()
