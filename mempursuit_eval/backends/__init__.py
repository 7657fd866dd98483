"""Evaluation stores for ``mempursuit eval --framework NAME``, one per framework adapter.

Each module here builds the framework's own store from the harness's memory units and reads
the framework's own candidate pool through its adapter. Stores are registered through the
plugin host's ``register_eval_backends`` hook (:mod:`mempursuit_core.hookspecs`): the built-in
ones by the harness's plugin (:mod:`mempursuit_eval.plugin`), a third party's by its own plugin
of the entry-point group ``mempursuit``, exactly like a selector or an adapter. The framework a
store needs is named by the adapter of the same name (``mempursuit adapters``), if there is one.

The entry-point group ``mempursuit.eval_backends`` (``NAME = "module:factory"``) still works for
this release, with a ``DeprecationWarning``; it goes in the next one.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import warnings
from typing import Any

__all__ = ["ENTRY_POINT_GROUP", "backend_factory", "list_backends"]

#: Deprecated: register through the ``register_eval_backends`` hook instead.
ENTRY_POINT_GROUP = "mempursuit.eval_backends"


def list_backends() -> dict[str, Any]:
    """``{framework: factory or "module:factory"}``: every store registered through the
    ``register_eval_backends`` hook (built-ins first), then those of the deprecated entry-point
    group (which warns)."""
    from mempursuit_core.plugins import is_allowed, list_eval_backends

    found = {name: factory for name, (factory, _) in list_eval_backends().items()}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in found or not is_allowed(ep.name):
            continue
        warnings.warn(
            f"the evaluation store {ep.name!r} comes from the entry-point group "
            f"{ENTRY_POINT_GROUP!r}, which goes in the next release: register it through the "
            "register_eval_backends hook of a 'mempursuit' plugin (CONTRIBUTING.md)",
            DeprecationWarning, stacklevel=2)
        found[ep.name] = ep.value
    return found


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


def __getattr__(name: str) -> Any:
    if name == "BACKENDS":  # the old table; a store is now registered through the hook
        warnings.warn("mempursuit_eval.backends.BACKENDS goes in the next release: read "
                      "list_backends(), register through the register_eval_backends hook",
                      DeprecationWarning, stacklevel=2)
        return list_backends()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
