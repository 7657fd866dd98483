"""Evaluation stores for ``mempursuit eval --framework NAME``, one per framework adapter.

Each module here builds the framework's own store from the harness's memory units and reads
the framework's own candidate pool through its adapter. Stores are registered through the
plugin host's ``register_eval_backends`` hook, which the harness declares
(:mod:`mempursuit_eval.hookspecs`): the built-in
ones by the harness's plugin (:mod:`mempursuit_eval.plugin`), a third party's by its own plugin
of the entry-point group ``mempursuit``, exactly like a selector or an adapter. The framework a
store needs is named by the adapter of the same name (``mempursuit adapters``), if there is one.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["backend_factory", "list_backends", "list_eval_backends"]


def list_eval_backends() -> dict[str, tuple[Any, str]]:
    """Registered evaluation stores by name: ``{name: (factory or "module:attr", description)}``
    (every plugin's ``register_eval_backends``, built-ins first)."""
    from mempursuit_core.plugins import collect

    from ..hookspecs import add_hookspecs

    add_hookspecs()
    return {name: value for name, (_, value) in collect("register_eval_backends").items()}


def list_backends() -> dict[str, Any]:
    """``{framework: factory or "module:factory"}``: every store registered through the
    ``register_eval_backends`` hook (built-ins first)."""
    return {name: factory for name, (factory, _) in list_eval_backends().items()}


def backend_factory(framework: str) -> Any:
    """The store class (or factory) registered for ``framework``; a ``"module:factory"`` string
    is imported here.

    Raises
    ------
    ValueError
        When no store is registered under that name (the message lists those that are).
    """
    backends = list_backends()
    if framework not in backends:
        raise ValueError(f"no evaluation store for framework {framework!r}; available: "
                         f"{', '.join(sorted(backends))}")
    factory = backends[framework]
    if not isinstance(factory, str):
        return factory
    modname, _, attr = factory.partition(":")
    if not attr:
        raise ValueError(f"evaluation store {factory!r} must look like 'module:factory'")
    return getattr(importlib.import_module(modname), attr)
