import numpy as np
import tensorflow as tf


def model_fn(features, labels, mode):
    logits = tf.layers.dense(features["x"], 2)
    predictions = tf.argmax(logits, axis=1)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions=predictions)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    train_op = tf.contrib.layers.optimize_loss(
        loss, tf.train.get_global_step(), learning_rate=0.01, optimizer="Adam")
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


x = np.random.rand(256, 4).astype(np.float32)
y = (x.sum(axis=1) > 2).astype(np.int32)
input_fn = tf.estimator.inputs.numpy_input_fn({"x": x}, y, batch_size=32, num_epochs=None, shuffle=True)
estimator = tf.estimator.Estimator(model_fn=model_fn, model_dir="runs/optimize_loss")
estimator.train(input_fn, steps=200)
