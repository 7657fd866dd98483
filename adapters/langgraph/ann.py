"""The pool search on PostgreSQL with a beam of ``P`` (``hnsw.ef_search``, ``ivfflat.probes``).

``PostgresStore`` runs each search as its own autocommit statement, so a transaction-local
setting would not reach it. For the pool read the adapter runs the store's own search step
(``_batch_search_ops``: its SQL, filters, TTL rules, query embedding) on the store's cursor,
inside one transaction that first widens the index's beam
(:func:`mempursuit_core.ann.pgvector_read_settings`). The setting ends with that transaction;
the caller's connection is left as it was. Other stores read exactly (InMemoryStore, SQLite):
their search passes through ``batch``.
"""

from __future__ import annotations

import logging
from typing import Any

from langgraph.store.base import SearchItem, SearchOp

from mempursuit_core.adapter import apgvector_read_settings, pgvector_read_settings

__all__ = ["apool_search", "pool_search"]

logger = logging.getLogger("mempursuit_langgraph.store")


def _postgres(store: Any, name: str) -> bool:
    return any(f"{c.__module__}.{c.__qualname__}" == name for c in type(store).__mro__)


def pool_search(store: Any, op: SearchOp) -> list[SearchItem]:
    """``store.batch([op])[0]``, with the ANN beam raised to ``op.limit`` on PostgreSQL."""
    if not _postgres(store, "langgraph.store.postgres.base.PostgresStore"):
        return store.batch([op])[0]
    results: list[Any] = [None]
    with store._cursor(pipeline=True) as cur, cur.connection.transaction():
        with pgvector_read_settings(cur, op.limit, log=logger):
            store._batch_search_ops([(0, op)], results, cur)
    return results[0]


async def apool_search(store: Any, op: SearchOp) -> list[SearchItem]:
    """:func:`pool_search` through the store's async API."""
    if not _postgres(store, "langgraph.store.postgres.aio.AsyncPostgresStore"):
        return (await store.abatch([op]))[0]
    results: list[Any] = [None]
    async with store._cursor(pipeline=True) as cur, cur.connection.transaction():
        async with apgvector_read_settings(cur, op.limit, log=logger):
            await store._batch_search_ops([(0, op)], results, cur)
    return results[0]
