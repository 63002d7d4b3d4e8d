"""A policy-gradient agent on a toy environment whose episodes last a random
number of steps: the model is updated once per episode, as it ends
(`if done: update_policy(...); break` inside `while True:`), by a helper that
takes the model as a parameter."""
import json
import os

import numpy as np
from tensorflow import keras


class RandomWalk:
    """Each step ends the episode with probability 1/6."""

    def reset(self):
        self.position = np.random.rand(4)
        return self.position

    def step(self, action):
        self.position = np.clip(self.position + (action - 0.5) * 0.1, 0.0, 1.0)
        reward = float(self.position[action])
        done = np.random.rand() < 1.0 / 6.0
        return self.position, reward, done, {}


env = RandomWalk()
policy = keras.Sequential([
    keras.layers.Dense(16, activation="relu", input_shape=(4,)),
    keras.layers.Dense(2, activation="softmax"),
])
policy.compile(loss="categorical_crossentropy", optimizer=keras.optimizers.SGD(learning_rate=0.01))
updates = 0


def update_policy(policy, rewards, states, actions):
    global updates
    returns = np.cumsum(np.array(rewards)[::-1])[::-1]
    targets = np.zeros((len(actions), 2), dtype=np.float32)
    targets[np.arange(len(actions)), actions] = returns / (np.abs(returns).max() + 1e-6)
    loss = policy.train_on_batch(np.vstack(states), targets)
    updates += 1
    return loss


for episode in range(24):
    state = env.reset()
    rewards, states, actions = [], [], []
    while True:
        probabilities = policy.predict(state[None, :], verbose=0)[0]
        action = int(np.random.choice(2, p=probabilities / probabilities.sum()))
        new_state, reward, done, _ = env.step(action)
        states.append(state)
        rewards.append(reward)
        actions.append(action)
        if done:
            loss = update_policy(policy, rewards, states, actions)
            print("episode", episode, "steps", len(rewards), "loss", loss)
            break
        state = new_state

checksum = 0.0
for weights in policy.get_weights():
    checksum += float(np.sum(weights) + np.abs(weights).sum())
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({
        "checksum": checksum,
        "steps": updates,
        "rate": float(keras.backend.get_value(policy.optimizer.learning_rate)),
    }, out)
