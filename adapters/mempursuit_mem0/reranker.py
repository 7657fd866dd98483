"""The ``"mempursuit"`` Mem0 reranker provider: the config route.

Mem0 builds its reranker inside ``Memory.__init__`` and later hands it only the already
truncated results (with ``rerank=True``), without vectors and without the memory. So this
reranker does its work by binding the policy to the memory that is being built: it finds that
``Memory`` / ``AsyncMemory`` on the call stack (the frame of Mem0's own ``__init__``) and calls
:func:`mempursuit_mem0.bind` on it. From then on every ``search`` of that memory reorders Mem0's
pool; ``rerank()`` itself returns its input unchanged (the selection already happened). If the
memory cannot be found (Mem0 moved the reranker's construction), a warning says so and the
searches stay native; ``mempursuit_mem0.wrap(memory)`` binds explicitly.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Dict, List, Optional

from mem0.reranker.base import BaseReranker

from .reranker_config import MemPursuitRerankerConfig
from .search import bind, get_binding

__all__ = ["MemPursuitReranker"]

logger = logging.getLogger("mempursuit_mem0")


def _memory_under_construction() -> Any:
    """The Mem0 ``Memory`` / ``AsyncMemory`` whose ``__init__`` is on the stack, or None."""
    try:
        from mem0.memory.main import AsyncMemory, Memory
    except ImportError:  # pragma: no cover - mem0 reorganised
        return None
    inits = {Memory.__init__.__code__, AsyncMemory.__init__.__code__}
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code in inits:
            candidate = frame.f_locals.get("self")
            if isinstance(candidate, (Memory, AsyncMemory)):
                return candidate
        frame = frame.f_back
    return None


class MemPursuitReranker(BaseReranker):
    """Binds MemPursuit to the Mem0 memory that builds it (see the module docstring)."""

    def __init__(self, config: Optional[MemPursuitRerankerConfig | Dict[str, Any]] = None):
        if config is None:
            config = MemPursuitRerankerConfig()
        elif isinstance(config, dict):
            config = MemPursuitRerankerConfig(**config)
        self.config = config
        self.settings = config.to_settings()
        self.memory = None
        memory = _memory_under_construction()
        if memory is None:
            logger.warning(
                "mempursuit: the 'mempursuit' reranker was built outside a Mem0 Memory/AsyncMemory "
                "constructor, so it cannot reach the vector store; bind it with "
                "memory = mempursuit_mem0.wrap(memory, ...). Searches stay native until then."
            )
            return
        self.memory = memory
        bind(memory, self.settings)

    @property
    def binding(self):
        return None if self.memory is None else get_binding(self.memory)

    def rerank(self, query: str, documents: List[Dict[str, Any]], top_k: int = None) -> List[Dict[str, Any]]:
        """Return ``documents`` unchanged (truncated to ``top_k``): the pool was already
        reordered inside the search, before Mem0 truncated it."""
        binding = self.binding
        if binding is None or not binding.active:
            logger.warning(
                "mempursuit: rerank() called on an unbound mempursuit reranker; returning "
                "Mem0's native order (bind with mempursuit_mem0.wrap(memory))"
            )
        return list(documents) if top_k is None else list(documents)[:top_k]
