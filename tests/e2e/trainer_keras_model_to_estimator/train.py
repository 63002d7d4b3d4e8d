"""Entry point, as a cloud training job runs the package."""
from trainer import task

task.main()
