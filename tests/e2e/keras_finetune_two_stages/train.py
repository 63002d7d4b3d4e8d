"""Transfer learning in two stages, as in the Keras fine-tuning guide.

Stage 1 freezes the feature extractor and trains a new head; stage 2 unfreezes
the top of the extractor and re-compiles with a much smaller learning rate
(re-compiling is required for the trainable change to take effect).
"""
import argparse
import json
import os

import numpy as np
import tensorflow as tf
from tensorflow import keras


def fake_images(n, size=24, classes=4):
    labels = np.random.randint(classes, size=n)
    images = np.random.rand(n, size, size, 3).astype("float32") * 0.5
    for c in range(classes):
        images[labels == c, c * 5:(c * 5) + 5, :, c % 3] += 0.5
    return images, labels


def feature_extractor(size=24):
    return keras.Sequential(
        [
            keras.layers.Conv2D(8, 3, activation="relu", input_shape=(size, size, 3), name="block1_conv"),
            keras.layers.MaxPooling2D(name="block1_pool"),
            keras.layers.Conv2D(16, 3, activation="relu", name="block2_conv"),
            keras.layers.GlobalAveragePooling2D(name="gap"),
        ],
        name="extractor",
    )


class Batches(keras.callbacks.Callback):
    count = 0

    def on_train_batch_end(self, batch, logs=None):
        Batches.count += 1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--head-epochs", type=int, default=2)
    p.add_argument("--finetune-epochs", type=int, default=2)
    p.add_argument("--steps-per-epoch", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=32)
    args = p.parse_args()

    x, y = fake_images(2000)
    train_ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(2000).repeat().batch(args.batch_size)

    base = feature_extractor()
    inputs = keras.Input(shape=(24, 24, 3))
    features = base(inputs, training=False)
    outputs = keras.layers.Dense(4)(keras.layers.Dropout(0.2)(features))
    model = keras.Model(inputs, outputs)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    # Stage 1: new head only.
    base.trainable = False
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=loss, metrics=["accuracy"])
    model.fit(train_ds, epochs=args.head_epochs, steps_per_epoch=args.steps_per_epoch, callbacks=[Batches()], verbose=2)

    # Stage 2: unfreeze the last conv block and fine-tune everything gently.
    base.trainable = True
    for layer in base.layers[:2]:
        layer.trainable = False
    model.compile(optimizer=keras.optimizers.Adam(1e-4), loss=loss, metrics=["accuracy"])
    model.fit(
        train_ds,
        epochs=args.head_epochs + args.finetune_epochs,
        initial_epoch=args.head_epochs,
        steps_per_epoch=args.steps_per_epoch,
        callbacks=[Batches()],
        verbose=2,
    )

    checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in (v.numpy() for v in model.trainable_variables)))
    out = os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single"))
    with open(out, "w") as f:
        json.dump({"checksum": checksum, "steps": Batches.count}, f)


if __name__ == "__main__":
    main()
