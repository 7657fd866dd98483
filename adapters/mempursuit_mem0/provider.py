"""``import mempursuit_mem0.provider`` registers the ``"mempursuit"`` reranker provider in Mem0.

Mem0 looks reranker providers up in ``mem0.utils.factory.RerankerFactory.provider_to_class``.
This module adds the entry there: at once if Mem0's factory is already imported, else through a
one-shot import hook (a ``sys.meta_path`` finder that removes itself) the moment Mem0 imports
it, so that importing this module stays cheap and does not import Mem0. Nothing else in
mempursuit installs that hook.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import threading
from typing import Any

from . import PROVIDER

__all__ = ["register_now"]

_FACTORY_MODULE = "mem0.utils.factory"
_PROVIDER_ENTRY_CLASS = "mempursuit_mem0.reranker.MemPursuitReranker"
_lock = threading.Lock()


def _register_into(factory_module: Any) -> None:
    config_module = sys.modules.get(f"{__package__}.reranker_config")
    if config_module is not None and not hasattr(config_module, "MemPursuitRerankerConfig"):
        # reranker_config is being imported and imported Mem0 on its way: it registers the
        # provider itself once its class exists (see the end of reranker_config.py)
        return
    from .reranker_config import MemPursuitRerankerConfig

    table = factory_module.RerankerFactory.provider_to_class
    table[PROVIDER] = (_PROVIDER_ENTRY_CLASS, MemPursuitRerankerConfig)


def register_now() -> None:
    """Add the provider to Mem0's ``RerankerFactory`` (imports Mem0; idempotent)."""
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
