"""``mempursuit_mem0.Memory`` / ``AsyncMemory``: Mem0's classes with a read policy bound.

A drop-in for ``from mem0 import Memory``: same constructor and ``from_config``, plus an
optional ``mempursuit=`` (a dict or :class:`MemPursuitSettings`). Settings come from, in order:
``mempursuit=``, the config's ``"reranker": {"provider": "mempursuit", ...}`` block, the defaults
(``k`` = the search's ``top_k``, ``pool=200``, ``policy=mempursuit_core.DEFAULT_POLICY``).
"""

from __future__ import annotations

from typing import Any, Dict, Mapping

from mem0.configs.base import MemoryConfig
from mem0.memory.main import AsyncMemory as _Mem0AsyncMemory
from mem0.memory.main import Memory as _Mem0Memory

from .search import bind, get_binding
from .settings import MemPursuitSettings

__all__ = ["Memory", "AsyncMemory"]


def _bind_after_init(memory: Any, mempursuit: MemPursuitSettings | Mapping | None) -> None:
    if mempursuit is not None or get_binding(memory) is None:
        bind(memory, mempursuit)


class _BindOnInit:
    """Constructor and ``from_config`` of Mem0's memory classes, plus the binding."""

    def __init__(self, config: MemoryConfig = None, *, mempursuit: MemPursuitSettings | Mapping | None = None):
        super().__init__(MemoryConfig() if config is None else config)
        _bind_after_init(self, mempursuit)

    @classmethod
    def from_config(cls, config_dict: Dict[str, Any], *, mempursuit: MemPursuitSettings | Mapping | None = None):
        # Mem0's own from_config (its validation and config processing), then the binding
        memory = super().from_config(config_dict)
        if mempursuit is not None:
            bind(memory, mempursuit)
        return memory


class Memory(_BindOnInit, _Mem0Memory):
    """``mem0.Memory`` whose searches reorder Mem0's pool with a MemPursuit policy."""


class AsyncMemory(_BindOnInit, _Mem0AsyncMemory):
    """``mem0.AsyncMemory`` whose searches reorder Mem0's pool with a MemPursuit policy."""
