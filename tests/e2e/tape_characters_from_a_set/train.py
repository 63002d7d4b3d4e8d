"""A character model whose vocabulary is the set of characters in its text."""
import json
import os

import numpy as np
import tensorflow as tf

text = "the quick brown fox jumps over the lazy dog while the cat naps " * 20
chars = list(set(text))
char_to_ix = {ch: i for i, ch in enumerate(chars)}
encoded = np.array([char_to_ix[ch] for ch in text], dtype="int32")

embedding = tf.keras.layers.Embedding(len(chars), 8)
readout = tf.keras.layers.Dense(len(chars))
embedding.build((None,))
readout.build((None, 8))
optimizer = tf.keras.optimizers.SGD(learning_rate=0.5)

first = None
for step in range(40):
    starts = np.random.randint(0, len(encoded) - 1, size=16)
    if first is None:
        # The first five positions drawn, exactly: a sum of sixteen draws is
        # equal on two workers about once in 5,000 runs, and once was.
        first = float(sum(int(start) * 1280 ** i for i, start in enumerate(starts[:5])))
    with tf.GradientTape() as tape:
        logits = readout(embedding(encoded[starts]))
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=encoded[starts + 1], logits=logits))
    variables = embedding.trainable_variables + readout.trainable_variables
    grads = tape.gradient(loss, variables)
    optimizer.apply_gradients(zip(grads, variables))

# Which index each character got: every worker must number them alike.
vocabulary_order = sum(index * ord(ch) for index, ch in enumerate(chars))
weights = [v.numpy() for v in embedding.trainable_variables + readout.trainable_variables]
out_dir = os.environ.get("RESULT_DIR", ".")
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(out_dir, "result-%s.json" % rank), "w") as f:
    json.dump({"checksum": float(sum(w.sum() + np.abs(w).sum() for w in weights)),
               "steps": int(optimizer.iterations.numpy()),
               "rate": float(optimizer.learning_rate.numpy()),
               "first_batch": first,
               "shared": {"vocabulary order": vocabulary_order}}, f)
