import numpy as np
import tensorflow.compat.v1 as tf
import horovod.tensorflow as hvd

tf.disable_v2_behavior()
hvd.init()
x = tf.placeholder(tf.float32, [None, 4])
y = tf.placeholder(tf.float32, [None, 1])
w = tf.Variable(tf.zeros([4, 1]))
loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - y))
opt = tf.train.GradientDescentOptimizer(0.01 * hvd.size())
opt = hvd.DistributedOptimizer(opt)
train_op = opt.minimize(loss)
data = np.load("data.npy")
config = tf.ConfigProto()
config.gpu_options.visible_device_list = str(hvd.local_rank())
with tf.Session(config=config) as sess:
    sess.run(tf.global_variables_initializer())
    sess.run(hvd.broadcast_global_variables(0))
    for step in range(max(1, 1000 // hvd.size())):
        batch = data[np.random.randint(0, len(data), 32)]
        sess.run(train_op, {x: batch[:, :4], y: batch[:, 4:]})
