"""Sequence classifier (GRU) with gradient clipping and TensorBoard scalars.

Configuration comes from environment variables, as on a cluster job.
"""
import datetime
import json
import os

import numpy as np
import tensorflow as tf

NUM_STEPS = int(os.environ.get("NUM_STEPS", 40))
BATCH_SIZE = int(os.environ.get("BATCH_SIZE", 32))
CLIP_NORM = float(os.environ.get("CLIP_NORM", 1.0))
LOG_EVERY = 10
SEQ_LEN, VOCAB, CLASSES = 20, 50, 2
logdir = os.path.join("runs", datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))


def synthetic_sequences(n):
    """Label 1 when token 7 appears more often than token 3."""
    seqs = np.random.randint(VOCAB, size=(n, SEQ_LEN)).astype(np.int32)
    labels = ((seqs == 7).sum(axis=1) > (seqs == 3).sum(axis=1)).astype(np.int32)
    return seqs, labels


def build_model():
    tokens = tf.keras.Input(shape=(SEQ_LEN,), dtype=tf.int32)
    x = tf.keras.layers.Embedding(VOCAB, 16)(tokens)
    x = tf.keras.layers.GRU(16)(x)
    logits = tf.keras.layers.Dense(CLASSES)(x)
    return tf.keras.Model(tokens, logits)


model = build_model()
loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
opt = tf.keras.optimizers.RMSprop(learning_rate=1e-3)
train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy()


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss = loss_object(y, logits)
    grads = tape.gradient(loss, model.trainable_variables)
    grads, global_norm = tf.clip_by_global_norm(grads, CLIP_NORM)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    train_accuracy.update_state(y, logits)
    return loss, global_norm


if __name__ == "__main__":
    seqs, labels = synthetic_sequences(4096)
    train_ds = tf.data.Dataset.from_tensor_slices((seqs, labels)).shuffle(4096).batch(BATCH_SIZE).repeat()
    summary_writer = tf.summary.create_file_writer(logdir)

    steps_done = 0
    for step, (x, y) in enumerate(train_ds.take(NUM_STEPS)):
        loss, norm = train_step(x, y)
        steps_done += 1
        with summary_writer.as_default():
            tf.summary.scalar("loss", loss, step=step)
            tf.summary.scalar("grad_norm", norm, step=step)
        if step % LOG_EVERY == 0:
            tf.print("step", step, "loss", loss, "acc", train_accuracy.result())
    summary_writer.flush()

    total = tf.add_n([tf.reduce_sum(v) + tf.reduce_sum(tf.abs(v)) for v in model.trainable_variables])
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % os.environ.get("HOROVOD_RANK", "single")), "w") as f:
        json.dump({"checksum": float(total), "steps": steps_done}, f)
