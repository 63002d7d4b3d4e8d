"""Entry point, as a cloud training job runs the package: python -m trainer.task."""
from trainer import task

task.main()
