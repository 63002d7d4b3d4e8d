import tensorflow as tf


class ResidualBlock(tf.keras.layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.dense_a = tf.keras.layers.Dense(units, activation="relu")
        self.dense_b = tf.keras.layers.Dense(units)

    def call(self, inputs):
        return tf.nn.relu(inputs + self.dense_b(self.dense_a(inputs)))


class MLPClassifier(tf.keras.Model):
    """Projection, a couple of residual blocks, and a linear head."""

    def __init__(self, num_classes, width=48, depth=2):
        super().__init__()
        self.project = tf.keras.layers.Dense(width, activation="relu")
        self.blocks = [ResidualBlock(width) for _ in range(depth)]
        self.head = tf.keras.layers.Dense(num_classes)

    def call(self, inputs, training=False):
        h = self.project(inputs)
        for block in self.blocks:
            h = block(h)
        return self.head(h)
