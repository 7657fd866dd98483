"""Full pools from pgvector's HNSW index, on a real PostgreSQL 16 + pgvector (``pgserver``).

The scale benchmark (``benchmarks/scale_pgvector.py``) run at 10k memories: LangGraph's
``PostgresStore`` with its default HNSW index hands a plain search at most ``hnsw.ef_search``
(40) rows; ``MemPursuitStore`` reads a full pool of P for its own read, and the setting on the
store's connection is unchanged afterwards (also when the caller set it, inside a caller's
transaction, on a read-only connection, and for P above pgvector's cap of 1000).
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("langgraph.store.postgres", reason='needs the [langgraph] extra')

from pg_fixture import postgres_server  # noqa: E402

from mempursuit_core.ann import PGVECTOR_EF_SEARCH_MAX, pgvector_targets  # noqa: E402
from mempursuit_langgraph import MemPursuitStore  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("scale_pgvector",
                                               ROOT / "benchmarks/scale_pgvector.py")
scale = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scale)

N, Q = 10_000, 12


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    memories, queries = scale.synthetic(N, 384, Q, seed=1)
    with postgres_server(tmp_path_factory.mktemp("pg-ann") / "pg") as server:
        uri = server.get_uri()
        scale.load(uri, memories, scale.lookup_embed({}))
        yield uri, memories, queries


def _open(uri, queries):
    embed = scale.lookup_embed({f"q{i}": v for i, v in enumerate(queries.tolist())})
    return scale._store(uri, queries.shape[1], embed)


def _show(conn) -> str:
    with conn.cursor() as cur:
        cur.execute("SHOW hnsw.ef_search")
        return cur.fetchone()["hnsw.ef_search"]


def test_scale_benchmark_at_10k(loaded):
    uri, memories, queries = loaded
    got = scale.run(uri, memories, queries, k=10, pool=200, clients=2, throughput_queries=3,
                    exact_queries=3)
    assert got["pool_rows_mean"]["native"] <= 40  # the store's own search: cut by ef_search
    assert got["pool_rows_mean"]["wrapped"] == 200
    assert got["completeness"]["wrapped pool (ef_search raised to P)"] >= 0.9
    assert got["completeness"]["native search(limit=P), default ef_search"] <= 40 / 200 + 1e-9
    assert got["show_ef_search_after_wrapped_reads"] == "40"
    recall = got["exact_top_k_recall"]
    assert recall["wrapped pool (ef_search raised to P)"] >= 0.9
    assert 0 < recall["native search(limit=K), default ef_search"] <= 1
    assert got["throughput"]["qps"]["wrapped"] > 0
    sweep = got["completeness"]["wrapped pool by the session's hnsw.ef_search"]
    assert list(sweep) == ["200", "400", "800", "1000"] and sweep["800"] >= sweep["200"] - 0.02
    assert sweep["200"] == got["completeness"]["wrapped pool (ef_search raised to P)"]
    cost = got["completeness"]["wrapped top-K p50 ms by the session's hnsw.ef_search"]
    assert list(cost) == list(sweep) and all(ms > 0 for ms in cost.values())
    exact = got["completeness"]["exact pool (enable_indexscan = off)"]
    assert exact["completeness"] >= 0.99 and exact["pool_read_p50_ms"] > 0
    # the like-for-like native read: the first ef_search whose top-K recall matches the pool's
    equal = got["native_equal_recall"]
    by_ef = recall["native search(limit=K) by hnsw.ef_search"]
    assert equal["hnsw.ef_search"] == int(list(by_ef)[-1]) and equal["matches"]
    assert equal["exact_top_k_recall"] >= recall["wrapped pool (ef_search raised to P)"]
    assert all(v < recall["wrapped pool (ef_search raised to P)"] for v in list(by_ef.values())[:-1])
    # the breakdown: every part measured, and they add up to the read's median total
    parts = got["breakdown_ms"]
    assert set(parts) == set(scale.PARTS) | {"total"}
    assert all(v >= 0 for v in parts.values()) and parts["index search and rows (server)"] > 0
    assert parts["the policy"] > 0 and parts["query sent, rows back, psycopg decoding"] > 0
    assert set(got["ratios"]) >= {"latency_p50_vs_equal_recall", "latency_p50_vs_default",
                                  "throughput_vs_equal_recall"}


def test_setting_left_as_the_caller_had_it(loaded):
    uri, _, queries = loaded
    store, conn = _open(uri, queries)
    try:
        wrapped = MemPursuitStore(store, pool=300)
        with conn.cursor() as cur:
            cur.execute("SET hnsw.ef_search = 60")
        assert len(wrapped.pool(scale.NS, "q0").native) == 300
        assert _show(conn) == "60"
        with conn.transaction():  # a caller's transaction the read joins
            with conn.cursor() as cur:
                cur.execute("SET LOCAL hnsw.ef_search = 50")
            assert len(wrapped.search(scale.NS, query="q1", limit=5)) == 5
            assert _show(conn) == "50"
        assert _show(conn) == "60"
        with conn.cursor() as cur:  # a read-only session: set_config is allowed there
            cur.execute("SET default_transaction_read_only = on")
        assert len(wrapped.pool(scale.NS, "q2").native) == 300
        assert _show(conn) == "60"
    finally:
        conn.close()


def test_pool_above_pgvector_cap_warns_once(loaded, caplog):
    uri, _, queries = loaded
    store, conn = _open(uri, queries)
    try:
        wrapped = MemPursuitStore(store, pool=1500)
        with caplog.at_level(logging.WARNING):
            pool = wrapped.pool(scale.NS, "q3")
            wrapped.pool(scale.NS, "q4")
        assert PGVECTOR_EF_SEARCH_MAX - 100 <= len(pool.native) <= 1500
        warned = [r for r in caplog.records if "hnsw.ef_search limit" in r.getMessage()]
        assert len(warned) == 1 and "1000" in warned[0].getMessage()
        assert _show(conn) == "40"
    finally:
        conn.close()


def test_async_postgres_store_full_pool(loaded):
    from langgraph.store.postgres.aio import AsyncPostgresStore

    uri, _, queries = loaded
    embed = scale.lookup_embed({f"q{i}": v for i, v in enumerate(queries.tolist())})

    async def go():
        async with AsyncPostgresStore.from_conn_string(
                uri, index={"dims": 384, "embed": embed, "fields": ["text"]}) as astore:
            native = await astore.asearch(scale.NS, query="q5", limit=200)
            pool = await MemPursuitStore(astore).apool(scale.NS, "q5")
            async with astore._cursor() as cur:
                await cur.execute("SHOW hnsw.ef_search")
                ef = (await cur.fetchone())["hnsw.ef_search"]
            return len(native), len(pool.native), ef

    n_native, n_pool, ef = asyncio.run(go())
    assert n_native <= 40 and n_pool == 200 and ef == "40"


def test_targets_never_lower_and_cap():
    assert pgvector_targets(200, "40", "1") == (200, 2, None)
    assert pgvector_targets(20, "100", "5")[:2] == (100, 5)
    ef, _, warning = pgvector_targets(5000, None, None)
    assert ef == PGVECTOR_EF_SEARCH_MAX and "1000" in warning
    assert np.isfinite(ef)


def test_pool_read_is_the_stores_own_search(loaded):
    """The one-statement pool read returns what the store's own search returns at the same beam:
    the same items, values (orjson where it agrees with json.loads), scores, and the stored
    vectors bit for bit (the query embedding sent as binary float8[])."""
    uri, _, queries = loaded
    ns = ("bench", "exact")
    rng = np.random.default_rng(7)
    vectors = queries[0] + 0.05 * rng.standard_normal((4, queries.shape[1])).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    texts = [f"exact {i}" for i in range(4)]
    lookup = {f"q{i}": v for i, v in enumerate(queries.tolist())}
    lookup.update(zip(texts, vectors.tolist()))
    store, conn = scale._store(uri, queries.shape[1], scale.lookup_embed(lookup))
    values = [{"text": texts[0], "big": 123456789012345678901234, "small": -9223372036854775808},
              {"text": texts[1], "x": 0.1, "nested": [1, {"a": None, "b": [True, "é ✓"]}]},
              {"text": texts[2], "digits": "1234567890123456789012"},
              {"text": texts[3], "neg": -1e-300, "int": 18446744073709551615}]
    try:
        for i, v in enumerate(values):
            store.put(ns, f"e{i}", v)
        got = MemPursuitStore(store, pool=200).pool(ns, "q0")
        with conn.cursor() as cur:
            cur.execute("SET hnsw.ef_search = 200")
        native = store.search(ns, query="q0", limit=200)
        assert [(i.key, i.value, i.score, i.created_at) for i in got.native] == \
               [(i.key, i.value, i.score, i.created_at) for i in native]
        assert len(native) == 4 and {i.key: i.value for i in native} == \
               {f"e{i}": v for i, v in enumerate(values)}
        by_key = {i.key: i.value for i in got.native}
        assert type(by_key["e0"]["big"]) is int and type(by_key["e3"]["int"]) is int
        rows = {i.key: row for i, row in zip(got.candidates.items, got.candidates.vectors)}
        for i, v in enumerate(vectors):
            assert np.array_equal(rows[f"e{i}"], v.astype(np.float32))
    finally:
        for i in range(len(values)):
            store.delete(ns, f"e{i}")
        conn.close()


def test_vectors_carried_by_the_stores_own_statement(loaded):
    """With the LangGraph this project pins, the pool statement is the store's own with the
    scored row's vector carried through (no second lookup by key); a statement of another shape
    (the TTL-refresh wrapper) reads the vectors by key instead."""
    from langgraph.store.base import SearchOp

    from mempursuit_langgraph import ann

    uri, _, queries = loaded
    store, conn = _open(uri, queries)
    try:
        for refresh, carried in ((False, True), (True, False)):
            op = SearchOp(scale.NS, {"session_id": "s1"}, 200, 0, "q0", refresh_ttl=refresh)
            (sql, _), = store._prepare_batch_search_queries([(0, op)])[0]
            out = ann.with_vectors(sql, "vector_send")
            assert ("sv.embedding AS mp_vector" in out) is carried
            assert ("array_agg(vector_send(mp_sv.embedding))" in out) is not carried
    finally:
        conn.close()
