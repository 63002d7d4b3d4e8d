"""Helpers of the package, re-exported at its top."""
from util.files import *
