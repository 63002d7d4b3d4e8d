"""A Keras model, compiled here and turned into an Estimator for the trainer."""
import tensorflow as tf


def build_keras_model(learning_rate):
    model = tf.keras.Sequential(
        [
            tf.keras.layers.Dense(8, activation="relu", input_shape=(4,), name="hidden"),
            tf.keras.layers.Dense(1, name="output"),
        ]
    )
    model.compile(optimizer=tf.keras.optimizers.legacy.SGD(learning_rate), loss="mse")
    return model


def make_estimator(model_dir, learning_rate):
    return tf.keras.estimator.model_to_estimator(
        keras_model=build_keras_model(learning_rate), model_dir=model_dir
    )
