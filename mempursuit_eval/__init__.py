"""Paired with/without evaluation of read policies (``mempursuit eval``).

>>> from mempursuit_eval import run_eval
>>> summary = run_eval(dataset="locomo", k=(10, 20), policies=("native", "centered-fusion"),
...                    out="runs/locomo")                                    # doctest: +SKIP
>>> summary["results"]["centered-fusion"]["10"]["overall"]["complete_coverage"]  # doctest: +SKIP

See :mod:`.runner` for the procedure, :mod:`.stages` for its stages, :mod:`.datasets` for the loaders, :mod:`.store` for the
built-in store, :mod:`.metrics` for the metrics and paired statistics and :mod:`.qa` for the
optional end-to-end QA.
"""

from .base import Embedder, MemoryUnit, Pool, StoreBackend
from .datasets import Dataset, DatasetNotFoundError, Question, load_dataset, select_questions
from .runner import EvalConfig, QAConfig, build_backend, run_eval
from .store import PlainStore, PoolSignals

__all__ = [
    "Dataset",
    "DatasetNotFoundError",
    "Embedder",
    "EvalConfig",
    "QAConfig",
    "MemoryUnit",
    "PlainStore",
    "Pool",
    "PoolSignals",
    "Question",
    "StoreBackend",
    "build_backend",
    "load_dataset",
    "run_eval",
    "select_questions",
]
