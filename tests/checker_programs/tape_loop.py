import tensorflow as tf
import horovod.tensorflow as hvd

hvd.init()
gpus = tf.config.experimental.list_physical_devices("GPU")
for gpu in gpus:
    tf.config.experimental.set_memory_growth(gpu, True)
if gpus:
    tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], "GPU")

(images, labels), _ = tf.keras.datasets.mnist.load_data("mnist-%d.npz" % hvd.rank())
dataset = tf.data.Dataset.from_tensor_slices((images / 255.0, labels))
dataset = dataset.shard(hvd.size(), hvd.rank()).shuffle(1000).batch(32).repeat()
model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(10)])
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.SGD(0.01 * hvd.size())


@tf.function
def training_step(x, y, first_batch):
    with tf.GradientTape() as tape:
        loss = loss_fn(y, model(x, training=True))
    tape = hvd.DistributedGradientTape(tape)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    if first_batch:
        hvd.broadcast_variables(model.variables, root_rank=0)
        hvd.broadcast_variables(optimizer.variables(), root_rank=0)
    return loss


for step, (x, y) in enumerate(dataset.take(1000 // hvd.size())):
    loss = training_step(x, y, step == 0)
    if step % 100 == 0 and hvd.rank() == 0:
        print(step, float(loss))
