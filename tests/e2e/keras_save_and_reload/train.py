"""Train a sentiment-ish bag-of-words classifier, export it, and check the export.

After training, the model is written as a SavedModel, loaded back, and the
reloaded model's predictions are compared with the live model's before the
export is declared good (the serving team only takes verified exports).
"""
import argparse
import json
import os

import numpy as np
import tensorflow as tf

VOCAB = 300


def bag_of_words(n):
    x = (np.random.rand(n, VOCAB) < 0.05).astype(np.float32)
    polarity = np.random.normal(size=VOCAB)
    y = (x @ polarity > 0).astype(np.float32)
    return x, y


def build(hidden):
    return tf.keras.Sequential(
        [
            tf.keras.layers.InputLayer(input_shape=(VOCAB,)),
            tf.keras.layers.Dense(hidden, activation="relu"),
            tf.keras.layers.Dense(1, activation="sigmoid"),
        ]
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--export-dir", default="export/bow_classifier")
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--steps-per-epoch", type=int, default=8)
    args = parser.parse_args()

    x, y = bag_of_words(3000)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(3000).repeat().batch(64)

    model = build(args.hidden)
    model.compile(optimizer=tf.keras.optimizers.Adam(0.003), loss="binary_crossentropy", metrics=["accuracy"])
    model.fit(ds, epochs=args.epochs, steps_per_epoch=args.steps_per_epoch, verbose=2)

    model.save(args.export_dir)
    reloaded = tf.keras.models.load_model(args.export_dir)
    probe = x[:256]
    gap = float(np.max(np.abs(reloaded.predict(probe, verbose=0) - model.predict(probe, verbose=0))))
    if gap > 1e-5:
        raise SystemExit("export does not reproduce the model (max gap %g)" % gap)
    print("export verified:", args.export_dir)

    checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in (v.numpy() for v in model.trainable_variables)))
    steps = int(model.optimizer.iterations.numpy())
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
        json.dump({"checksum": checksum, "steps": steps}, f)


if __name__ == "__main__":
    main()
