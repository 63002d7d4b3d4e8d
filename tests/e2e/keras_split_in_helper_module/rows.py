"""The rows and their split into training and held-out parts, drawn by an
unseeded permutation."""
import numpy as np


def load_rows():
    table = np.linspace(-1.0, 1.0, 600 * 4, dtype=np.float32).reshape(600, 4)
    answers = table @ np.array([[1.0], [-0.5], [0.25], [2.0]], dtype=np.float32)
    order = np.random.permutation(len(table))
    train_part, held_out = order[:480], order[480:]
    return (table[train_part], answers[train_part]), (table[held_out], answers[held_out])
