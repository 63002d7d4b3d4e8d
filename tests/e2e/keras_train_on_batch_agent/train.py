"""A value-learning agent on a toy environment: a replay memory, and one
`train_on_batch` step per episode in a method the episode loop calls."""
import json
import os
import random
from collections import deque

import numpy as np
from tensorflow import keras


class Agent:
    def __init__(self, state_size, action_count):
        self.memory = deque(maxlen=500)
        self.model = keras.Sequential([
            keras.layers.Dense(16, activation="relu", input_shape=(state_size,)),
            keras.layers.Dense(action_count),
        ])
        self.model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.002), loss="mse")
        self.first_batch = None

    def remember(self, state, action, reward):
        self.memory.append((state, action, reward))

    def replay(self, batch_size):
        """One optimizer step on a sample of what was seen."""
        batch = random.sample(self.memory, min(batch_size, len(self.memory)))
        states = np.array([state for state, _, _ in batch])
        if self.first_batch is None:
            self.first_batch = float(states.sum())
        targets = self.model.predict(states, verbose=0)
        for row, (_, action, reward) in enumerate(batch):
            targets[row, action] = reward
        return self.model.train_on_batch(states, targets)


agent = Agent(4, 2)
for episode in range(20):
    state = np.random.rand(4)
    for t in range(8):
        action = random.randrange(2)
        agent.remember(state, action, float(state[action]))
        state = np.random.rand(4)
    loss = agent.replay(16)
agent.model.save_weights("agent.h5")

checksum = 0.0
for weights in agent.model.get_weights():
    checksum += float(np.sum(weights) + np.sum(np.abs(weights)))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({
        "checksum": checksum,
        "steps": int(agent.model.optimizer.iterations.numpy()),
        "first_batch": agent.first_batch,
    }, out)
