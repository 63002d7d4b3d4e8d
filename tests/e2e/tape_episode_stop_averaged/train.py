"""An actor-critic style loop: each iteration plays one episode of a toy
environment (its length drawn at random, so every worker's episodes differ),
takes one tape step on it, and stops once a running reward passes a
threshold. The running reward is each worker's own: unless the workers
agree on it, one stops while the other waits in its next allreduce."""
import json
import os

import numpy as np
import tensorflow as tf


class CountingEnv:
    """Rewards 1 per step; an episode lasts 2 to 9 steps."""

    def reset(self):
        self.left = np.random.randint(2, 10)
        return np.linspace(0.0, 1.0, 4, dtype=np.float32)

    def step(self, action):
        self.left -= 1
        observation = np.full(4, self.left / 10.0, dtype=np.float32)
        return observation, 1.0, self.left <= 0


env = CountingEnv()
model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="tanh"), tf.keras.layers.Dense(2)])
model.build((None, 4))
optimizer = tf.keras.optimizers.SGD(learning_rate=0.01)
running_reward = 0.0
episodes = 0
while True:
    state = env.reset()
    episode_reward = 0.0
    with tf.GradientTape() as tape:
        outputs = []
        for t in range(50):
            logits = model(state[None, :])
            state, reward, done = env.step(int(tf.argmax(logits[0])))
            episode_reward += reward
            outputs.append(logits[0, 0])
            if done:
                break
        loss = tf.reduce_mean(tf.square(tf.stack(outputs) - 1.0))
    running_reward = 0.1 * episode_reward + 0.9 * running_reward
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    episodes += 1
    if running_reward > 3.0:
        break

checksum = sum(float(np.sum(v.numpy()) + np.sum(np.abs(v.numpy()))) for v in model.trainable_variables)
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": episodes}, out)
