"""A Keras model that overrides train_step (custom loss weighting), trained with fit."""
import argparse
import json
import os

import numpy as np
import tensorflow as tf


class WeightedRegressor(tf.keras.Model):
    """Two-headed regressor; the second head's loss is down-weighted in train_step."""

    def __init__(self, aux_weight=0.3):
        super().__init__()
        self.aux_weight = aux_weight
        self.trunk = tf.keras.layers.Dense(32, activation="relu")
        self.main_head = tf.keras.layers.Dense(1)
        self.aux_head = tf.keras.layers.Dense(1)
        self.loss_tracker = tf.keras.metrics.Mean(name="loss")

    def call(self, x, training=False):
        h = self.trunk(x)
        return self.main_head(h), self.aux_head(h)

    def train_step(self, data):
        x, (y_main, y_aux) = data
        with tf.GradientTape() as tape:
            pred_main, pred_aux = self(x, training=True)
            loss = tf.reduce_mean(tf.square(pred_main - y_main))
            loss += self.aux_weight * tf.reduce_mean(tf.square(pred_aux - y_aux))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        self.loss_tracker.update_state(loss)
        return {"loss": self.loss_tracker.result()}

    @property
    def metrics(self):
        return [self.loss_tracker]


def make_dataset(batch_size, n=2048, d=6):
    x = np.random.normal(size=(n, d)).astype(np.float32)
    w = np.random.normal(size=(d, 1)).astype(np.float32)
    y_main = x @ w
    y_aux = np.tanh(y_main) + 0.05 * np.random.normal(size=(n, 1)).astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, (y_main, y_aux)))
    return ds.shuffle(n).repeat().batch(batch_size)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--steps-per-epoch", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.01)
    args = parser.parse_args()

    model = WeightedRegressor()
    model.compile(optimizer=tf.keras.optimizers.Adam(args.lr))
    model.fit(make_dataset(args.batch_size), epochs=args.epochs, steps_per_epoch=args.steps_per_epoch, verbose=2)
    model.save_weights("weighted_regressor.ckpt")

    checksum = float(sum(tf.reduce_sum(v) + tf.reduce_sum(tf.abs(v)) for v in model.trainable_variables))
    rank = os.environ.get("HOROVOD_RANK", "single")
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), f"result-{rank}.json"), "w") as f:
        json.dump({"checksum": checksum, "steps": int(model.optimizer.iterations)}, f)


if __name__ == "__main__":
    main()
