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

import importlib.util

from mempursuit_core.adapter import AdapterNotInstalledError, install_line, lazy_exports

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
_MEM0 = "Mem0 (the 'mem0ai' package)"


def _need_mem0(what: str) -> None:
    try:
        missing = importlib.util.find_spec("mem0") is None
    except (ImportError, ValueError):  # a broken or blocked install counts as missing
        missing = True
    if missing:
        raise AdapterNotInstalledError(
            f"mempursuit_mem0.{what} needs {_MEM0}, which is not installed: "
            + install_line("mem0"))


def register() -> None:
    """Add the ``"mempursuit"`` provider to Mem0's ``RerankerFactory`` now (imports Mem0;
    idempotent). ``import mempursuit_mem0.provider`` does the same without importing Mem0.
    Without Mem0: ``AdapterNotInstalledError`` with the install command."""
    _need_mem0("register()")
    from .provider import register_now

    register_now()


__getattr__, __dir__ = lazy_exports(
    globals(),
    {"Memory": "memory", "AsyncMemory": "memory", "bind": "search", "unbind": "search",
     "wrap": "search", "get_binding": "search", "PursuitBinding": "search",
     "SearchTrace": "search", "register_vector_reader": "stores",
     "fetch_stored_vectors": "stores", "VectorAccessError": "stores",
     "MemPursuitReranker": "reranker", "MemPursuitRerankerConfig": "reranker_config"},
    needs={"memory": "mem0", "reranker": "mem0", "reranker_config": "mem0"},
    framework=_MEM0, extra="mem0",
    moved={"add_bulk": "mempursuit_eval.backends.mem0_bulk.add_bulk (the harness's: it copies "
                       "Mem0's private write path)"})
