"""MemPursuit adapter for SimpleMem (aiming-lab/SimpleMem).

``system.hybrid_retriever = MemPursuitRetriever(system.hybrid_retriever, k=10)`` makes
SimpleMem answer from the ``k`` entries MemPursuit selects from its retrieval pool (its stored
LanceDB vectors, its own query embedder). Importing this package does not import SimpleMem or
lancedb.
"""

from .adapter import (
    DEFAULT_POOL_SIZE,
    MemPursuitRetriever,
    SimpleMemPool,
    SimpleMemSelection,
    enable,
    ensure_fts_index,
    fetch_vectors,
    has_fts_index,
    keyword_scores,
    lance_table,
)

__all__ = [
    "DEFAULT_POOL_SIZE",
    "MemPursuitRetriever",
    "SimpleMemPool",
    "SimpleMemSelection",
    "enable",
    "ensure_fts_index",
    "fetch_vectors",
    "has_fts_index",
    "keyword_scores",
    "lance_table",
]
