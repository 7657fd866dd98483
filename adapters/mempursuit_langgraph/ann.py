"""The pool search on PostgreSQL: a beam of ``P`` and the stored vectors, in one round trip.

``PostgresStore`` runs each search as its own autocommit statement, so a transaction-local
setting would not reach it. For the pool read the adapter runs the store's own search step
(``_batch_search_ops``: its SQL, filters, TTL rules, query embedding) on the store's cursor,
inside one transaction that first widens the index's beam (``hnsw.ef_search`` >= P,
``ivfflat.probes`` >= P / 100, never lowered; :func:`mempursuit_core.ann.pgvector_targets`).
The store's own search statement also returns the vector of the row it scored (carried through
its ``DISTINCT ON``, in pgvector's binary send format; where its SQL is not the shape expected, a
subquery reads the item's vectors by key), so the pool and its vectors arrive together; the
query embedding goes out as binary ``float8[]`` and the values are read by orjson where it
agrees with ``json.loads``. Every item, value and score is the store's own. On a pipelined
connection (the store's default) the transaction, the setting and the search go out in one
network round trip. The setting ends with that transaction; inside a caller's own transaction
it is put back before the read returns, so the caller's connection is left as it was. Other
stores read exactly (InMemoryStore, SQLite): their search passes through ``batch``.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from typing import Any

import numpy as np
from langgraph.store.base import SearchItem, SearchOp

from mempursuit_core.adapter import pgvector_targets

__all__ = ["apool_search", "pool_search"]

logger = logging.getLogger("mempursuit_langgraph.store")

_PG = "langgraph.store.postgres.base.PostgresStore"
_APG = "langgraph.store.postgres.aio.AsyncPostgresStore"

# One statement reads the session's values and raises them (never lowers): nothing to wait for
# before the search is sent. OFFSET 0 keeps the read of the old values before the set_config.
_INT = "CASE WHEN {v} ~ '^\\s*[0-9]+\\s*$' THEN ({v})::int ELSE {d} END"
_RAISE_SQL = (
    "SELECT old.ef, old.probes, "
    "set_config('hnsw.ef_search', greatest(" + _INT.format(v="old.ef", d=40) + ", %s)::text, true), "
    "set_config('ivfflat.probes', greatest(" + _INT.format(v="old.probes", d=1)
    + ", %s)::text, true) "
    "FROM (SELECT current_setting('hnsw.ef_search', true) AS ef, "
    "current_setting('ivfflat.probes', true) AS probes OFFSET 0) old")
_RESTORE_SQL = ("SELECT set_config('hnsw.ef_search', %s, true), "
                "set_config('ivfflat.probes', %s, true)")
# The store's search carrying the vector of the row it scored: three columns added to its own
# statement (the scored row's embedding, kept through its DISTINCT ON, sent in binary). Where
# its text is not the one these patterns expect, _WITH_VECTORS reads them by key instead.
_CARRY = (
    (re.compile(r"(SELECT store\.prefix, store\.key, store\.value, store\.created_at, "
                r"store\.updated_at,)"), r"\1 sv.embedding AS mp_vector,"),
    (re.compile(r"(scored\.updated_at,)( scored\.neg_score)"), r"\1 scored.mp_vector,\2"),
    (re.compile(r"(SELECT uniq\.prefix, uniq\.key, uniq\.value, uniq\.created_at, "
                r"uniq\.updated_at,)"), r"\1 {send}(uniq.mp_vector) AS mp_vectors,"),
)
# the store's search as a subquery, each row with every stored field vector of its item
_WITH_VECTORS = ("SELECT mp_pool.*, (SELECT array_agg({send}(mp_sv.embedding)) "
                 "FROM store_vectors mp_sv WHERE mp_sv.prefix = mp_pool.prefix "
                 "AND mp_sv.key = mp_pool.key) AS mp_vectors FROM ({sql}) mp_pool")

Key = tuple[tuple[str, ...], str]


def _is(store: Any, name: str) -> bool:
    return any(f"{c.__module__}.{c.__qualname__}" == name for c in type(store).__mro__)


def _vector_kind(store: Any) -> tuple[str, str]:
    kind = ((getattr(store, "index_config", None) or {}).get("ann_index_config") or {}).get(
        "vector_type", "vector")
    if kind not in ("vector", "halfvec"):
        from .readers import VectorAccessError
        raise VectorAccessError(f"pgvector {kind!r} vectors are not read (vector, halfvec are)")
    return kind, (">f4" if kind == "vector" else ">f2")


def with_vectors(sql: str, send: str) -> str:
    """The store's search statement ``sql``, each row also returning ``mp_vectors``: the
    vector the store scored it by (or, for a statement of another shape, all of its item's
    field vectors), in pgvector's binary send format."""
    if "search_results" not in sql:  # no TTL-refresh wrapper around the search
        out = sql
        for pattern, repl in _CARRY:
            out, n = pattern.subn(repl.replace("{send}", send), out)
            if n != 1:
                break
        else:
            return out
    return _WITH_VECTORS.format(send=send, sql=sql)


