"""Model factories."""
import tensorflow as tf


def make_classifier(num_features, num_classes, hidden_units=(64,), dropout=0.1):
    """A plain MLP built as a Sequential, one block per hidden layer."""
    model = tf.keras.Sequential(name="mlp_classifier")
    model.add(tf.keras.Input(shape=(num_features,)))
    for units in hidden_units:
        model.add(tf.keras.layers.Dense(units, activation="relu"))
        model.add(tf.keras.layers.Dropout(dropout))
    model.add(tf.keras.layers.Dense(num_classes, activation="softmax"))
    return model
