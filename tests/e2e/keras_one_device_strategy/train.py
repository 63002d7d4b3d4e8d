"""Text-length regression written for tf.distribute from the start.

On one machine the job runs under OneDeviceStrategy; the strategy scope wraps
the model and optimizer creation, as the tf.distribute guide recommends.
"""
import argparse
import json
import os

import numpy as np
import tensorflow as tf


def get_strategy(device):
    gpus = tf.config.list_physical_devices("GPU")
    return tf.distribute.OneDeviceStrategy(device="/gpu:0" if gpus and device == "gpu" else "/cpu:0")


def token_dataset(n, vocab, length, batch_size):
    tokens = np.random.randint(1, vocab, size=(n, length))
    cut = np.random.randint(2, length, size=n)
    for i, c in enumerate(cut):
        tokens[i, c:] = 0  # padding
    target = (cut / length).astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices((tokens.astype(np.int32), target))
    return ds.shuffle(n).batch(batch_size, drop_remainder=True).repeat()


def build_model(vocab, length):
    inputs = tf.keras.Input(shape=(length,), dtype="int32")
    x = tf.keras.layers.Embedding(vocab, 8, mask_zero=True)(inputs)
    x = tf.keras.layers.GlobalAveragePooling1D()(x)
    x = tf.keras.layers.Dense(16, activation="relu")(x)
    return tf.keras.Model(inputs, tf.keras.layers.Dense(1)(x))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="gpu")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--steps-per-epoch", type=int, default=12)
    parser.add_argument("--global-batch-size", type=int, default=64)
    args = parser.parse_args()

    strategy = get_strategy(args.device)
    print("replicas in sync:", strategy.num_replicas_in_sync)

    train_ds = token_dataset(2048, 100, 24, args.global_batch_size)
    with strategy.scope():
        model = build_model(100, 24)
        optimizer = tf.keras.optimizers.Adam(learning_rate=5e-3)
        model.compile(optimizer=optimizer, loss="mse", metrics=[tf.keras.metrics.MeanAbsoluteError()])

    model.fit(train_ds, epochs=args.epochs, steps_per_epoch=args.steps_per_epoch, verbose=2)

    weights = model.get_weights()
    trainable = [v.numpy() for v in model.trainable_variables]
    checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in trainable))
    result_dir = os.environ.get("RESULT_DIR", ".")
    with open(os.path.join(result_dir, "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
        json.dump({"checksum": checksum, "steps": int(optimizer.iterations.numpy()), "n_weights": len(weights)}, f)


if __name__ == "__main__":
    main()
