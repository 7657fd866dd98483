"""Read the **stored** vectors of LangGraph store items back from the store, by namespace and key.

LangGraph's ``BaseStore.search`` returns items and scores, never vectors. Each store keeps them
in its own place, so one small reader per store class fetches them, in one query per search:

* ``InMemoryStore``: its index, ``store._vectors[namespace][key][field]``.
* ``SqliteStore`` / ``AsyncSqliteStore``: the ``store_vectors`` table (sqlite-vec float32 blobs),
  by prefix (the dot-joined namespace), key and field.
* ``PostgresStore`` / ``AsyncPostgresStore``: pgvector's ``store_vectors`` table, the same
  columns (pgvector's binary send format, ``vector`` or ``halfvec``). The adapter's own pool
  search returns them with the pool (:mod:`.ann`), so these two run only for a pool read
  another way.

A reader returns every stored field vector of each item (an item indexed on several fields has
several); the adapter keeps, per item, the field vector closest to the query, the one the
store's max-pooled score came from. Readers are looked up through the store's class and its
base classes, so a subclass of a supported store works; :func:`register_vector_reader` adds a
reader (sync, async, or both) for another store, in the core's one registry of readers
(:func:`mempursuit_core.adapter.register_vector_reader`). Nothing here imports LangGraph.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Sequence

import numpy as np

from mempursuit_core import adapter as core

__all__ = [
    "VectorAccessError",
    "VectorReader",
    "reader_for",
    "register_vector_reader",
    "supported_stores",
]

Key = tuple[tuple[str, ...], str]
#: ``reader(store, keys) -> {(namespace, key): [vector, ...]}`` (every field vector of the item)
Reader = Callable[[Any, Sequence[Key]], "dict[Key, list[Any]]"]
AsyncReader = Callable[[Any, Sequence[Key]], "Awaitable[dict[Key, list[Any]]]"]


class VectorAccessError(RuntimeError):
    """The pool's stored vectors could not be read (no reader, a client error, a bad vector)."""


@dataclass(frozen=True)
class VectorReader:
    """The readers registered for one store class (either may be None)."""

    read: Reader | None = None
    aread: AsyncReader | None = None

    def __call__(self, store: Any, keys: Sequence[Key]) -> dict[Key, list[Any]]:
        if self.read is None:
            raise VectorAccessError(f"{type(store).__name__} has only an async vector reader; "
                                    "use the store's async API (asearch)")
        return self.read(store, keys)

    async def acall(self, store: Any, keys: Sequence[Key]) -> dict[Key, list[Any]]:
        if self.aread is not None:
            return await self.aread(store, keys)
        return await asyncio.get_running_loop().run_in_executor(None, self.__call__, store, keys)


def register_vector_reader(class_path: str, read: Reader | None = None, *,
                           aread: AsyncReader | None = None) -> None:
    """Register how to read stored vectors from a store class.

    Parameters
    ----------
    class_path : str
        ``"module.ClassName"`` of a ``BaseStore`` subclass; its subclasses match too.
    read : callable, optional
        ``read(store, keys) -> {(namespace, key): [vector, ...]}``; ``keys`` is a list of
        ``(namespace tuple, key)``; a key absent from the answer counts as an item without a
        stored vector.
    aread : callable, optional
        The same as a coroutine function, for the store's async API (without it, ``read`` runs
        in the default executor).
    """
    if read is None and aread is None:
        raise ValueError("register_vector_reader needs read=, aread= or both")
    core.register_vector_reader(class_path, VectorReader(read, aread), framework="langgraph")


def supported_stores() -> list[str]:
    """Class paths of the stores whose stored vectors can be read."""
    return core.supported_stores("langgraph")


def reader_for(store: Any) -> VectorReader | None:
    """The reader registered for ``store``'s class or a base class, or None."""
    return core.vector_reader_for(store, "langgraph")


# ----------------------------------------------------------------------------- InMemoryStore


def _read_memory(store: Any, keys: Sequence[Key]) -> dict[Key, list[Any]]:
    vectors = store._vectors
    found: dict[Key, list[Any]] = {}
    for ns, key in keys:
        by_ns = vectors.get(ns)  # .get: the index is a defaultdict, don't grow it
        fields = by_ns.get(key) if by_ns is not None else None
        if fields:
            found[(ns, key)] = list(fields.values())
    return found


# ----------------------------------------------------------------------------- SQLite


def _prefix(ns: tuple[str, ...]) -> str:
    return ".".join(ns)  # LangGraph's _namespace_to_text (SQLite and PostgreSQL alike)


def _grouped(keys: Sequence[Key], chunk: int = 500) -> list[tuple[str, list[str]]]:
    by_prefix: dict[str, list[str]] = {}
    for ns, key in keys:
        by_prefix.setdefault(_prefix(ns), []).append(key)
    return [(p, ks[i:i + chunk]) for p, ks in by_prefix.items() for i in range(0, len(ks), chunk)]


