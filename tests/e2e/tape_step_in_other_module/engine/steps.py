"""Step functions shared by the training and evaluation scripts."""
import tensorflow as tf


@tf.function
def train_step(model, optimizer, loss_fn, images, labels):
    with tf.GradientTape() as tape:
        predictions = model(images, training=True)
        loss = loss_fn(labels, predictions)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss


@tf.function
def eval_step(model, loss_fn, images, labels):
    return loss_fn(labels, model(images, training=False))
