import argparse
import json
import os

import numpy as np
from tensorflow.keras.losses import SparseCategoricalCrossentropy
from tensorflow.keras.optimizers import RMSprop

from data import random_teacher, teacher_dataset
from models.classifier import MLPClassifier

FEATURES = 16
CLASSES = 5


def get_args():
    p = argparse.ArgumentParser(description="Train MLPClassifier on a synthetic teacher task")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--steps-per-epoch", type=int, default=12)
    p.add_argument("--validation-steps", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--output-dir", default="output")
    return p.parse_args()


def main():
    args = get_args()
    os.makedirs(args.output_dir, exist_ok=True)

    teacher = random_teacher(FEATURES, CLASSES)
    train_ds = teacher_dataset(teacher, 4096, args.batch_size)
    val_ds = teacher_dataset(teacher, 512, args.batch_size, training=False)

    model = MLPClassifier(num_classes=CLASSES)
    model.compile(
        optimizer=RMSprop(learning_rate=args.learning_rate),
        loss=SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    model.fit(
        train_ds,
        validation_data=val_ds,
        epochs=args.epochs,
        steps_per_epoch=args.steps_per_epoch,
        validation_steps=args.validation_steps,
        verbose=2,
    )
    model.save_weights(os.path.join(args.output_dir, "classifier_weights"))

    checksum = 0.0
    for w in model.trainable_weights:
        a = w.numpy()
        checksum += float(np.sum(a) + np.sum(np.abs(a)))
    rank = os.environ.get("HOROVOD_RANK", "single")
    report_path = os.path.join(os.environ.get("RESULT_DIR", "."), f"result-{rank}.json")
    with open(report_path, "w") as fh:
        json.dump({"checksum": checksum, "steps": int(model.optimizer.iterations.numpy())}, fh)


if __name__ == "__main__":
    main()
