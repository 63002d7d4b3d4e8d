"""A tiny MNIST-shaped classifier trained on one GPU with Keras."""

__version__ = "0.1.0"
