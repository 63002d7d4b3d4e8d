"""Synthetic MNIST-like data, built in memory so nothing is downloaded.

Each image is 28x28 noise on top of a random brightness level; its label is
the decile of its total brightness, so a network can learn it from the pixels.
"""
import numpy as np
import tensorflow as tf

IMAGE_SIZE = 28
NUM_CLASSES = 10


def _make_arrays(num_samples, seed):
    rng = np.random.default_rng(seed)
    level = rng.random((num_samples, 1, 1, 1), dtype=np.float32)
    noise = rng.random((num_samples, IMAGE_SIZE, IMAGE_SIZE, 1), dtype=np.float32)
    images = 0.8 * level + 0.2 * noise
    sums = images.sum(axis=(1, 2, 3))
    # Class boundaries at the deciles of the brightness distribution.
    edges = np.quantile(sums, np.linspace(0.0, 1.0, NUM_CLASSES + 1)[1:-1])
    labels = np.digitize(sums, edges).astype(np.int64)
    return images, labels


def load_datasets(batch_size=64, num_train=6000, num_test=1000, seed=42):
    """Return (train, test) tf.data pipelines; the training one repeats forever."""
    images, labels = _make_arrays(num_train + num_test, seed)
    train = tf.data.Dataset.from_tensor_slices((images[:num_train], labels[:num_train]))
    train = train.shuffle(num_train, seed=seed).batch(batch_size).repeat()
    test = tf.data.Dataset.from_tensor_slices((images[num_train:], labels[num_train:]))
    test = test.batch(batch_size)
    return train.prefetch(tf.data.AUTOTUNE), test
