"""What the second read costs: the default with and without it (``follow=0``) on the same
pools, one thread, timed one read at a time, in one run (the ratio is the figure; absolute
times on a shared machine are noisy). Pools: 2WikiMultihopQA's dev half on the harness's plain
store (hybrid order, P = 200, the packaged MiniLM, the paragraphs' titles and the store's title
lookup), K = 5 and 10. Each read is timed on a fresh pool (no signal or derived value of a
pool is reused), best of 3; what the core keeps per text across reads (each text's words, its
lower-cased form, the titles it names: bounded caches, as in a store's steady state, where
memories recur across queries) is warm after the first.

    python benchmarks/second_read_latency.py [DATA_DIR/2wikimultihopqa] \\
        --out benchmarks/results/eval/documents/second_read_latency.json

Read by benchmarks/documents_report.py (docs/results-documents.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from _common import SHARED_DATA, plain_store  # noqa: E402
from mempursuit_core import get_selector  # noqa: E402
from mempursuit_core.follow import follow_up  # noqa: E402
from mempursuit_eval.datasets import load_dataset  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", default=str(SHARED_DATA / "2wikimultihopqa"))
    ap.add_argument("--pool", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)

    ds = load_dataset("2wikimultihopqa", args.data)
    store, embedder = plain_store(ds.units, threads=1)
    qvecs = embedder.encode([q.text for q in ds.questions])
    reads = {"with the second read": get_selector("centered-fusion"),
             "follow=0": get_selector("centered-fusion", follow=0)}
    rows = []
    for k in (5, 10):
        times = {name: [] for name in reads}
        for q, v in zip(ds.questions, qvecs):
            for name, sel in reads.items():
                best = np.inf
                for _ in range(args.repeats):  # a fresh pool each time: no signal cached
                    pool = store.pool(q.group, q.text, args.pool, query_vector=v)
                    t0 = time.perf_counter()
                    follow_up(sel.select(pool.query_vector, pool.vectors, k,
                                         native_scores=pool.native_scores, signals=pool.signals),
                              pool.query_vector, pool.vectors, k,
                              native_scores=pool.native_scores, signals=pool.signals,
                              items=pool.items)
                    best = min(best, time.perf_counter() - t0)
                times[name].append(1e3 * best)
        base = float(np.median(times["follow=0"]))
        for name, t in times.items():
            rows.append({"read": name, "k": k, "median_ms": float(np.median(t)),
                         "p95_ms": float(np.percentile(t, 95)),
                         "ratio_to_follow0": float(np.median(t)) / base})
    print(f"P={args.pool}, {len(ds.questions)} 2Wiki questions, one thread, best of "
          f"{args.repeats}")
    for r in rows:
        print(f"K={r['k']:<3d} {r['read']:22s} median {r['median_ms']:6.3f} ms  p95 "
              f"{r['p95_ms']:6.3f} ms  x{r['ratio_to_follow0']:.2f}")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"pool": args.pool, "queries": len(ds.questions),
                                        "machine": platform.platform(), "rows": rows},
                                       indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
