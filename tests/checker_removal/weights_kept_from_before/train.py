"""Meta-learning in the first-order style: a few inner steps on a sampled
task, then the weights move only part of the way from where they started."""
import numpy as np
import tensorflow as tf

inputs = tf.keras.Input(shape=(4,))
outputs = tf.keras.layers.Dense(3)(tf.keras.layers.Dense(8, activation="relu")(inputs))
model = tf.keras.Model(inputs, outputs)
optimizer = tf.keras.optimizers.SGD(learning_rate=0.01)


def sample_task(rows):
    x = np.random.rand(rows, 4).astype("float32")
    y = np.random.randint(0, 3, size=(rows,))
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(8)


for meta_step in range(20):
    start = model.get_weights()
    for x, y in sample_task(32):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(
                tf.keras.losses.sparse_categorical_crossentropy(y, model(x), from_logits=True)
            )
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
    moved = model.get_weights()
    model.set_weights([old + (new - old) * 0.5 for old, new in zip(start, moved)])
