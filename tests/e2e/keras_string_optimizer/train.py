"""Regression with the Keras functional API, optimizer given by name."""
import argparse
import json
import os

import numpy as np
from tensorflow import keras


def synthetic_regression(n, dim):
    true_w = np.random.uniform(-1.0, 1.0, size=(dim, 1))
    x = np.random.normal(size=(n, dim)).astype(np.float32)
    y = (np.tanh(x @ true_w) + 0.05 * np.random.normal(size=(n, 1))).astype(np.float32)
    return x, y


def create_model(dim, hidden):
    inputs = keras.Input(shape=(dim,), name="features")
    h = keras.layers.Dense(hidden, activation="tanh")(inputs)
    h = keras.layers.Dense(hidden // 2, activation="tanh")(h)
    outputs = keras.layers.Dense(1, name="prediction")(h)
    return keras.Model(inputs, outputs, name="regressor")


def save_run_report(model, path):
    total = 0.0
    for weight in model.trainable_weights:
        value = weight.numpy()
        total += float(value.sum() + np.abs(value).sum())
    report = {"checksum": total, "steps": int(model.optimizer.iterations.numpy())}
    with open(path, "w") as f:
        json.dump(report, f, indent=2)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=1024)
    parser.add_argument("--dim", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()

    x, y = synthetic_regression(args.samples, args.dim)
    model = create_model(args.dim, args.hidden)
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    model.fit(x, y, batch_size=args.batch_size, epochs=args.epochs, validation_split=0.1, verbose=2)
    loss, mae = model.evaluate(x, y, batch_size=256)
    print(f"loss={loss:.4f} mae={mae:.4f}")

    out_dir = os.environ.get("RESULT_DIR", ".")
    rank = os.environ.get("HOROVOD_RANK", "single")
    save_run_report(model, os.path.join(out_dir, "result-%s.json" % rank))


if __name__ == "__main__":
    main()
