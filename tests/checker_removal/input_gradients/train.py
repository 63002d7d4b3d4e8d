import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="relu"), tf.keras.layers.Dense(1)])


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
