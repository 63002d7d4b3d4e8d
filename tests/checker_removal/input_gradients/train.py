import numpy as np
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="relu"), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.01)
features = np.random.rand(512, 8).astype("float32")
targets = features.sum(axis=1, keepdims=True)
for epoch in range(4):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(features) - targets) ** 2)
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))


# After training: which inputs excite the model most (gradients with
# respect to the input, which no optimizer applies).
def gradient_ascent_step(image, step_size):
    with tf.GradientTape() as tape:
        tape.watch(image)
        activation = tf.reduce_mean(model(image))
    grads = tape.gradient(activation, image)
    grads = tf.math.l2_normalize(grads)
    image += step_size * grads
    return activation, image


image = tf.random.uniform((1, 8))
for iteration in range(20):
    activation, image = gradient_ascent_step(image, 0.1)
    print(iteration, float(activation))
