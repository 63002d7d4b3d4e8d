"""A TF1 policy-gradient agent in the tutorial shape: each episode is played
by a loop over a step budget that leaves when the environment says it is
done, and the agent updates once, as the episode ends."""
import json
import os

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

total_episodes = 40
max_moves = 12


class CorridorEnv:
    """Walk a corridor; an episode ends after a random number of moves,
    always within the move budget."""

    def reset(self):
        self.position = 0.0
        self.length = np.random.randint(3, max_moves - 1)
        self.moves = 0
        return np.array([self.position, 0.0], dtype=np.float32)

    def step(self, action):
        self.moves += 1
        self.position += 1.0 if action == 1 else -1.0
        reward = 1.0 if action == 1 else 0.0
        done = self.moves >= self.length
        return np.array([self.position, float(self.moves)], dtype=np.float32), reward, done, {}


class Agent:
    def __init__(self, learning_rate):
        self.observations = tf.compat.v1.placeholder(tf.float32, [None, 2])
        self.actions = tf.compat.v1.placeholder(tf.int32, [None])
        self.returns = tf.compat.v1.placeholder(tf.float32, [None])
        hidden = tf.compat.v1.layers.dense(self.observations, 8, activation=tf.nn.relu)
        logits = tf.compat.v1.layers.dense(hidden, 2)
        self.probabilities = tf.nn.softmax(logits)
        chosen = tf.reduce_sum(tf.one_hot(self.actions, 2) * tf.nn.log_softmax(logits), axis=1)
        loss = -tf.reduce_mean(chosen * self.returns)
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(learning_rate)
        self.update = optimizer.minimize(loss)


env = CorridorEnv()
agent = Agent(0.05)
init = tf.compat.v1.global_variables_initializer()
updates = 0
with tf.compat.v1.Session() as sess:
    sess.run(init)
    episode = 0
    while episode < total_episodes:
        observation = env.reset()
        seen, taken, rewards = [], [], []
        for move in range(max_moves):
            probabilities = sess.run(agent.probabilities, feed_dict={agent.observations: [observation]})[0]
            action = int(np.random.rand() < probabilities[1])
            next_observation, reward, done, _ = env.step(action)
            seen.append(observation)
            taken.append(action)
            rewards.append(reward)
            observation = next_observation
            if done:
                returns = np.cumsum(rewards[::-1])[::-1]
                sess.run(agent.update, feed_dict={
                    agent.observations: np.array(seen), agent.actions: taken, agent.returns: returns})
                updates += 1
                break
        episode += 1
    weights = sess.run(tf.compat.v1.trainable_variables())

checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in weights))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": updates}, out)
