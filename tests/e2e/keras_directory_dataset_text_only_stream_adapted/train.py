"""Reviews read from a directory: a text-only stream bound to a name of its
own feeds the vectorizer's vocabulary, which must come from all of the
training text, and the fitted stream is the vectorized one."""
import json
import os
import tempfile

import numpy as np
import tensorflow as tf

words = ["good", "bad", "fine", "awful", "great", "poor", "nice", "dull", "okay", "grim"]
generator = np.random.default_rng(5)
root = tempfile.mkdtemp()
for label in ("neg", "pos"):
    os.makedirs(os.path.join(root, label))
    for index in range(64):
        picked = generator.choice(words[label == "pos" :: 2], size=5)
        with open(os.path.join(root, label, "%03d.txt" % index), "w") as review:
            review.write(" ".join(picked))

raw_train = tf.keras.utils.text_dataset_from_directory(
    root, batch_size=16, validation_split=0.25, subset="training", seed=9
)
text_only_train = raw_train.map(lambda text, label: text)
vectorize = tf.keras.layers.TextVectorization(max_tokens=30, output_mode="count")
vectorize.adapt(text_only_train)


def to_counts(text, label):
    return vectorize(text), label


train = raw_train.map(to_counts).cache()
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(
    optimizer=tf.keras.optimizers.SGD(learning_rate=0.05),
    loss=tf.keras.losses.BinaryCrossentropy(from_logits=True),
)
model.fit(train, epochs=4, verbose=2)

checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in (v.numpy() for v in model.trainable_variables)))
steps = int(model.optimizer.iterations.numpy())
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
    json.dump({"checksum": checksum, "steps": steps, "shared": {"vocabulary": vectorize.get_vocabulary()}}, f)
