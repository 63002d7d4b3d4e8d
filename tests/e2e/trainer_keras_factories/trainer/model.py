"""The model: built and compiled by a factory the task calls."""
import tensorflow as tf


def build_model(input_dim, learning_rate):
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(16, activation="relu", input_shape=(input_dim,)),
        tf.keras.layers.Dense(1),
    ])
    model.compile(optimizer=tf.keras.optimizers.RMSprop(learning_rate=learning_rate), loss="mse")
    return model
