"""Pool completeness, latency and throughput of a wrapped LangGraph ``PostgresStore`` at scale.

A real PostgreSQL 16 + pgvector 0.6 (the ``pgserver`` wheel, in a temporary directory) holds
``--memories`` synthetic 384-d memories in one LangGraph ``PostgresStore`` with its default
index (HNSW, cosine). The memories are clustered (``N / 50`` random unit centres, each memory a
centre plus Gaussian noise, renormalised), so near-duplicates crowd the top of every query, as
in an agent's memory. Queries are fresh points near random centres. Rows are bulk-loaded with
binary ``COPY`` into LangGraph's own tables, then the store's HNSW index is built (its own
``CREATE INDEX`` statement, timed).

Measured in one run, per query:

* **pool completeness**: the fraction of the exact top-P (NumPy over all stored vectors) that
  the pool holds, for the store's own ``search(limit=P)`` (pgvector's default
  ``hnsw.ef_search`` = 40) and for ``MemPursuitStore.pool`` (beam raised to P for its read);
* **latency** (ms, p50 / p95; the reads interleaved): ``native top-K`` =
  ``store.search(limit=K)``, ``wrapped top-K`` = ``MemPursuitStore(store).search(limit=K)``
  (pool of P from HNSW, stored vectors, signals, the default policy), and their ratio;
* **throughput**: queries per second with ``--clients`` threads, each with its own connection
  and store: native (default and equal recall) and wrapped, and their ratios;
* **exact top-K recall**: the fraction of the exact top-K that the store's own
  ``search(limit=K)`` returns (ANN recall@K), and that the wrapped pool holds;
* completeness of the wrapped pool with the session's ``hnsw.ef_search`` set to P, 2P, 4P and
  1000 (pgvector's cap; what a database or role default buys, the wrapped read never lowers
  it), with the wrapped read's p50 at each, and of an exact pool (``enable_indexscan = off``)
  with its read time on ``exact_queries`` queries;
* the native read at equal top-K recall: ``hnsw.ef_search`` raised step by step until the
  store's own ``search(limit=K)`` holds as much of the exact top K as the wrapped pool, timed
  beside the others, and the ratios of the wrapped read to it and to the default;
* the breakdown of a wrapped read into its parts (:func:`breakdown`);
* after the wrapped reads, ``SHOW hnsw.ef_search`` on the store's connection (unchanged: 40).

    python benchmarks/scale_pgvector.py --memories 100000 [--queries 200] [--out PATH]

``run(uri, ...)`` is the same measurement on a running server (the integration test calls it
at 10k).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import threading
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NS = ("bench", "scale")


def synthetic(n: int, dim: int, queries: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Clustered unit vectors: memories ``(n, dim)`` and queries ``(queries, dim)``, float32."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(n // 50, 1), dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)

    def near(m: int, sigma: float) -> np.ndarray:
        x = centres[rng.integers(0, len(centres), m)] + sigma * rng.standard_normal(
            (m, dim)).astype(np.float32) / np.sqrt(dim)
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)

    return near(n, 0.6), near(queries, 0.8)


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return 1000 * xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def _stats(xs: list[float]) -> dict:
    return {"p50_ms": 1000 * statistics.median(xs), "p95_ms": _pct(xs, 0.95)}


def lookup_embed(vectors: dict[str, list[float]]):
    """An embedding function that looks vectors up by text (queries ``q<i>``); no model runs."""
    def embed(texts):
        return [vectors[t] for t in texts]
    return embed


def _store(uri: str, dim: int, embed):
    from langgraph.store.postgres import PostgresStore
    from psycopg import Connection
    from psycopg.rows import dict_row

    conn = Connection.connect(uri, autocommit=True, prepare_threshold=0, row_factory=dict_row)
    store = PostgresStore(conn, index={"dims": dim, "embed": embed, "fields": ["text"]})
    return store, conn


def load(uri: str, memories: np.ndarray, embed) -> float:
    """Create LangGraph's tables (its ``setup``), bulk-load ``memories``, build the HNSW index.

    Returns the index build time in seconds.
    """
    store, conn = _store(uri, memories.shape[1], embed)
    store.setup()
    with conn.cursor() as cur:
        cur.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = "
                    "'store_vectors' AND indexdef ILIKE '%USING hnsw%'")
        (name, indexdef), = [(r["indexname"], r["indexdef"]) for r in cur.fetchall()]
        cur.execute(f'DROP INDEX "{name}"')
        cur.execute(f"CREATE TEMP TABLE staging (key text, embedding vector({memories.shape[1]}))")
        with cur.copy("COPY staging (key, embedding) FROM STDIN (FORMAT BINARY)") as copy:
            for block in _copy_binary(memories):
                copy.write(block)
        prefix = ".".join(NS)
        cur.execute(
            "INSERT INTO store (prefix, key, value) SELECT %s, key, jsonb_build_object("
            "'text', 'memory ' || key, 'session_id', 's' || (substr(key, 2)::int / 20)) "
            "FROM staging", (prefix,))
        cur.execute("INSERT INTO store_vectors (prefix, key, field_name, embedding) "
                    "SELECT %s, key, 'text', embedding FROM staging", (prefix,))
        cur.execute("DROP TABLE staging")
        # the HNSW graph must fit in maintenance_work_mem, or the build slows down many times
        gb = max(2, int(np.ceil(3 * memories.nbytes / 2**30)))
        cur.execute(f"SET maintenance_work_mem = '{gb}GB'")
        t = time.perf_counter()
        cur.execute(indexdef)
        build = time.perf_counter() - t
        cur.execute("ANALYZE store_vectors")
        cur.execute("ANALYZE store")
    conn.close()
    return build


def _copy_binary(memories: np.ndarray, rows: int = 20_000):
    """PostgreSQL binary ``COPY`` data for rows ``(key 'm<i>', vector)``, in blocks of bytes.

    pgvector's binary ``vector`` is int16 dim, int16 0, then big-endian float4s; building it
    with NumPy keeps the load of a million rows from turning every float into a Python object.
    """
    n, dim = memories.shape
    yield b"PGCOPY\n\377\r\n\0" + np.array([0, 0], ">i4").tobytes()
    head = np.array([4 + 4 * dim], ">i4").tobytes() + np.array([dim, 0], ">i2").tobytes()
    for start in range(0, n, rows):
        vecs = memories[start:start + rows].astype(">f4")
        parts = []
        for i, vec in enumerate(vecs, start):
            key = b"m%d" % i
            parts += [b"\x00\x02", len(key).to_bytes(4, "big"), key, head, vec.tobytes()]
        yield b"".join(parts)
    yield b"\xff\xff"


def _keys(items) -> list[int]:
    return [int(i.key[1:]) for i in items]


def run(uri: str, memories: np.ndarray, queries: np.ndarray, *, k: int = 10, pool: int = 200,
        clients: int = 8, throughput_queries: int | None = None, exact_queries: int = 20,
        ef_sweep: tuple[int, ...] = (40, 60, 80, 100, 120, 160, 200, 300, 400, 600, 800, 1000),
        ) -> dict:
    """Completeness, latency, throughput and the breakdown on a loaded store (module docstring)."""
    from langgraph.store.base import SearchOp

    from mempursuit_langgraph import MemPursuitStore

    texts = [f"q{i}" for i in range(len(queries))]
    embed = lookup_embed(dict(zip(texts, queries.tolist())))
    store, conn = _store(uri, memories.shape[1], embed)
    wrapped = MemPursuitStore(store, pool=pool)

    # exact top-P by cosine (unit vectors: dot product), in blocks to bound memory
    exact, exact_k = [], []
    for b in range(0, len(queries), 64):
        sims = queries[b:b + 64] @ memories.T
        top = np.argpartition(-sims, pool - 1, axis=1)[:, :pool]
        exact.extend(set(map(int, row)) for row in top)
        top_k = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        exact_k.extend(set(map(int, row)) for row in top_k)

    native_full, wrapped_full, native_len, wrapped_len = [], [], [], []
    recall_k: dict[str, list[float]] = {"native top-K": [], "wrapped pool": []}
    for t in texts[:5]:  # warm-up: plans, numba, caches
        store.search(NS, query=t, limit=k)
        wrapped.search(NS, query=t, limit=k)
    for i, t in enumerate(texts):
        got = store.search(NS, query=t, limit=pool)
        native_len.append(len(got))
        native_full.append(len(exact[i] & set(_keys(got))) / pool)
        got = wrapped.pool(NS, t).native
        wrapped_len.append(len(got))
        wrapped_full.append(len(exact[i] & set(_keys(got))) / pool)
        recall_k["wrapped pool"].append(len(exact_k[i] & set(_keys(got))) / k)
        out = store.search(NS, query=t, limit=k)
        recall_k["native top-K"].append(len(exact_k[i] & set(_keys(out))) / k)
    wrapped_recall = float(np.mean(recall_k["wrapped pool"]))

    # the like-for-like native read: the session's hnsw.ef_search raised (what a user who wants
    # a good native top K sets) until its exact top-K recall matches the wrapped pool's
    eq_store, eq_conn = _store(uri, memories.shape[1], embed)
    by_ef: dict[str, float] = {}
    equal_ef = None
    for ef in ef_sweep:
        _set_ef(eq_conn, ef)
        by_ef[str(ef)] = float(np.mean([len(exact_k[i] & set(_keys(
            eq_store.search(NS, query=t, limit=k)))) / k for i, t in enumerate(texts)]))
        if by_ef[str(ef)] >= wrapped_recall:
            equal_ef = ef
            break
    equal_ef = equal_ef or ef_sweep[-1]
    _set_ef(eq_conn, equal_ef)

    lat: dict[str, list[float]] = {"native top-K": [], "native top-K, equal recall": [],
                                   "wrapped top-K": []}
    readers = (("native top-K", store.search), ("native top-K, equal recall", eq_store.search),
               ("wrapped top-K", wrapped.search))
    for t in texts[:5]:
        eq_store.search(NS, query=t, limit=k)
    for i, t in enumerate(texts):
        for name, read in readers:
            t0 = time.perf_counter()
            out = read(NS, query=t, limit=k)
            lat[name].append(time.perf_counter() - t0)
            assert len(out) == k
    parts = breakdown(conn, wrapped, texts, k)
    with conn.cursor() as cur:
        cur.execute("SHOW hnsw.ef_search")
        ef_after = cur.fetchone()["hnsw.ef_search"]
    # what a wider beam than P buys (pgvector caps it at 1000), set as a user would (the session
    # or database default, which the wrapped read never lowers), and what it costs the wrapped
    # read; then an exact pool (no index scan) on a few queries
    sweep, sweep_ms = {}, {}
    for ef in sorted({min(e, 1000) for e in (pool, 2 * pool, 4 * pool, 1000)}):
        s_store, s_conn = _store(uri, memories.shape[1], embed)
        _set_ef(s_conn, ef)
        s_wrapped = MemPursuitStore(s_store, pool=pool)
        full, ms = [], []
        for i, t in enumerate(texts):
            full.append(len(exact[i] & set(_keys(s_wrapped.pool(NS, t).native))) / pool)
            t0 = time.perf_counter()
            s_wrapped.search(NS, query=t, limit=k)
            ms.append(time.perf_counter() - t0)
        sweep[str(ef)], sweep_ms[str(ef)] = float(np.mean(full)), _stats(ms)["p50_ms"]
        s_conn.close()
    x_store, x_conn = _store(uri, memories.shape[1], embed)
    with x_conn.cursor() as cur:
        cur.execute("SET enable_indexscan = off")
    x_wrapped = MemPursuitStore(x_store, pool=pool)
    full, ms = [], []
    for i, t in enumerate(texts[:exact_queries]):
        t0 = time.perf_counter()
        full.append(len(exact[i] & set(_keys(x_wrapped.pool(NS, t).native))) / pool)
        ms.append(time.perf_counter() - t0)
    exact_pool = {"queries": len(ms), "completeness": float(np.mean(full)),
                  "pool_read_p50_ms": _stats(ms)["p50_ms"]}
    x_conn.close()
    conn.close()
    eq_conn.close()

    n_tp = throughput_queries or len(texts)
    qps = {name: _throughput(uri, memories.shape[1], embed, texts[:n_tp], k, pool, clients,
                             wrapped=(name == "wrapped"),
                             ef=equal_ef if name == "native, equal recall" else None)
           for name in ("native", "native, equal recall", "wrapped")}
    latency = {name: _stats(xs) for name, xs in lat.items()}
    w, nd, ne = (latency[n]["p50_ms"] for n in ("wrapped top-K", "native top-K",
                                                   "native top-K, equal recall"))
    return {
        "memories": int(len(memories)), "dim": int(memories.shape[1]),
        "queries": len(texts), "k": k, "pool": pool,
        "completeness": {
            "native search(limit=P), default ef_search": float(np.mean(native_full)),
            "wrapped pool (ef_search raised to P)": float(np.mean(wrapped_full)),
            "wrapped pool by the session's hnsw.ef_search": sweep,
            "wrapped top-K p50 ms by the session's hnsw.ef_search": sweep_ms,
            "exact pool (enable_indexscan = off)": exact_pool,
        },
        "exact_top_k_recall": {
            "native search(limit=K), default ef_search": float(np.mean(recall_k["native top-K"])),
            "wrapped pool (ef_search raised to P)": wrapped_recall,
            "native search(limit=K) by hnsw.ef_search": by_ef,
        },
        "pool_rows_mean": {"native": float(np.mean(native_len)),
                           "wrapped": float(np.mean(wrapped_len))},
        "latency": latency,
        "latency_ratio_wrapped_over_native": {
            "p50": latency["wrapped top-K"]["p50_ms"] / latency["native top-K"]["p50_ms"],
            "p95": latency["wrapped top-K"]["p95_ms"] / latency["native top-K"]["p95_ms"]},
        "throughput": {"clients": clients, "queries_per_client": n_tp,
                       "qps": qps, "ratio_wrapped_over_native": qps["wrapped"] / qps["native"]},
        "native_equal_recall": {
            "hnsw.ef_search": equal_ef, "exact_top_k_recall": by_ef[str(equal_ef)],
            "matches": by_ef[str(equal_ef)] >= wrapped_recall,
            **latency["native top-K, equal recall"], "qps": qps["native, equal recall"]},
        "breakdown_ms": parts,
        "ratios": {"latency_p50_vs_equal_recall": w / ne, "latency_p50_vs_default": w / nd,
                   "throughput_vs_equal_recall": qps["wrapped"] / qps["native, equal recall"],
                   "throughput_vs_default": qps["wrapped"] / qps["native"]},
        "show_ef_search_after_wrapped_reads": ef_after,
    }


def _set_ef(conn, ef: int) -> None:
    """The session's ``hnsw.ef_search`` (autocommit: holds for the connection's later reads)."""
    with conn.cursor() as cur:
        cur.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(ef),))


#: the parts of a wrapped read, in the order they run (``breakdown``)
PARTS = ("index search and rows (server)", "stored vectors read (server)",
         "query sent, rows back, psycopg decoding", "rows to SearchItems (LangGraph)",
         "vector decoding", "building the pool (checks, signals)", "the policy", "the rest")


def breakdown(conn, wrapped, texts: list[str], k: int) -> dict[str, float]:
    """Where a wrapped ``search(limit=K)`` spends its time: the p50 of each part, in ms.

    Profiled on real reads, not estimated: the adapter's steps are timed by wrapping them
    (the pool search's statement from sending to the last row received and decoded by psycopg,
    LangGraph turning rows into ``SearchItem`` objects, the vectors' decoding, the pool's
    checks and signals, the policy). Right after each read its statement runs again, warm: timed
    from the client as the adapter runs it, and as ``EXPLAIN (ANALYZE, SUMMARY)`` with and
    without the stored vectors. The warm client time less the server's planning and
    execution is the transfer (query sent, rows back, psycopg decoding); the real read's round
    trip less that transfer is the server's, split between the index search with its rows and
    the stored vectors' read by its share of the warm execution. "The rest" is the read's
    total minus the parts (transaction, settings, query-vector capture, the TTL refresh of the
    K returned items, the wrapper's own Python).
    """
    from mempursuit_langgraph import ann, store as store_mod

    marks: dict[str, float] = {}
    stmt: list = []

    def timed(obj, name, begin, end):
        orig = getattr(obj, name)

        def wrapper(*a, **kw):
            marks[begin] = time.perf_counter()
            try:
                return orig(*a, **kw)
            finally:
                marks[end] = time.perf_counter()
        setattr(obj, name, wrapper)
        return orig

    cursor_exec = ann._VectorsCursor.execute

    def execute(self, query, params=None, **kw):
        stmt[:] = [query, list(params)]
        marks["sent"] = time.perf_counter()
        return cursor_exec(self, query, params, **kw)

    split = ann._VectorsCursor._split

    def split_timed(self, rows):
        marks["received"] = time.perf_counter()
        return split(self, rows)

    saved = [(ann._VectorsCursor, "execute", cursor_exec), (ann._VectorsCursor, "_split", split)]
    ann._VectorsCursor.execute, ann._VectorsCursor._split = execute, split_timed
    saved.append((ann, "_stored", timed(ann, "_stored", "decode0", "decode1")))
    pg = type(wrapped.store)
    saved.append((pg, "_batch_search_ops", timed(pg, "_batch_search_ops", "search0", "items")))
    saved.append((store_mod.MemPursuitStore, "_assemble",
                  timed(store_mod.MemPursuitStore, "_assemble", "build0", "build1")))
    saved.append((store_mod.MemPursuitStore, "_choose",
                  timed(store_mod.MemPursuitStore, "_choose", "policy0", "policy1")))
    got: dict[str, list[float]] = {p: [] for p in PARTS}
    try:
        for t in texts:
            marks.clear()
            t0 = time.perf_counter()
            wrapped.search(NS, query=t, limit=k)
            total = 1000 * (time.perf_counter() - t0)
            round_trip = 1000 * (marks["received"] - marks["sent"])
            # the same statement again, now warm: its client round trip less the server's own
            # planning and execution is what sending and receiving cost; the rest of the real
            # round trip was the server's, split by the vectors' share of a warm execution
            sql, params = ann.with_vectors(stmt[0], "vector_send"), stmt[1]
            warm = _client_ms(conn, stmt[0], params, wrapped.options.pool)
            with_vectors = _server_ms(conn, sql, params, wrapped.options.pool)
            search_only = _server_ms(conn, stmt[0], params, wrapped.options.pool)
            transfer = min(max(warm - with_vectors, 0.0), round_trip)
            server = round_trip - transfer
            vectors = server * max(with_vectors - search_only, 0.0) / max(with_vectors, 1e-9)
            part = {
                "index search and rows (server)": server - vectors,
                "stored vectors read (server)": vectors,
                "query sent, rows back, psycopg decoding": transfer,
                "rows to SearchItems (LangGraph)": 1000 * (marks["items"] - marks["received"]),
                "vector decoding": 1000 * (marks["decode1"] - marks["decode0"]),
                "building the pool (checks, signals)": 1000 * (marks["build1"] - marks["build0"]),
                "the policy": 1000 * (marks["policy1"] - marks["policy0"]),
            }
            part["the rest"] = max(total - sum(part.values()), 0.0)
            for name, ms in part.items():
                got[name].append(ms)
            got.setdefault("total", []).append(total)
    finally:
        for obj, name, orig in saved:
            setattr(obj, name, orig)
    return {name: float(statistics.median(xs)) for name, xs in got.items()}


def _server_ms(conn, sql: str, params: list, pool: int) -> float:
    """The server's planning + execution time (ms) of ``sql`` with the wrapped read's beam."""
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(min(pool, 1000)),))
        cur.execute("EXPLAIN (ANALYZE, TIMING OFF, SUMMARY, FORMAT JSON) " + sql, params)
        plan = cur.fetchone()
        plan = plan["QUERY PLAN"] if isinstance(plan, dict) else plan[0]
        if isinstance(plan, str):
            plan = json.loads(plan)
    return float(plan[0]["Planning Time"] + plan[0]["Execution Time"])


def _client_ms(conn, sql: str, params: list, pool: int) -> float:
    """The wrapped read's statement for ``sql`` run as the adapter runs it, timed from the client
    (ms): parameters sent, the server's work, rows and vectors back and decoded by psycopg."""
    from psycopg.rows import dict_row

    from mempursuit_langgraph import ann

    with conn.transaction(), conn.cursor(binary=True, row_factory=dict_row) as cur:
        cur.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(min(pool, 1000)),))
        vcur = ann._VectorsCursor(cur, "vector_send")
        t0 = time.perf_counter()
        vcur.execute(sql, params)
        cur.fetchall()
        return 1000 * (time.perf_counter() - t0)


