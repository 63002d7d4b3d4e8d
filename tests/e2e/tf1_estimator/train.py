"""Train a DNN classifier with tf.estimator on synthetic data."""
import argparse
import json
import os

import numpy as np
import tensorflow as tf

from estimator_model import dnn_model_fn

N_FEATURES = 8
N_CLASSES = 3


def make_input_fn(batch_size, num_examples=2000):
    def input_fn():
        centres = np.random.normal(scale=1.5, size=(N_CLASSES, N_FEATURES)).astype(np.float32)
        labels = np.random.randint(N_CLASSES, size=num_examples).astype(np.int32)
        features = centres[labels] + np.random.normal(size=(num_examples, N_FEATURES)).astype(np.float32)
        dataset = tf.data.Dataset.from_tensor_slices(({"x": features}, labels))
        return dataset.shuffle(num_examples).repeat().batch(batch_size)

    return input_fn


def is_model_weight(name):
    leaf = name.split("/")[-1]
    return name.startswith("dnn/") and not leaf.startswith("Adam")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--train-steps", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--model-dir", default="estimator_model_dir")
    args = parser.parse_args()

    classifier = tf.estimator.Estimator(
        model_fn=dnn_model_fn,
        model_dir=args.model_dir,
        params={"hidden_units": [32, 16], "n_classes": N_CLASSES, "learning_rate": args.learning_rate},
    )
    classifier.train(input_fn=make_input_fn(args.batch_size), steps=args.train_steps)

    names = [n for n in classifier.get_variable_names() if is_model_weight(n)]
    checksum = 0.0
    for name in names:
        value = classifier.get_variable_value(name)
        checksum += float(np.sum(value) + np.sum(np.abs(value)))
    steps = int(classifier.get_variable_value("global_step"))
    print("trained %d steps, %d weight tensors" % (steps, len(names)))

    rank = os.environ.get("HOROVOD_RANK", "single")
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as f:
        json.dump({"checksum": checksum, "steps": steps}, f)


if __name__ == "__main__":
    main()
