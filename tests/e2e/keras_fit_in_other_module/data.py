"""Synthetic data: Gaussian blobs, one per class."""
import numpy as np
import tensorflow as tf


def blobs(num_examples, num_features, num_classes):
    centres = np.random.uniform(-3, 3, size=(num_classes, num_features))
    labels = np.random.randint(num_classes, size=num_examples)
    points = centres[labels] + np.random.normal(size=(num_examples, num_features))
    return points.astype(np.float32), labels.astype(np.int64)


def make_pipelines(cfg):
    x, y = blobs(3000, cfg.num_features, cfg.num_classes)
    cut = 2400
    train = (
        tf.data.Dataset.from_tensor_slices((x[:cut], y[:cut]))
        .shuffle(cut)
        .repeat()
        .batch(cfg.batch_size)
        .prefetch(tf.data.AUTOTUNE)
    )
    val = tf.data.Dataset.from_tensor_slices((x[cut:], y[cut:])).repeat().batch(cfg.batch_size)
    return train, val
