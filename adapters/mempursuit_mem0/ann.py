"""Mem0's pool read with the vector index's beam widened to ``P`` (its own read only).

Mem0 issues the search itself (``vector_store.search``), so the adapter cannot pass a search
parameter. Instead, while the adapter's pool read runs (a context variable holds ``P``; Mem0's
thread hop ``asyncio.to_thread`` carries it), two pass-through wrappers act:

* pgvector (psycopg 3): ``vector_store.connection_pool`` hands out its connections as before;
  during the pool read, the connection's transaction first raises ``hnsw.ef_search`` /
  ``ivfflat.probes`` (:func:`mempursuit_core.ann.pgvector_read_settings`), and the pool's
  commit at the end of Mem0's ``with`` block ends the setting. Other reads are untouched.
* Qdrant server: ``client.query_points`` gets ``search_params=SearchParams(hnsw_ef=P)`` during
  the pool read. Local mode (``path=`` / ``":memory:"``) searches exactly and is left alone.

Other stores (FAISS, Chroma: Mem0 builds them exact or with fixed parameters) pass through.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator

from mempursuit_core.adapter import pgvector_read_settings, qdrant_search_params

__all__ = ["full_pool"]

logger = logging.getLogger("mempursuit_mem0")
_POOL: ContextVar[int | None] = ContextVar("mempursuit_mem0_ann_pool", default=None)


class _WidePgPool:
    """A psycopg 3 ``ConnectionPool``, passed through; its connections read a beam of P while
    the adapter's pool read runs."""

    def __init__(self, inner: Any):
        self._mempursuit_inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._mempursuit_inner, name)

    @contextmanager
    def connection(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        size = _POOL.get()
        with self._mempursuit_inner.connection(*args, **kwargs) as conn:
            if size is None:
                yield conn
            elif conn.autocommit:  # SET LOCAL needs a transaction block
                with conn.transaction(), conn.cursor() as cur, \
                        pgvector_read_settings(cur, size, log=logger):
                    yield conn
            else:  # the implicit transaction the pool commits when Mem0's block ends
                with conn.cursor() as cur, pgvector_read_settings(cur, size, log=logger):
                    yield conn


class _WideQdrant:
    """A ``QdrantClient`` (server), passed through; ``query_points`` gets ``hnsw_ef = P`` during
    the adapter's pool read."""

    def __init__(self, inner: Any):
        self._mempursuit_inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._mempursuit_inner, name)

    def query_points(self, *args: Any, **kwargs: Any) -> Any:
        size = _POOL.get()
        if size is not None and kwargs.get("search_params") is None:
            rows = max(size, int(kwargs.get("limit") or 0))
            kwargs["search_params"] = qdrant_search_params(self._mempursuit_inner, rows,
                                                           local_too=True)
        return self._mempursuit_inner.query_points(*args, **kwargs)


def _class_paths(obj: Any) -> set[str]:
    return {f"{c.__module__}.{c.__qualname__}" for c in type(obj).__mro__}


def install(vector_store: Any, *, force: bool = False) -> None:
    """Put the pass-through wrapper on ``vector_store`` once (pgvector / Qdrant server).

    ``force`` wraps a local-mode Qdrant client too (it then warns that ``search_params`` has no
    effect: how the tests see the parameter reach Qdrant).
    """
    paths = _class_paths(vector_store)
    if "mem0.vector_stores.pgvector.PGVector" in paths:
        pool = getattr(vector_store, "connection_pool", None)
        if pool is not None and not isinstance(pool, _WidePgPool) and hasattr(pool, "connection"):
            vector_store.connection_pool = _WidePgPool(pool)
    elif "mem0.vector_stores.qdrant.Qdrant" in paths:
        client = getattr(vector_store, "client", None)
        if client is not None and not isinstance(client, _WideQdrant) and (
                force or qdrant_search_params(client, 1) is not None):
            vector_store.client = _WideQdrant(client)


@contextmanager
def full_pool(memory: Any, size: int) -> Iterator[None]:
    """Within the block, Mem0's vector search reads through a beam of ``size`` (see module)."""
    vector_store = getattr(memory, "vector_store", None)
    if vector_store is not None:
        install(vector_store)
    # Mem0 (1.x) asks its store for max(4 * limit, 60) semantic rows, then ranks them
    token = _POOL.set(max(4 * int(size), 60))
    try:
        yield
    finally:
        _POOL.reset(token)
