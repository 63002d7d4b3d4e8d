import tensorflow as tf


class ConvNet(tf.keras.Model):
    """Two conv blocks, global pooling and a dense head producing logits."""

    def __init__(self, num_classes: int = 10, **kwargs):
        super().__init__(**kwargs)
        self.conv1 = tf.keras.layers.Conv2D(16, 3, padding="same", activation="relu")
        self.pool = tf.keras.layers.MaxPooling2D()
        self.conv2 = tf.keras.layers.Conv2D(32, 3, padding="same", activation="relu")
        self.gap = tf.keras.layers.GlobalAveragePooling2D()
        self.hidden = tf.keras.layers.Dense(64, activation="relu")
        self.logits = tf.keras.layers.Dense(num_classes)

    def call(self, images, training=False):
        h = self.pool(self.conv1(images))
        h = self.gap(self.conv2(h))
        return self.logits(self.hidden(h))
