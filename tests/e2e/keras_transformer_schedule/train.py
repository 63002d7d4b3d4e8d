"""A Transformer-style learning-rate schedule class passed to Adam, as the
attention tutorials write it."""
import json
import os

import numpy as np
import tensorflow as tf


class CustomSchedule(tf.keras.optimizers.schedules.LearningRateSchedule):
    def __init__(self, d_model, warmup_steps=40):
        super(CustomSchedule, self).__init__()
        self.d_model = tf.cast(d_model, tf.float32)
        self.warmup_steps = warmup_steps

    def __call__(self, step):
        step = tf.cast(step, tf.float32) + 1.0
        arg1 = tf.math.rsqrt(step)
        arg2 = step * (self.warmup_steps ** -1.5)
        return tf.math.rsqrt(self.d_model) * tf.math.minimum(arg1, arg2)


class CountBatches(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.steps = 0

    def on_train_batch_end(self, batch, logs=None):
        self.steps += 1


x = np.random.rand(640, 16).astype(np.float32)
y = (x[:, :8].sum(axis=1) > 4.0).astype(np.int64)
dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(640).batch(32)

learning_rate = CustomSchedule(16)
optimizer = tf.keras.optimizers.Adam(learning_rate, beta_1=0.9, beta_2=0.98, epsilon=1e-9)
model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu"),
    tf.keras.layers.Dense(2),
])
model.compile(optimizer=optimizer,
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
counter = CountBatches()
model.fit(dataset, epochs=2, callbacks=[counter])

checksum = 0.0
for variable in model.trainable_variables:
    checksum += float(np.sum(variable.numpy()) + np.sum(np.abs(variable.numpy())))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": counter.steps}, out)
