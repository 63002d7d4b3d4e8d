"""Writing pictures, kept apart from the training script."""
import numpy as np


def save_picture(path, picture):
    np.save(path, np.clip(picture[0], 0.0, 1.0))
