"""Estimator factories: a canned classifier and a wide-and-deep one on the
library's default optimizers, and a model_fn returned by a function of its
parameters."""
import tensorflow as tf


def build_estimator(config):
    features = [tf.feature_column.numeric_column("x", shape=(4,))]
    return tf.estimator.DNNClassifier(
        feature_columns=features,
        hidden_units=[8],
        n_classes=2,
        config=config,
    )


def build_wide_and_deep(config):
    wide = [tf.feature_column.numeric_column("x", shape=(4,))]
    deep = [tf.feature_column.numeric_column("x", shape=(4,))]
    return tf.estimator.DNNLinearCombinedClassifier(
        config=config,
        linear_feature_columns=wide,
        dnn_feature_columns=deep,
        dnn_hidden_units=[8],
    )


def get_model_fn(params):
    def model_fn(features, labels, mode):
        logits = tf.keras.layers.Dense(2, name="dense")(features["x"])
        loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)
        optimizer = tf.compat.v1.train.AdamOptimizer(params["learning_rate"])
        train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
        return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)

    return model_fn
