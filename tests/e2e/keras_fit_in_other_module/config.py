"""Hyper-parameters, kept in one place as a plain dataclass."""
from dataclasses import dataclass


@dataclass
class TrainConfig:
    num_features: int = 10
    num_classes: int = 4
    hidden_units: tuple = (48, 24)
    batch_size: int = 32
    epochs: int = 3
    steps_per_epoch: int = 10
    validation_steps: int = 3
    learning_rate: float = 2e-3
    output_dir: str = "artifacts"
