"""Evaluation stores for ``mempursuit eval --framework NAME``, one per framework adapter.

Each module here builds the framework's own store from the harness's memory units and reads
the framework's own candidate pool through its adapter. Third parties add a store through the
entry-point group ``mempursuit.eval_backends`` (``NAME = "module:factory"``); the framework it
needs is named by the adapter of the same name (``mempursuit adapters``).
"""

from __future__ import annotations

import importlib
import importlib.metadata
from typing import Any

__all__ = ["BACKENDS", "ENTRY_POINT_GROUP", "backend_factory", "list_backends"]

ENTRY_POINT_GROUP = "mempursuit.eval_backends"

BACKENDS = {
    "mem0": "mempursuit_eval.backends.mem0:Mem0Backend",
    "lightmem": "mempursuit_eval.backends.lightmem:LightMemBackend",
    "simplemem": "mempursuit_eval.backends.simplemem:SimpleMemBackend",
    "memorybank": "mempursuit_eval.backends.memorybank:MemoryBankBackend",
    "llamaindex": "mempursuit_eval.backends.llamaindex:LlamaIndexBackend",
    "langgraph": "mempursuit_eval.backends.langgraph:LangGraphBackend",
}


def list_backends() -> dict[str, str]:
    """``{framework: "module:factory"}``: the built-in stores, then the entry points'."""
    found = dict(BACKENDS)
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep.value)
    return found


def backend_factory(framework: str) -> Any:
    """The store class (or factory) registered for ``framework``.

    Raises
    ------
    ValueError
        When no store is registered under that name (the message lists those that are).
    """
    backends = list_backends()
    if framework not in backends:
        raise ValueError(f"no evaluation store for framework {framework!r}; available: plain, "
                         f"{', '.join(sorted(backends))}")
    modname, _, attr = backends[framework].partition(":")
    if not attr:
        raise ValueError(f"evaluation store {backends[framework]!r} must look like 'module:factory'")
    return getattr(importlib.import_module(modname), attr)
