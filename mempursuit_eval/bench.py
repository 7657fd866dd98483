"""Latency benchmark: ``mempursuit bench`` (a command of the harness's plugin) prints a table
and writes JSON.

Times :func:`mempursuit_core.select` on one thread (float32 and float64) over a grid of pool
sizes, budgets and dimensions on clustered pools with near-duplicates; in the same run, a
straightforward implementation of the published approach (full ``P x P`` Gram, one Python-level
step per pick, exact QP refit); the batch form's throughput on 1 and N threads; and the numba
compile cost with a cold and a warm on-disk cache (fresh processes).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from mempursuit_core._reference import select_reference
from mempursuit_core.pursuit import select, select_batch


def clustered_pool(P: int, d: int, rng: np.random.Generator, *, facts: int = 4):
    """A pool that looks like a memory store: fact clusters of paraphrases and near-duplicates.

    Returns ``(query, candidates)`` with candidates of shape (P, d), float64, unit rows. The
    query mixes ``facts`` cluster centres; about a third of the pool is near-duplicates.
    """
    n_clusters = max(facts + 1, P // 10)
    centres = rng.standard_normal((n_clusters, d))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    owner = rng.integers(0, n_clusters, size=P)
    owner[:n_clusters] = np.arange(min(n_clusters, P))
    noise = np.where(rng.random(P) < 0.35, 0.02, 0.35)[:, None]  # near-duplicates / paraphrases
    M = centres[owner] + noise * rng.standard_normal((P, d)) / np.sqrt(d)
    M /= np.linalg.norm(M, axis=1, keepdims=True)
    q = centres[:facts].sum(axis=0) + 0.5 * rng.standard_normal(d) / np.sqrt(d)
    return q / np.linalg.norm(q), M


def _time(fn, *, min_reps=15, max_reps=400, budget_s=0.4):
    fn()  # warm (compilation and caches)
    times = []
    start = time.perf_counter()
    while len(times) < max_reps and (len(times) < min_reps or time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    arr = np.array(times) * 1e3
    return float(np.median(arr)), float(np.percentile(arr, 95)), len(times)


_COMPILE_SNIPPET = (
    "import time, numpy as np; t0 = time.perf_counter(); "
    "from mempursuit_core import select, select_batch; "
    "rng = np.random.default_rng(0); M = rng.standard_normal((50, 16)).astype(np.float32); "
    "t1 = time.perf_counter(); select(M[0] + 0.1, M, 5); t2 = time.perf_counter(); "
    "select(M[1] + 0.1, M, 5); t3 = time.perf_counter(); "
    "select_batch([M[0], M[1]], [M, M], 5); t4 = time.perf_counter(); "
    "print((t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3, (t4 - t3) * 1e3)"
)


def compile_cost() -> dict:
    """First-call cost in fresh processes: empty numba cache, then the cache it wrote."""
    out = {}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, NUMBA_NUM_THREADS="1")
        for label in ("cold_cache", "warm_cache"):
            res = subprocess.run([sys.executable, "-c", _COMPILE_SNIPPET], env=env,
                                 capture_output=True, text=True, check=True)
            imp, first, second, batch = map(float, res.stdout.split())
            out[label] = {"import_ms": imp, "first_call_ms": first, "second_call_ms": second,
                          "first_batch_call_ms": batch}
    return out


def run(*, quick: bool = False, threads: int | None = None, out: str | Path | None = None,
        reference: bool = True, seed: int = 0, echo=print) -> dict:
    """Run the benchmark; returns the results dict (also written as JSON to ``out``)."""
    import numba

    rng = np.random.default_rng(seed)
    n_threads = threads or numba.config.NUMBA_NUM_THREADS
    Ps = (100, 200) if quick else (100, 200, 500, 1000)
    Ks = (10, 20) if quick else (10, 20, 50, 100)
    ds = (384, 1536)
    rows = []
    numba.set_num_threads(1)
    echo(f"{'d':>5} {'P':>5} {'K':>4} {'dtype':>7} {'median ms':>10} {'p95 ms':>8} "
         f"{'full-Gram ms':>12} {'speed-up':>8}")
    for d in ds:
        for P in Ps:
            q, M64 = clustered_pool(P, d, rng)
            for K in Ks:
                if K > P:
                    continue
                ref_ms = None
                if reference and (P, K) in {(100, 10), (200, 20), (500, 50)}:
                    ref_ms, _, _ = _time(lambda: select_reference(q, M64, K), min_reps=5,
                                         max_reps=30, budget_s=1.5)
                for dtype in (np.float32, np.float64):
                    M = M64.astype(dtype)
                    med, p95, reps = _time(lambda: select(q, M, K))
                    row = dict(d=d, P=P, K=K, dtype=np.dtype(dtype).name, median_ms=med,
                               p95_ms=p95, reps=reps, full_gram_ms=ref_ms,
                               speedup=(ref_ms / med) if ref_ms else None)
                    rows.append(row)
                    echo(f"{d:>5} {P:>5} {K:>4} {row['dtype']:>7} {med:>10.3f} {p95:>8.3f} "
                         f"{(f'{ref_ms:.2f}' if ref_ms else '-'):>12} "
                         f"{(f'{ref_ms / med:.1f}x' if ref_ms else '-'):>8}")
    # Batch throughput: B queries with their own pools, P=200, K=20, d=1536, float32.
    B = 64 if quick else 256
    pools, queries = [], []
    for _ in range(B):
        q, M = clustered_pool(200, 1536, rng)
        pools.append(M.astype(np.float32))
        queries.append(q)
    batch = {}
    for th in sorted({1, n_threads}):
        med, _, _ = _time(lambda: select_batch(queries, pools, 20, threads=th), min_reps=3,
                          max_reps=20, budget_s=2.0)
        batch[th] = B / (med / 1e3)
    echo("")
    echo("batch (P=200, K=20, d=1536, float32): " + ", ".join(
        f"{th} thread{'s' if th > 1 else ''}: {qps:,.0f} queries/s" for th, qps in batch.items()))
    if len(batch) > 1:
        echo(f"parallel scaling: {batch[n_threads] / batch[1]:.2f}x on {n_threads} threads")
    jit = compile_cost()
    echo("numba compile, fresh process: "
         f"empty cache {jit['cold_cache']['first_call_ms']:.0f} ms, "
         f"warm cache {jit['warm_cache']['first_call_ms']:.0f} ms "
         f"(import {jit['warm_cache']['import_ms']:.0f} ms; first select_batch call "
         f"{jit['warm_cache']['first_batch_call_ms']:.0f} ms)")
    result = {
        "machine": {"platform": platform.platform(), "processor": platform.processor(),
                    "python": platform.python_version(), "cpus": os.cpu_count(),
                    "numba": numba.__version__, "numpy": np.__version__},
        "latency": rows,
        "batch_queries_per_s": {str(k): v for k, v in batch.items()},
        "jit": jit,
    }
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(result, indent=2))
        echo(f"wrote {out}")
    return result


def _cmd_bench(args) -> int:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # the full-Gram baseline may then use several BLAS threads
        threadpool_limits = None
    if threadpool_limits is not None:
        with threadpool_limits(1):
            run(quick=args.quick, threads=args.threads, out=args.out,
                reference=not args.no_reference)
    else:
        run(quick=args.quick, threads=args.threads, out=args.out, reference=not args.no_reference)
    return 0


def add_bench_parser(subparsers) -> None:
    """``mempursuit bench``."""
    p = subparsers.add_parser("bench", help="latency benchmark: prints a table, writes JSON")
    p.add_argument("--out", default=None,
                   help="JSON output path (default: no file, the table only)")
    p.add_argument("--quick", action="store_true", help="a small grid (seconds)")
    p.add_argument("--threads", type=int, default=None, help="threads for the batch form")
    p.add_argument("--no-reference", action="store_true", help="skip the full-Gram baseline")
    p.set_defaults(func=_cmd_bench)
