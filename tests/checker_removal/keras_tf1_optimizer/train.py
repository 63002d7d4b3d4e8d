import numpy as np
import tensorflow as tf

# A tf.keras model compiled with a TF1 optimizer, as older tutorials wrote it.
x = np.random.rand(256, 4).astype("float32")
y = np.random.rand(256, 1).astype("float32")
model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(4,))])
model.compile(optimizer=tf.train.AdamOptimizer(0.001), loss="mse")
model.fit(x, y, batch_size=32, epochs=4)
