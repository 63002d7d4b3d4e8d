"""Synthetic input pipeline: labels from a random linear teacher."""
import numpy as np
import tensorflow as tf


def random_teacher(num_features, num_classes):
    return np.random.normal(size=(num_features, num_classes))


def teacher_dataset(teacher, num_examples, batch_size, training=True):
    x = np.random.normal(size=(num_examples, teacher.shape[0])).astype("float32")
    y = np.argmax(x @ teacher, axis=1).astype("int64")
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    if training:
        ds = ds.shuffle(buffer_size=num_examples)
    return ds.repeat().batch(batch_size).prefetch(tf.data.AUTOTUNE)
