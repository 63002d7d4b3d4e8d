"""The training task: data, model and callbacks come from the other modules."""
import argparse
import json
import os

import tensorflow as tf

from trainer import model, util


class CountBatches(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.batches = 0

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1


def train_and_evaluate(args):
    x, y = util.load_data()
    keras_model = model.build_model(x.shape[1], args.learning_rate)
    # Every run starts from an empty job directory.
    if tf.io.gfile.exists(args.job_dir):
        tf.io.gfile.rmtree(args.job_dir)
    tf.io.gfile.makedirs(args.job_dir)
    counter = CountBatches()
    callbacks = util.make_callbacks(args.job_dir)
    keras_model.fit(x, y, epochs=args.num_epochs, batch_size=32, callbacks=callbacks + [counter], verbose=2)
    keras_model.save(os.path.join(args.job_dir, "final.h5"))

    checksum = sum(float(tf.reduce_sum(v) + tf.reduce_sum(tf.abs(v))) for v in keras_model.trainable_variables)
    rank = os.environ.get("HOROVOD_RANK", "single")
    with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
        json.dump({"checksum": checksum, "steps": counter.batches}, out)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--job-dir", default="job")
    parser.add_argument("--num-epochs", type=int, default=6)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    train_and_evaluate(parser.parse_args(argv))


if __name__ == "__main__":
    main()
