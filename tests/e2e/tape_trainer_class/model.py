import tensorflow as tf


def residual_mlp(dim, width=32, blocks=2):
    inputs = tf.keras.Input(shape=(dim,))
    h = tf.keras.layers.Dense(width)(inputs)
    for _ in range(blocks):
        skip = h
        h = tf.keras.layers.Dense(width, activation="relu")(h)
        h = tf.keras.layers.Dense(width)(h)
        h = tf.keras.layers.Add()([skip, h])
    outputs = tf.keras.layers.Dense(3)(h)
    return tf.keras.Model(inputs, outputs, name="residual_mlp")
