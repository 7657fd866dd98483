"""MemPursuit for Mem0: reorder Mem0's own candidate pool with a residual-pursuit read policy.

Importing this package is cheap, imports nothing from Mem0 and changes no interpreter state.
The config route adds one import, which makes the ``"mempursuit"`` reranker provider available
to Mem0's ``RerankerFactory`` (now if Mem0 is already imported, else the moment it is)::

    import mempursuit_mem0.provider  # noqa: F401  (registers the provider)
    from mem0 import Memory

    config["reranker"] = {"provider": "mempursuit", "config": {"k": 10, "pool": 200}}
    memory = Memory.from_config(config)

and the code route is one line: ``memory = mempursuit_mem0.wrap(memory, k=10, pool=200)``
(or ``mempursuit_mem0.Memory`` / ``AsyncMemory`` in place of Mem0's classes).
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from .settings import MemPursuitSettings

__all__ = [
    "AsyncMemory",
    "MemPursuitSettings",
    "Memory",
    "META_KEY",
    "PROVIDER",
    "bind",
    "get_binding",
    "register",
    "register_vector_reader",
    "unbind",
    "wrap",
]

#: The reranker provider name registered in Mem0's ``RerankerFactory``.
PROVIDER = "mempursuit"
META_KEY = "mempursuit"


def _need_mem0(what: str) -> None:
    if importlib.util.find_spec("mem0") is None:
        from mempursuit_core.adapter import AdapterNotInstalledError

        raise AdapterNotInstalledError(
            f"mempursuit_mem0.{what} needs Mem0 (the 'mem0ai' package), which is not "
            'installed: pip install "mempursuit[mem0]"')


def register() -> None:
    """Add the ``"mempursuit"`` provider to Mem0's ``RerankerFactory`` now (imports Mem0;
    idempotent). ``import mempursuit_mem0.provider`` does the same without importing Mem0.
    Without Mem0: ``AdapterNotInstalledError`` with the install command."""
    _need_mem0("register()")
    from .provider import register_now

    register_now()


_LAZY = {
    "Memory": ("memory", "Memory"),
    "AsyncMemory": ("memory", "AsyncMemory"),
    "bind": ("search", "bind"),
    "unbind": ("search", "unbind"),
    "wrap": ("search", "wrap"),
    "get_binding": ("search", "get_binding"),
    "PursuitBinding": ("search", "PursuitBinding"),
    "SearchTrace": ("search", "SearchTrace"),
    "register_vector_reader": ("stores", "register_vector_reader"),
    "fetch_stored_vectors": ("stores", "fetch_stored_vectors"),
    "VectorAccessError": ("stores", "VectorAccessError"),
    "MemPursuitReranker": ("reranker", "MemPursuitReranker"),
    "MemPursuitRerankerConfig": ("reranker_config", "MemPursuitRerankerConfig"),
}

_MOVED = {"add_bulk": "mempursuit_eval.backends.mem0_bulk.add_bulk (the harness's: it copies "
                      "Mem0's private write path)"}


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if name in _MOVED:
        raise AttributeError(f"mempursuit_mem0.{name} moved to {_MOVED[name]}")
    if target is None:
        raise AttributeError(f"module 'mempursuit_mem0' has no attribute {name!r}")
    module_name, attr = target
    if module_name in ("memory", "reranker", "reranker_config"):
        _need_mem0(name)
    value = getattr(importlib.import_module(f".{module_name}", __name__), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
