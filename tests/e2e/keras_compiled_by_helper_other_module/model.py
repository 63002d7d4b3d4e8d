"""Builds the regressor; a helper of its own compiles it."""
import tensorflow as tf


def build_model(learning_rate):
    model = tf.keras.Sequential(
        [tf.keras.layers.Dense(8, activation="relu", input_shape=(4,)), tf.keras.layers.Dense(1)]
    )
    compile_model(model, learning_rate)
    return model


def compile_model(model, learning_rate):
    model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=learning_rate), loss="mse")
    return model
