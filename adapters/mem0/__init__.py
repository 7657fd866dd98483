"""MemPursuit for Mem0: reorder Mem0's own candidate pool with a residual-pursuit read policy.

Importing this package is cheap and does not import Mem0. It makes the ``"mempursuit"``
reranker provider available to Mem0's ``RerankerFactory`` (now if Mem0 is already imported,
else the moment it is), so the config route is one block::

    import mempursuit_mem0  # noqa: F401  (registers the provider)
    from mem0 import Memory

    config["reranker"] = {"provider": "mempursuit", "config": {"k": 10, "pool": 200}}
    memory = Memory.from_config(config)

and the code route is one line: ``memory = mempursuit_mem0.wrap(memory, k=10, pool=200)``
(or ``mempursuit_mem0.Memory`` / ``AsyncMemory`` in place of Mem0's classes).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import threading
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

_FACTORY_MODULE = "mem0.utils.factory"
_PROVIDER_ENTRY_CLASS = "mempursuit_mem0.reranker.MemPursuitReranker"
_lock = threading.Lock()


def _register_into(factory_module: Any) -> None:
    from .reranker_config import MemPursuitRerankerConfig

    table = factory_module.RerankerFactory.provider_to_class
    table[PROVIDER] = (_PROVIDER_ENTRY_CLASS, MemPursuitRerankerConfig)


def register() -> None:
    """Add the ``"mempursuit"`` provider to Mem0's ``RerankerFactory`` (imports Mem0; idempotent)."""
    _register_into(importlib.import_module(_FACTORY_MODULE))


class _RegisteringLoader(importlib.abc.Loader):
    """Runs the real loader of ``mem0.utils.factory``, then adds the provider entry."""

    def __init__(self, loader: importlib.abc.Loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        _register_into(module)

    def __getattr__(self, name):  # get_source, get_code, ... for tools that inspect loaders
        return getattr(self._loader, name)


class _RegisterOnImport(importlib.abc.MetaPathFinder):
    """Finds ``mem0.utils.factory`` through the other finders and wraps its loader."""

    def find_spec(self, fullname, path, target=None):
        if fullname != _FACTORY_MODULE:
            return None
        _remove_hook()
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _RegisteringLoader(spec.loader)
        return spec


_HOOK = _RegisterOnImport()


def _remove_hook() -> None:
    with _lock:
        if _HOOK in sys.meta_path:
            sys.meta_path.remove(_HOOK)


def _install_registration() -> None:
    factory = sys.modules.get(_FACTORY_MODULE)
    if factory is not None and hasattr(factory, "RerankerFactory"):
        _register_into(factory)
        return
    with _lock:
        if _HOOK not in sys.meta_path:
            sys.meta_path.insert(0, _HOOK)


_install_registration()

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
    "Mem0Backend": ("eval_backend", "Mem0Backend"),
    "add_bulk": ("bulk", "add_bulk"),
}


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'mempursuit_mem0' has no attribute {name!r}")
    module_name, attr = target
    if module_name in ("memory", "reranker", "reranker_config", "eval_backend", "bulk"):
        from mempursuit_core.plugins import AdapterNotInstalledError

        if importlib.util.find_spec("mem0") is None:
            raise AdapterNotInstalledError(
                f"mempursuit_mem0.{name} needs Mem0 (the 'mem0ai' package), which is not "
                'installed: pip install "mempursuit[mem0]"'
            )
    value = getattr(importlib.import_module(f".{module_name}", __name__), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
