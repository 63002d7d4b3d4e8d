"""A replay agent: each process plays its own episodes (per-process random
draws), fits one full batch of its memory after each, and returns from its
episode loop once its running mean episode length reaches a goal. Each
worker's mean differs, so the test must be averaged across the workers, or
the first to return leaves the other waiting in the next fit's allreduce."""
import json
import os
import random
from collections import deque

import numpy as np
import tensorflow as tf

GOAL = 14.0


class ReplayAgent:
    def __init__(self):
        self.memory = deque(maxlen=2000)
        self.net = tf.keras.Sequential([
            tf.keras.layers.Dense(8, activation="relu", input_shape=(4,)),
            tf.keras.layers.Dense(2),
        ])
        self.net.compile(loss="mse", optimizer=tf.keras.optimizers.Adam(0.001))

    def learn(self, size):
        picked = random.sample(self.memory, min(len(self.memory), size))
        states = [state for state, _ in picked]
        values = [value for _, value in picked]
        self.net.fit(np.array(states), np.array(values), batch_size=len(states), verbose=0)

    def play(self, episodes):
        lengths = deque(maxlen=10)
        for episode in range(episodes):
            length = 0
            over = False
            while not over:
                self.memory.append((np.random.rand(4), np.random.rand(2)))
                length += 1
                over = np.random.rand() < 1.0 / (1 + episode)
            lengths.append(length)
            mean_length = np.mean(lengths)
            if mean_length >= GOAL and episode >= 5:
                return episode
            self.learn(16)
        return episodes


agent = ReplayAgent()
played = agent.play(400)

checksum = 0.0
for weights in agent.net.get_weights():
    checksum += float(np.sum(weights) + np.sum(np.abs(weights)))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({
        "checksum": checksum,
        "steps": int(agent.net.optimizer.iterations.numpy()),
        "rate": float(tf.keras.backend.get_value(agent.net.optimizer.learning_rate)),
    }, out)
