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

from mempursuit_core.adapter import AdapterNotInstalledError, adapter_package

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
    try:
        missing = importlib.util.find_spec("mem0") is None
    except (ImportError, ValueError):  # a broken or blocked install counts as missing
        missing = True
    if missing:
        raise AdapterNotInstalledError(
            f"mempursuit_mem0.{what} needs {SPEC.label}, which is not installed: {SPEC.hint}")


def register() -> None:
    """Add the ``"mempursuit"`` provider to Mem0's ``RerankerFactory`` now (imports Mem0;
    idempotent). ``import mempursuit_mem0.provider`` does the same without importing Mem0.
    Without Mem0: ``AdapterNotInstalledError`` with the install command."""
    _need_mem0("register()")
    from .provider import register_now

    register_now()


# __all__ is the package's own (above), which defines names besides the lazy ones
SPEC, _, __getattr__, __dir__, register_adapters = adapter_package(
    globals(),
    moved={"add_bulk": "mempursuit_eval.backends.mem0_bulk.add_bulk (the harness's: it copies "
                       "Mem0's private write path)"})