def decode_vectors(bufs: list[bytes], dtype: str) -> np.ndarray:
    """pgvector binary values (``int16 dim, int16 0, dim big-endian floats``), all of one dim.

    Returns ``(n, dim)`` float32, decoded in one NumPy call.
    """
    from .readers import VectorAccessError

    width = np.dtype(dtype).itemsize
    size = len(bufs[0])
    dim = int.from_bytes(bufs[0][:2], "big")
    if size != 4 + width * dim or any(len(b) != size for b in bufs):
        raise VectorAccessError("the pool's stored vectors differ in dimension or are malformed")
    raw = np.frombuffer(b"".join(bufs), dtype=np.uint8).reshape(len(bufs), size)
    return raw[:, 4:].copy().view(dtype).astype(np.float32)


_DIGITS = bytes(48 if 48 <= i <= 57 else 32 for i in range(256))  # each digit -> "0", else " "


def _json_loads(data: bytes) -> Any:
    """``json.loads`` (psycopg's default for jsonb), by orjson where the two agree.

    orjson is several times faster but reads an integer past 64 bits as a float: a value with a
    run of 19 digits or more is read by ``json.loads``, as is what orjson refuses (1e400).
    """
    import orjson

    if b"0" * 19 not in data.translate(_DIGITS):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data)


class _Float8s(list):
    """A list of floats (the query embedding) sent as binary ``float8[]``.

    The store's ``%s`` sends it as text, the same ``float8[]`` values (Python's float repr reads
    back exactly), about seven times slower to build: some 2 ms of a read at d = 384.
    """


@functools.cache
def _float8s_dumper() -> type:
    from psycopg.adapt import Dumper
    from psycopg.pq import Format

    class Float8sDumper(Dumper):
        format = Format.BINARY
        oid = 1022  # float8[]

        def dump(self, obj: list) -> bytes:
            # one dimension, no NULLs, float8 elements; each element: length 8, big-endian value
            body = np.empty(len(obj), dtype=[("size", ">i4"), ("value", ">f8")])
            body["size"], body["value"] = 8, obj
            return np.array([1, 0, 701, len(obj), 1], ">i4").tobytes() + body.tobytes()

    return Float8sDumper


def _binary_vectors(params: Any) -> Any:
    """``params`` with each list of floats as :class:`_Float8s`."""
    if not isinstance(params, (list, tuple)):
        return params
    return [_Float8s(p) if type(p) is list and p and all(type(x) is float for x in p) else p
            for p in params]


class _VectorsCursor:
    """The store's cursor; its search statement also returns the items' stored vectors.

    ``_batch_search_ops`` calls ``execute(sql, params)`` then ``fetchall()``; the rows it gets
    are the store's own, without the added column, which is kept in :attr:`vectors`.
    """

    def __init__(self, cur: Any, send: str):
        from psycopg.types.json import set_json_loads

        self._cur, self._send = cur, send
        self.vectors: dict[tuple[str, str], list[bytes]] = {}
        set_json_loads(_json_loads, cur)  # P values to decode: this cursor only
        cur.adapters.register_dumper(_Float8s, _float8s_dumper())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cur, name)

    def execute(self, query: str, params: Any = None, **kw: Any) -> Any:
        self._cur.execute(with_vectors(query, self._send),
                          _binary_vectors(params), binary=True, **kw)
        return self

    def fetchall(self) -> list[Any]:
        return self._split(self._cur.fetchall())

    def _split(self, rows: list[Any]) -> list[Any]:
        for row in rows:
            bufs = row.pop("mp_vectors")
            if isinstance(bufs, (bytes, bytearray, memoryview)):
                self.vectors[(row["prefix"], row["key"])] = [bufs]
            elif bufs:
                self.vectors[(row["prefix"], row["key"])] = [b for b in bufs if b is not None]
        return rows


