"""A TF1 actor-critic agent in the tutorial shape: every episode lasts the
same number of moves (the loop over moves leaves only on its own counter),
the critic's gradient with respect to the action steers the actor's
gradient (`grad_ys`), the networks are built by methods that return their
ops in tuples, and the graph is written once by a `FileWriter` nobody keeps."""
import json
import os

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

np.random.seed(1)
tf.compat.v1.set_random_seed(1)

EPISODES = 8
MOVES = 5
OUTPUT_GRAPH = True


class SwingEnv:
    """A pendulum-like task with no terminal state: episodes end on the budget."""

    def reset(self):
        self.angle = np.random.uniform(-1.0, 1.0)
        return np.array([self.angle, 0.0], dtype=np.float32)

    def step(self, action):
        self.angle = float(np.clip(self.angle + 0.1 * float(action), -2.0, 2.0))
        reward = -abs(self.angle)
        return np.array([self.angle, float(action)], dtype=np.float32), reward, False, {}


class Critic:
    def __init__(self, sess, states, actions, learning_rate):
        self.sess = sess
        self.states, self.actions = states, actions
        self.targets = tf.compat.v1.placeholder(tf.float32, [None, 1])
        self.q, self.train_op = self._build(learning_rate)
        self.action_grads = tf.gradients(self.q, self.actions)[0]

    def _build(self, learning_rate):
        joined = tf.concat([self.states, self.actions], axis=1)
        hidden = tf.compat.v1.layers.dense(joined, 8, activation=tf.nn.relu)
        q = tf.compat.v1.layers.dense(hidden, 1)
        loss = tf.reduce_mean(tf.square(self.targets - q))
        train_op = tf.compat.v1.train.AdamOptimizer(learning_rate).minimize(loss)
        return q, train_op

    def learn(self, states, actions, targets):
        self.sess.run(self.train_op, feed_dict={self.states: states, self.actions: actions, self.targets: targets})


class Actor:
    def __init__(self, sess, states, learning_rate):
        self.sess = sess
        self.states = states
        with tf.compat.v1.variable_scope("actor"):
            self.action = tf.compat.v1.layers.dense(states, 1, activation=tf.nn.tanh)
        self.params = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES, scope="actor")
        self.learning_rate = learning_rate

    def add_gradients(self, action_grads):
        policy_grads = tf.gradients(ys=self.action, xs=self.params, grad_ys=action_grads)
        opt = tf.compat.v1.train.GradientDescentOptimizer(-self.learning_rate)
        self.train_op = opt.apply_gradients(zip(policy_grads, self.params))

    def choose(self, state):
        return self.sess.run(self.action, feed_dict={self.states: state[np.newaxis, :]})[0]

    def learn(self, states):
        self.sess.run(self.train_op, feed_dict={self.states: states})


states = tf.compat.v1.placeholder(tf.float32, [None, 2])
sess = tf.compat.v1.Session()
actor = Actor(sess, states, 0.01)
critic = Critic(sess, states, actor.action, 0.01)
actor.add_gradients(critic.action_grads)
sess.run(tf.compat.v1.global_variables_initializer())

if OUTPUT_GRAPH:
    tf.compat.v1.summary.FileWriter("logs/", sess.graph)

env = SwingEnv()
updates = 0
for episode in range(EPISODES):
    state = env.reset()
    total = 0.0
    for move in range(MOVES):
        action = np.clip(actor.choose(state) + np.random.normal(0.0, 0.3), -1.0, 1.0)
        next_state, reward, done, _ = env.step(action[0])
        batch = np.array([state])
        critic.learn(batch, np.array([action]), np.array([[reward]], dtype=np.float32))
        actor.learn(batch)
        updates += 1
        state = next_state
        total += reward
        if move == MOVES - 1:
            print("episode", episode, "reward", total)
            break

weights = sess.run(tf.compat.v1.trainable_variables())
checksum = float(sum(np.sum(w) + np.sum(np.abs(w)) for w in weights))
rank = os.environ.get("HOROVOD_RANK", "single")
with open(os.path.join(os.environ.get("RESULT_DIR", "."), "result-%s.json" % rank), "w") as out:
    json.dump({"checksum": checksum, "steps": updates}, out)