def _sqlite_sql(n: int) -> str:
    return ("SELECT prefix, key, embedding FROM store_vectors WHERE prefix = ? AND key IN ("
            + ",".join("?" * n) + ")")


def _collect(keys: Sequence[Key], rows: list[tuple[str, str, Any]],
             decode: Callable[[Any], Any]) -> dict[Key, list[Any]]:
    wanted = {(_prefix(ns), key): (ns, key) for ns, key in keys}
    found: dict[Key, list[Any]] = {}
    for prefix, key, emb in rows:
        k = wanted.get((prefix, key))
        if k is not None and emb is not None:
            found.setdefault(k, []).append(decode(emb))
    return found


def _f32_blob(blob: Any) -> np.ndarray:
    return np.frombuffer(bytes(blob), dtype="<f4")  # sqlite_vec.serialize_float32


def _read_sqlite(store: Any, keys: Sequence[Key]) -> dict[Key, list[Any]]:
    rows: list[tuple[str, str, Any]] = []
    with store._cursor(transaction=False) as cur:
        for prefix, ks in _grouped(keys):
            cur.execute(_sqlite_sql(len(ks)), (prefix, *ks))
            rows.extend(cur.fetchall())
    return _collect(keys, rows, _f32_blob)


async def _aread_sqlite(store: Any, keys: Sequence[Key]) -> dict[Key, list[Any]]:
    rows: list[tuple[str, str, Any]] = []
    async with store._cursor(transaction=False) as cur:
        for prefix, ks in _grouped(keys):
            await cur.execute(_sqlite_sql(len(ks)), (prefix, *ks))
            rows.extend(await cur.fetchall())
    return _collect(keys, rows, _f32_blob)


# ----------------------------------------------------------------------------- PostgreSQL

_PG_SQL = ("SELECT sv.prefix, sv.key, {send}(sv.embedding) AS embedding FROM store_vectors sv "
           "JOIN unnest(%s::text[], %s::text[]) AS k(prefix, key) "
           "ON sv.prefix = k.prefix AND sv.key = k.key")


def _pg_query(store: Any, keys: Sequence[Key]) -> tuple[str, tuple, Callable[[Any], Any]]:
    """The SQL, its parameters and the decoder for the store's vector type.

    pgvector's binary send format is ``int16 dim, int16 unused, dim big-endian floats``
    (float4 for ``vector``, float2 for ``halfvec``): about 5x faster to read than ``::real[]``.
    """
    kind = ((getattr(store, "index_config", None) or {}).get("ann_index_config") or {}).get(
        "vector_type", "vector")
    if kind not in ("vector", "halfvec"):
        raise VectorAccessError(f"pgvector {kind!r} vectors are not read (vector, halfvec are)")
    width, dtype = (4, ">f4") if kind == "vector" else (2, ">f2")

    def decode(buf: Any) -> np.ndarray:
        raw = bytes(buf)
        dim = int.from_bytes(raw[:2], "big")
        if len(raw) != 4 + width * dim:
            raise VectorAccessError(f"unexpected pgvector {kind} value of {len(raw)} bytes")
        return np.frombuffer(raw, dtype=dtype, count=dim, offset=4).astype(np.float32)

    params = ([_prefix(ns) for ns, _ in keys], [key for _, key in keys])
    return _PG_SQL.format(send=f"{kind}_send"), params, decode


def _pg_rows(rows: list[Any]) -> list[tuple[str, str, Any]]:
    return [(r["prefix"], r["key"], r["embedding"]) for r in rows]  # the store's dict rows


def _read_postgres(store: Any, keys: Sequence[Key]) -> dict[Key, list[Any]]:
    sql, params, decode = _pg_query(store, keys)
    with store._cursor(pipeline=True) as cur:  # the store's lock, as its own batch takes
        cur.execute(sql, params, binary=True)
        rows = _pg_rows(cur.fetchall())
    return _collect(keys, rows, decode)


async def _aread_postgres(store: Any, keys: Sequence[Key]) -> dict[Key, list[Any]]:
    sql, params, decode = _pg_query(store, keys)
    async with store._cursor(pipeline=True) as cur:
        await cur.execute(sql, params, binary=True)
        rows = _pg_rows(await cur.fetchall())
    return _collect(keys, rows, decode)


register_vector_reader("langgraph.store.memory.InMemoryStore", _read_memory)
register_vector_reader("langgraph.store.sqlite.base.SqliteStore", _read_sqlite)
register_vector_reader("langgraph.store.sqlite.aio.AsyncSqliteStore", aread=_aread_sqlite)
register_vector_reader("langgraph.store.postgres.base.PostgresStore", _read_postgres)
register_vector_reader("langgraph.store.postgres.aio.AsyncPostgresStore", aread=_aread_postgres)
#: the PostgreSQL readers above; while they are the store's, the pool search itself returns the
#: vectors (:mod:`.ann`) and they are not called
BUILTIN_POSTGRES = (VectorReader(_read_postgres, None), VectorReader(None, _aread_postgres))
