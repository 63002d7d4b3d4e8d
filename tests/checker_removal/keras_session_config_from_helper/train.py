import numpy as np
import keras
import tensorflow as tf
from keras import backend as K


def session_config():
    config = tf.ConfigProto()
    config.gpu_options.allow_growth = True
    return config


K.set_session(tf.Session(config=session_config()))

x = np.random.rand(256, 8)
y = keras.utils.to_categorical(np.random.randint(0, 2, 256), 2)
model = keras.models.Sequential([keras.layers.Dense(16, activation="relu", input_shape=(8,)), keras.layers.Dense(2, activation="softmax")])
model.compile(optimizer=keras.optimizers.Adadelta(lr=1.0), loss="categorical_crossentropy")
model.fit(x, y, batch_size=32, epochs=8)
