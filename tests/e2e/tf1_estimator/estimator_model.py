"""model_fn for a small DNN classifier, written against the TF1 layers API."""
import tensorflow as tf


def dnn_model_fn(features, labels, mode, params):
    with tf.compat.v1.variable_scope("dnn"):
        net = features["x"]
        for i, units in enumerate(params["hidden_units"]):
            net = tf.compat.v1.layers.dense(net, units, activation=tf.nn.relu, name="hidden_%d" % i)
        logits = tf.compat.v1.layers.dense(net, params["n_classes"], name="logits")

    predictions = {"class_ids": tf.argmax(logits, axis=1), "probabilities": tf.nn.softmax(logits)}
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions=predictions)

    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    accuracy = tf.compat.v1.metrics.accuracy(labels=labels, predictions=predictions["class_ids"])
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={"accuracy": accuracy})

    optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate=params["learning_rate"])
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
