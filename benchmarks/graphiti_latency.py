"""Latency of a wrapped Graphiti fact search against Graphiti's own, on embedded Kuzu.

Writes ``--facts`` (default 10,000) fact edges into one group of a Graphiti graph on the embedded
Kuzu driver, through Graphiti's bulk save path (no LLM): LoCoMo's turns, observations and
session summaries (8,695 texts), then turns again with the prefix ``"Again: "`` up to the count.
Each fact runs from its speaker's entity to the other speaker's. Then times, per question
(milliseconds, median and p95, the reads interleaved):

* ``native top-K``: ``graphiti.search(q, group_ids=[g], num_results=K)`` (BM25 + cosine, RRF),
* ``native top-P``: the same with ``num_results=P`` (the pool query alone),
* ``wrapped top-K``: ``MemPursuitGraphiti(graphiti).search(...)`` (the pool query, reading the
  P stored fact embeddings and the entity names back, signals and the default policy).

The embedder is a dictionary lookup of vectors computed beforehand with the packaged MiniLM
(int8 ONNX), so the times are Graphiti's, Kuzu's and the adapter's. Prints a table, writes JSON.

    python benchmarks/graphiti_latency.py [--facts 10000] [--queries 100] [--out PATH]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("GRAPHITI_TELEMETRY_ENABLED", "false")

import numpy as np  # noqa: E402
from langgraph_latency import parse_args, report  # noqa: E402  (benchmarks/, the script's folder)

GROUP = "bench"


class Lookup:
    """Precomputed vectors by text (``encode`` for the graph writer)."""

    def __init__(self, vectors: dict[str, np.ndarray]):
        self.vectors = vectors

    def encode(self, texts):
        return np.asarray([self.vectors[t] for t in texts], dtype=np.float32)


def main() -> None:
    args = parse_args(__doc__, "facts", 10_000, "graphiti_latency")

    from mempursuit_core.embed import get_embedder
    from mempursuit_eval.backends.graphiti import (EncoderEmbedder, build_fulltext,
                                                   open_kuzu_graphiti, write_turns)
    from mempursuit_eval.cache import CachedEmbedder
    from mempursuit_eval.datasets import load_locomo
    from mempursuit_graphiti import MemPursuitGraphiti

    units = [u for kind in ("turns", "observations", "summaries")
             for u in load_locomo(args.data, units=kind).units]
    turns = load_locomo(args.data).units
    texts = [u.text for u in units]
    speakers = [u.speaker or "speaker" for u in units]
    for u in turns[: max(0, args.facts - len(texts))]:
        texts.append("Again: " + u.text)
        speakers.append(u.speaker or "speaker")
    texts, speakers = texts[:args.facts], speakers[:args.facts]
    questions = [q.text for q in load_locomo(args.data).questions][:args.queries]
    names = sorted(set(speakers))
    model = CachedEmbedder(get_embedder(threads=1), os.environ.get("MEMPURSUIT_CACHE"))
    todo = list(dict.fromkeys(texts + questions + names))
    vectors = dict(zip(todo, model.encode(todo)))

    rows: dict[str, list[float]] = {"native top-K": [], "native top-P": [], "wrapped top-K": []}

    async def run(graphiti) -> int:
        facts = [(f"f{i}", s, t, f"s{i // 200}", None) for i, (s, t) in
                 enumerate(zip(speakers, texts))]
        await write_turns(graphiti, GROUP, facts, [vectors[t[2]] for t in facts],
                          {s: vectors[s] for s in names})
        await build_fulltext(graphiti)
        wrapped = MemPursuitGraphiti(graphiti, pool=args.pool)
        reads = {
            "native top-K": lambda q: graphiti.search(q, group_ids=[GROUP], num_results=args.k),
            "native top-P": lambda q: graphiti.search(q, group_ids=[GROUP],
                                                      num_results=args.pool),
            "wrapped top-K": lambda q: wrapped.search(q, group_ids=[GROUP], num_results=args.k),
        }
        for q in questions[:5]:  # warm-up (numba compilation, Kuzu's caches)
            for read in reads.values():
                await read(q)
        for q in questions:
            for name, read in reads.items():
                t = time.perf_counter()
                await read(q)
                rows[name].append(time.perf_counter() - t)
        sizes = [len((await wrapped.edge_pool(q, group_ids=[GROUP])).native)
                 for q in questions[:20]]
        return int(statistics.median(sizes))

    with tempfile.TemporaryDirectory(prefix="graphiti-latency-") as tmp:
        graphiti = open_kuzu_graphiti(Path(tmp) / "graph.kuzu", EncoderEmbedder(Lookup(vectors)))
        pool_size = asyncio.run(run(graphiti))

    timed = {"store": "Graphiti 0.31 on embedded Kuzu (BM25 + cosine, RRF)", "facts": len(texts),
             "queries": len(questions), "k": args.k, "pool": args.pool,
             "median_pool_read": pool_size,
             "embedder": "all-MiniLM-L6-v2-int8 (precomputed; lookup in the timed reads)"}
    report(f"Graphiti on Kuzu, {len(texts)} facts in one group, {len(questions)} queries, "
           f"K={args.k}, P={args.pool} (median pool read: {pool_size})", rows, timed, args.out)



if __name__ == "__main__":
    main()
