"""The custom data format, kept importable here: it lives in :mod:`mempursuit_eval.datasets.custom`."""

from .datasets.custom import *  # noqa: F401,F403
from .datasets.custom import __all__  # noqa: F401
