import numpy as np
import tensorflow as tf
import horovod.tensorflow.keras as hvd

hvd.init()
gpus = tf.config.experimental.list_physical_devices("GPU")
for gpu in gpus:
    tf.config.experimental.set_memory_growth(gpu, True)
if gpus:
    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], "GPU")

(images, labels), _ = tf.keras.datasets.mnist.load_data("mnist-%d.npz" % hvd.rank())
images = images.reshape(-1, 784).astype("float32") / 255.0
model = tf.keras.Sequential([
    tf.keras.layers.Dense(64, activation="relu", input_shape=(784,)),
    tf.keras.layers.Dense(10, activation="softmax"),
])
optimizer = tf.keras.optimizers.Adam(learning_rate=0.001 * hvd.size())
optimizer = hvd.DistributedOptimizer(optimizer)
model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy")
callbacks = [
    hvd.callbacks.BroadcastGlobalVariablesCallback(0),
    hvd.callbacks.MetricAverageCallback(),
    *([tf.keras.callbacks.ModelCheckpoint("best.h5", monitor="loss", save_best_only=True)] if hvd.rank() == 0 else []),
]
model.fit(images, labels, batch_size=64, epochs=max(1, 8 // hvd.size()), callbacks=callbacks, verbose=1 if hvd.rank() == 0 else 0)
hvd.allreduce(0, name="read_barrier")
model.load_weights("best.h5")
if hvd.rank() == 0:
    model.save_weights("weights.h5")
