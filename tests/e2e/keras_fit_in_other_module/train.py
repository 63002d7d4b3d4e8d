"""Entry point: build, compile, hand over to training.train, save."""
import json
import os

import numpy as np
import tensorflow as tf

import data
import models
import training
from config import TrainConfig


def main():
    cfg = TrainConfig()
    train_ds, val_ds = data.make_pipelines(cfg)

    model = models.make_classifier(cfg.num_features, cfg.num_classes, cfg.hidden_units)
    model.compile(
        optimizer=tf.keras.optimizers.Adam(learning_rate=cfg.learning_rate),
        loss="sparse_categorical_crossentropy",
        metrics=["sparse_categorical_accuracy"],
    )
    history = training.train(model, train_ds, val_ds, cfg)
    print("val accuracy: %.3f" % history.history["val_sparse_categorical_accuracy"][-1])

    os.makedirs(cfg.output_dir, exist_ok=True)
    model.save_weights(os.path.join(cfg.output_dir, "final.h5"))

    weights = [w.numpy() for w in model.trainable_weights]
    checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in weights))
    out = os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single"))
    with open(out, "w") as f:
        json.dump({"checksum": checksum, "steps": int(model.optimizer.iterations.numpy())}, f)


if __name__ == "__main__":
    main()
