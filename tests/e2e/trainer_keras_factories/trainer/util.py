"""Data and callbacks for the task."""
import os

import numpy as np
import tensorflow as tf


def load_data():
    x = np.random.rand(512, 8).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    return x, y


def make_callbacks(job_dir):
    checkpoint_cb = tf.keras.callbacks.ModelCheckpoint(os.path.join(job_dir, "model.h5"))
    early_stopping_cb = tf.keras.callbacks.EarlyStopping(monitor="loss", patience=100)
    return [checkpoint_cb, early_stopping_cb]
