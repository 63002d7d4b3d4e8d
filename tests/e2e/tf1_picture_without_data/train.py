"""Optimise a picture toward a fixed target in graph mode: the only variable
is the picture, nothing is fed and no pipeline is read, so every step of
every worker computes the same gradient. Pictures are written by a helper of
another module every few steps."""
import json
import os

import numpy as np
import tensorflow.compat.v1 as tf

import pictures

tf.disable_v2_behavior()

target = np.linspace(0.0, 1.0, 48, dtype=np.float32).reshape((1, 4, 4, 3))
picture = tf.get_variable("picture", initializer=tf.random.uniform((1, 4, 4, 3)))
loss = tf.reduce_mean(tf.square(picture - target))
gradient = tf.gradients(loss, picture)[0]
step_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
out_dir = os.environ.get("RESULT_DIR", ".")

with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    steps = 0
    rate = None
    for index in range(40):
        before, first_gradient = sess.run([picture, gradient])
        sess.run(step_op)
        if rate is None:
            largest = int(np.argmax(np.abs(first_gradient)))
            rate = float((before - sess.run(picture)).ravel()[largest] / first_gradient.ravel()[largest])
        steps += 1
        if (index + 1) % 10 == 0:
            print("step {} loss {:.5f}".format(index + 1, sess.run(loss)))
            pictures.save_picture(os.path.join(out_dir, "picture-%d.npy" % index), sess.run(picture))
    final = sess.run(picture)

rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(out_dir, "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": float(final.sum() + np.abs(final).sum()), "steps": steps, "rate": rate, "loops": {"training steps": steps}}, out)
