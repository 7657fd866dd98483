"""MemPursuit for Graphiti (the graph memory behind Zep): a read policy on fact and entity search.

The one line, after building the ``Graphiti`` instance::

    from mempursuit_graphiti import MemPursuitGraphiti

    graphiti = MemPursuitGraphiti(graphiti)

``graphiti.search(...)`` and ``graphiti.search_(...)`` then return what the read policy picks
from Graphiti's own fused top ``P``; every other attribute and method is the wrapped instance's.
Importing this package imports nothing from Graphiti.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

__all__ = ["EDGE_SIGNALS", "EmptyPoolError", "GraphitiPool", "GraphitiReadError", "MemPursuitGraphiti",
           "POOL_RERANKERS"]

_LAZY = {name: ("search", name) for name in __all__}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent missing, or blocked in sys.modules
        return False


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'mempursuit_graphiti' has no attribute {name!r}")
    if not _installed("graphiti_core"):
        from mempursuit_core.adapter import AdapterNotInstalledError

        raise AdapterNotInstalledError(
            f"mempursuit_graphiti.{name} needs Graphiti, which is not installed: "
            'pip install "mempursuit[graphiti]"')
    module_name, attr = target
    value = getattr(importlib.import_module(f".{module_name}", __name__), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