class _AsyncVectorsCursor(_VectorsCursor):
    async def execute(self, query: str, params: Any = None, **kw: Any) -> Any:  # type: ignore[override]
        await self._cur.execute(with_vectors(query, self._send),
                                _binary_vectors(params), binary=True, **kw)
        return self

    async def fetchall(self) -> list[Any]:  # type: ignore[override]
        return self._split(await self._cur.fetchall())


def _stored(items: list[SearchItem], found: dict[tuple[str, str], list[bytes]],
            dtype: str) -> dict[Key, list[Any]]:
    """``{(namespace, key): [vector, ...]}`` for the items whose rows carried vectors."""
    keyed = [((i.namespace, i.key), found.get((".".join(i.namespace), i.key))) for i in items]
    keyed = [(k, bufs) for k, bufs in keyed if bufs]
    if not keyed:
        return {}
    if all(len(bufs) == 1 for _, bufs in keyed):  # one indexed field: one decode for the pool
        rows = decode_vectors([bufs[0] for _, bufs in keyed], dtype)
        return {k: [row] for (k, _), row in zip(keyed, rows)}
    return {k: list(decode_vectors(bufs, dtype)) for k, bufs in keyed}


def _targets(pool: int) -> tuple[int, int]:
    """The floors a read of ``pool`` rows raises the session's values to."""
    ef, probes, _ = pgvector_targets(pool, 0, 0)
    return ef, probes


def _after(old: Any, pool: int, nested: bool) -> tuple[str, str] | None:
    """Warn at pgvector's cap; the values to put back when the read joined a transaction."""
    ef, probes = (old["ef"], old["probes"]) if isinstance(old, dict) else (old[0], old[1])
    warning = pgvector_targets(pool, ef, probes)[2]
    if warning:
        _warn_cap(pool, warning)
    if not nested:
        return None  # our own transaction: its end discards the setting
    return str(ef or 40), str(probes or 1)


_warned: set[int] = set()


def _warn_cap(pool: int, message: str) -> None:
    if pool not in _warned:
        _warned.add(pool)
        logger.warning("%s", message)


def _nested(conn: Any) -> bool:
    from psycopg.pq import TransactionStatus

    return conn.info.transaction_status != TransactionStatus.IDLE


def pool_search(store: Any, op: SearchOp
                ) -> tuple[list[SearchItem], dict[Key, list[Any]] | None]:
    """``store.batch([op])[0]`` with the ANN beam raised to ``op.limit`` on PostgreSQL.

    Returns
    -------
    items : list of SearchItem
        The store's own search result for ``op``.
    vectors : dict or None
        ``{(namespace, key): [stored field vector (d,), ...]}`` read with the search
        (PostgreSQL), or None where the store's vectors are read separately.
    """
    if not _is(store, _PG):
        return store.batch([op])[0], None
    kind, dtype = _vector_kind(store)
    results: list[Any] = [None]
    ef, probes = _targets(op.limit)
    with store._cursor(pipeline=True) as cur:
        conn = cur.connection
        nested = _nested(conn)
        with conn.transaction():
            settings = conn.cursor()
            settings.execute(_RAISE_SQL, (ef, probes))
            vcur = _VectorsCursor(cur, f"{kind}_send")
            store._batch_search_ops([(0, op)], results, vcur)
            back = _after(settings.fetchone(), op.limit, nested)
            if back is not None:
                settings.execute(_RESTORE_SQL, back)
    return results[0], _stored(results[0], vcur.vectors, dtype)


async def apool_search(store: Any, op: SearchOp
                       ) -> tuple[list[SearchItem], dict[Key, list[Any]] | None]:
    """:func:`pool_search` through the store's async API."""
    if not _is(store, _APG):
        return (await store.abatch([op]))[0], None
    kind, dtype = _vector_kind(store)
    results: list[Any] = [None]
    ef, probes = _targets(op.limit)
    async with store._cursor(pipeline=True) as cur:
        conn = cur.connection
        nested = _nested(conn)
        async with conn.transaction():
            settings = conn.cursor()
            await settings.execute(_RAISE_SQL, (ef, probes))
            vcur = _AsyncVectorsCursor(cur, f"{kind}_send")
            await store._batch_search_ops([(0, op)], results, vcur)
            back = _after(await settings.fetchone(), op.limit, nested)
            if back is not None:
                await settings.execute(_RESTORE_SQL, back)
    return results[0], _stored(results[0], vcur.vectors, dtype)