def _throughput(uri, dim, embed, texts, k, pool, clients, *, wrapped: bool,
                ef: int | None = None) -> float:
    from mempursuit_langgraph import MemPursuitStore

    stores = [_store(uri, dim, embed) for _ in range(clients)]
    if ef is not None:
        for _, c in stores:
            _set_ef(c, ef)
    readers = [MemPursuitStore(s, pool=pool) if wrapped else s for s, _ in stores]
    barrier = threading.Barrier(clients + 1)

    def client(reader, offset):
        barrier.wait()
        for j in range(len(texts)):
            reader.search(NS, query=texts[(j + offset) % len(texts)], limit=k)

    threads = [threading.Thread(target=client, args=(r, 7 * c)) for c, r in enumerate(readers)]
    for th in threads:
        th.start()
    barrier.wait()
    t0 = time.perf_counter()
    for th in threads:
        th.join()
    elapsed = time.perf_counter() - t0
    for _, c in stores:
        c.close()
    return clients * len(texts) / elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--throughput-queries", type=int, default=50,
                    help="queries per client in the throughput run")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--pool", type=int, default=200)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--pgdata", type=Path,
                    help="keep the server's data folder here: loaded once, reused by later runs "
                         "with the same --memories, --dim and --seed (a 1M load takes ~15 min)")
    ap.add_argument("--load-only", action="store_true", help="load (or check) --pgdata and stop")
    args = ap.parse_args()
    out = args.out or ROOT / f"benchmarks/results/scale/pgvector-{args.memories // 1000}k.json"

    import pgserver

    memories, queries = synthetic(args.memories, args.dim, args.queries, args.seed)
    with tempfile.TemporaryDirectory(prefix="scale-pg-") as tmp:
        pgdata = args.pgdata or Path(tmp) / "pg"
        marker = pgdata.parent / (pgdata.name + ".loaded.json")
        wanted = {"memories": args.memories, "dim": args.dim, "seed": args.seed}
        reuse = args.pgdata is not None and marker.exists() and \
            json.loads(marker.read_text()).get("data") == wanted
        if args.pgdata is not None and pgdata.exists() and not reuse:
            raise SystemExit(f"{pgdata} holds another load (see {marker}); remove it first")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = pgserver.get_server(str(pgdata), cleanup_mode="stop")
        try:
            if reuse:
                done = json.loads(marker.read_text())
                loaded, build = done["load_seconds"], done["hnsw_build_seconds"]
                print(f"reusing {pgdata}: {args.memories} memories", flush=True)
            else:
                t0 = time.perf_counter()
                build = load(server.get_uri(), memories, lookup_embed({}))
                loaded = time.perf_counter() - t0
                print(f"loaded {args.memories} memories in {loaded:.0f} s "
                      f"(HNSW build {build:.0f} s)", flush=True)
                if args.pgdata is not None:
                    marker.write_text(json.dumps({"data": wanted, "load_seconds": loaded,
                                                  "hnsw_build_seconds": build}))
            if args.load_only:
                return
            result = run(server.get_uri(), memories, queries, k=args.k, pool=args.pool,
                         clients=args.clients, throughput_queries=args.throughput_queries)
        finally:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                server.cleanup()
    result.update({
        "store": "LangGraph PostgresStore, default HNSW index (m=16, ef_construction=64, cosine)",
        "data": "synthetic clustered unit vectors (N/50 centres), seed " + str(args.seed),
        "policy": "default", "load_seconds": loaded, "hnsw_build_seconds": build,
        "machine": {"python": platform.python_version(), "processor": platform.machine(),
                    "cpus": os.cpu_count(), "note": "shared 2-core VM, other jobs running"},
    })
    print(table(result))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


def table(r: dict) -> str:
    """The run's main numbers as a plain-text table."""
    lat, eq, ratios = r["latency"], r["native_equal_recall"], r["ratios"]
    rows = [("read", "p50 ms", "p95 ms", "q/s"),
            ("native, default ef_search", lat["native top-K"]["p50_ms"],
             lat["native top-K"]["p95_ms"], r["throughput"]["qps"]["native"]),
            (f"native, ef_search {eq['hnsw.ef_search']} (equal recall)", eq["p50_ms"],
             eq["p95_ms"], eq["qps"]),
            ("wrapped", lat["wrapped top-K"]["p50_ms"], lat["wrapped top-K"]["p95_ms"],
             r["throughput"]["qps"]["wrapped"])]
    lines = [f"{a:<40} {b:>8} {c:>8} {d:>8}" if isinstance(b, str) else
             f"{a:<40} {b:8.1f} {c:8.1f} {d:8.1f}" for a, b, c, d in rows]
    lines += [f"{name}: {value:.2f}" for name, value in ratios.items()]
    lines += ["breakdown of a wrapped read (p50 ms):"]
    lines += [f"  {name:<42} {ms:6.2f}" for name, ms in r["breakdown_ms"].items()]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
