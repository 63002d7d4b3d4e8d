"""A text classifier trained with a tape on one of the splits a directory
loader returns at once (subset="both" gives the training and validation
splits as a list); the reviews are written to a private directory first."""
import json
import os
import tempfile

import numpy as np
import tensorflow as tf

words = ["good", "bad", "fine", "awful", "great", "poor", "nice", "dull"]
generator = np.random.default_rng(3)
root = tempfile.mkdtemp()
for label in ("neg", "pos"):
    os.makedirs(os.path.join(root, label))
    for index in range(64):
        picked = generator.choice(words[label == "pos" :: 2], size=6)
        with open(os.path.join(root, label, "%03d.txt" % index), "w") as review:
            review.write(" ".join(picked))

splits = tf.keras.utils.text_dataset_from_directory(
    root, batch_size=16, validation_split=0.25, subset="both", seed=11
)
train = splits[0]
validation = splits[1]
vectorize = tf.keras.layers.TextVectorization(max_tokens=20, output_mode="count")
vectorize.adapt(["good bad fine awful great poor nice dull"])

model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.build((None, vectorize.vocabulary_size()))
optimizer = tf.keras.optimizers.SGD(learning_rate=0.05)
loss_object = tf.keras.losses.BinaryCrossentropy(from_logits=True)
steps = 0
first = None
for epoch in range(4):
    for texts, labels in train:
        if first is None:
            first = float(tf.reduce_sum(vectorize(texts)).numpy()) + float(tf.reduce_sum(labels).numpy()) * 1000
        with tf.GradientTape() as tape:
            loss = loss_object(tf.cast(labels, tf.float32)[:, None], model(vectorize(texts)))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        steps += 1

batches = sum(1 for _ in validation)
checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in (v.numpy() for v in model.trainable_variables)))
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
    json.dump({"checksum": checksum, "steps": steps, "first_batch": first, "loops": {"validation": batches}}, f)
