"""Graph-mode regression: the data is fetched by a `maybe_download` helper that a
`collect_data` helper calls; the initializer op is built at module level, in the
graph's block, and run with `init.run()` inside the function that trains."""
import json
import os
import urllib.request

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_v2_behavior()

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = "file://" + os.path.join(HERE, "source") + "/"
EXPECTED_BYTES = os.path.getsize(os.path.join(HERE, "source", "points.txt"))


def maybe_download(filename, expected_bytes):
    if not os.path.exists(filename):
        filename, _ = urllib.request.urlretrieve(SOURCE + filename, filename)
    statinfo = os.stat(filename)
    if statinfo.st_size != expected_bytes:
        raise Exception("Failed to verify " + filename)
    return filename


def collect_data():
    filename = maybe_download("points.txt", EXPECTED_BYTES)
    return np.loadtxt(filename, dtype=np.float32)


data = collect_data()

graph = tf.Graph()
with graph.as_default():
    inputs = tf.placeholder(tf.float32, [None, 4])
    targets = tf.placeholder(tf.float32, [None])
    weights = tf.Variable(tf.random_normal([4, 1], stddev=0.5))
    predictions = tf.reshape(tf.matmul(inputs, weights), [-1])
    loss = tf.reduce_mean(tf.square(predictions - targets))
    optimizer = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
    init = tf.global_variables_initializer()


def run(graph, num_steps):
    steps = 0
    with tf.Session(graph=graph) as session:
        init.run()
        for step in range(num_steps):
            rows = np.random.randint(len(data), size=16)
            session.run(optimizer, feed_dict={inputs: data[rows, :4], targets: data[rows, 4]})
            steps += 1
        return session.run(weights), steps


final, steps = run(graph, 50)
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": float(final.sum() + np.abs(final).sum()), "steps": steps}, out)
