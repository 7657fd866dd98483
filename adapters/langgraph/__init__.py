"""MemPursuit for LangGraph (and LangMem): a read policy on the LangGraph memory store.

The one line, before ``builder.compile(store=store)`` or ``create_search_memory_tool(...,
store=store)``::

    from mempursuit_langgraph import MemPursuitStore

    store = MemPursuitStore(store)

Every store operation passes through; a search with a ``query`` returns what the read policy
picks from the store's own top ``P``. Importing this package imports nothing from LangGraph.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

__all__ = [
    "LangGraphPool",
    "MemPursuitStore",
    "QueryCapture",
    "SIGNAL_FIELDS",
    "VectorAccessError",
    "register_vector_reader",
    "supported_stores",
]

_LAZY = {
    "MemPursuitStore": ("store", "MemPursuitStore"),
    "LangGraphPool": ("store", "LangGraphPool"),
    "QueryCapture": ("store", "QueryCapture"),
    "SIGNAL_FIELDS": ("store", "SIGNAL_FIELDS"),
    "VectorAccessError": ("readers", "VectorAccessError"),
    "register_vector_reader": ("readers", "register_vector_reader"),
    "supported_stores": ("readers", "supported_stores"),
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent missing, or blocked in sys.modules
        return False


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'mempursuit_langgraph' has no attribute {name!r}")
    module_name, attr = target
    if module_name == "store" and not _installed("langgraph.store"):
        from mempursuit_core.adapter import AdapterNotInstalledError

        raise AdapterNotInstalledError(
            f"mempursuit_langgraph.{name} needs LangGraph, which is not installed: "
            'pip install "mempursuit[langgraph]"')
    value = getattr(importlib.import_module(f".{module_name}", __name__), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
