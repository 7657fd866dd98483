"""Latency of a wrapped LangGraph search against the store's own, on PostgreSQL + pgvector.

Starts a PostgreSQL 16 with pgvector from the ``pgserver`` wheel in a temporary directory,
fills a LangGraph ``PostgresStore`` (exact search: ``ann_index_config={"kind": "flat"}``, so a
P=200 pool is whole; with the default HNSW index PostgreSQL returns at most
``hnsw.ef_search`` = 40 rows) with LoCoMo turns in one namespace, then times, per query
(milliseconds, median and p95 over the questions, the two orders interleaved):

* ``native top-K``: ``store.search(ns, query=q, limit=K)``, LangGraph's own read,
* ``native top-P``: the same with ``limit=P`` (the pool query alone),
* ``wrapped top-K``: ``MemPursuitStore(store).search(ns, query=q, limit=K)`` (the pool query,
  reading the P stored vectors back, signals and the default policy).

The embedding function is a dictionary lookup of vectors computed beforehand with the packaged
MiniLM (int8 ONNX), so the times are the store's and the adapter's, not the embedder's (which
adds the same single query embedding to both reads). Prints a table and writes JSON.

    python benchmarks/langgraph_latency.py [--memories 1000] [--queries 100] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_LOCOMO = ROOT.parent / "shared/data/locomo/locomo10.json"
NS = ("bench", "locomo")


def latency_summary(xs: list[float]) -> dict:
    """Median and p95 in milliseconds of ``xs`` (seconds)."""
    xs = sorted(xs)
    return {"median_ms": 1000 * statistics.median(xs),
            "p95_ms": 1000 * xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]}


def parse_args(doc: str, stored: str, default: int, name: str) -> argparse.Namespace:
    """The options of the store latency scripts (graphiti_latency.py too): ``--data`` (LoCoMo),
    ``--STORED`` (how many texts the store holds, ``default``), ``--queries``, ``--k``,
    ``--pool`` and ``--out`` (default benchmarks/results/NAME.json); ``doc``'s first paragraph
    is the description."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_LOCOMO)
    ap.add_argument(f"--{stored}", type=int, default=default)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--pool", type=int, default=200)
    ap.add_argument("--out", type=Path, default=ROOT / f"benchmarks/results/{name}.json")
    return ap.parse_args()


def report(title: str, rows: dict[str, list[float]], timed: dict, out: Path) -> None:
    """Print the table of ``rows`` (seconds per read, by read; ``"native top-K"`` and
    ``"wrapped top-K"`` among them) under ``title``, and write ``timed`` (what was timed) with the
    summaries, the ratio of the two top-K medians, the threads and the machine to ``out`` (JSON).
    graphiti_latency.py reports through it too."""
    stats = {name: latency_summary(xs) for name, xs in rows.items()}
    ratio = stats["wrapped top-K"]["median_ms"] / stats["native top-K"]["median_ms"]
    print(title)
    print(f"{'read':<16}{'median ms':>12}{'p95 ms':>10}")
    for name, s in stats.items():
        print(f"{name:<16}{s['median_ms']:>12.2f}{s['p95_ms']:>10.2f}")
    print(f"wrapped / native top-K (medians): {ratio:.2f}x")
    result = {
        **timed, "threads": int(os.environ.get("OMP_NUM_THREADS", "1")),
        "reads": stats, "ratio_wrapped_over_native_topk": ratio,
        "machine": {"python": platform.python_version(), "processor": platform.machine()},
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


def main() -> None:
    args = parse_args(__doc__, "memories", 1000, "langgraph_latency")

    import pgserver
    from langgraph.store.base import PutOp
    from langgraph.store.postgres import PostgresStore
    from psycopg import Connection
    from psycopg.rows import dict_row

    from mempursuit_core.embed import get_embedder
    from mempursuit_eval.datasets import load_locomo
    from mempursuit_langgraph import MemPursuitStore

    ds = load_locomo(args.data)
    units = ds.units[:args.memories]
    groups = {u.group for u in units}
    questions = [q for q in ds.questions if q.group in groups][:args.queries]
    model = get_embedder(threads=1)
    texts = [u.text for u in units] + [q.text for q in questions]
    vectors = dict(zip(texts, model.encode(texts).tolist()))

    def embed(batch):
        return [vectors[t] for t in batch]

    rows: dict[str, list[float]] = {"native top-K": [], "native top-P": [], "wrapped top-K": []}
    with tempfile.TemporaryDirectory(prefix="lg-latency-") as tmp:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = pgserver.get_server(str(Path(tmp) / "pg"), cleanup_mode="stop")
        try:
            conn = Connection.connect(server.get_uri(), autocommit=True, prepare_threshold=0,
                                      row_factory=dict_row)
            store = PostgresStore(conn, index={"dims": model.dim, "embed": embed,
                                               "fields": ["text"],
                                               "ann_index_config": {"kind": "flat"}})
            store.setup()
            for i in range(0, len(units), 200):
                store.batch([PutOp(NS, u.uid, {"text": u.text, "session": u.session_id,
                                               "speaker": u.speaker, "timestamp": u.timestamp})
                             for u in units[i:i + 200]])
            wrapped = MemPursuitStore(store, pool=args.pool)
            reads = {
                "native top-K": lambda q: store.search(NS, query=q, limit=args.k),
                "native top-P": lambda q: store.search(NS, query=q, limit=args.pool),
                "wrapped top-K": lambda q: wrapped.search(NS, query=q, limit=args.k),
            }
            for q in questions[:5]:  # warm-up (numba compilation, plans, caches)
                for read in reads.values():
                    read(q.text)
            for q in questions:
                for name, read in reads.items():
                    t = time.perf_counter()
                    got = read(q.text)
                    rows[name].append(time.perf_counter() - t)
                assert len(got) == args.k
            pool_size = len(wrapped.pool(NS, questions[0].text).candidates)
            conn.close()
        finally:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                server.cleanup()

    timed = {"store": "PostgresStore (pgvector, flat)", "memories": len(units),
             "queries": len(questions), "k": args.k, "pool": args.pool, "pool_read": pool_size,
             "embedder": "all-MiniLM-L6-v2-int8 (precomputed; lookup in the timed reads)"}
    report(f"LangGraph PostgresStore (pgvector, exact), {len(units)} memories, "
           f"{len(questions)} queries, K={args.k}, P={args.pool} (pool read: {pool_size})",
           rows, timed, args.out)



if __name__ == "__main__":
    main()
