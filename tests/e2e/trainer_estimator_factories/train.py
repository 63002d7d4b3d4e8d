"""Entry point, as a cloud training job runs the package."""
import inspect

# TensorFlow 2.12's canned Estimators look up their default optimizer with
# inspect.getargspec, which Python 3.11 removed: the job's own shim.
if not hasattr(inspect, "getargspec"):
    inspect.getargspec = inspect.getfullargspec

from trainer import task  # noqa: E402

task.main()
