"""Time a LoCoMo retrieval-only paired run from a cold and from a warm cache.

    python benchmarks/eval_locomo_speed.py [--data ../shared/data/locomo/locomo10.json]

The run is the issue's speed case: 1,540 questions (categories 1-4), dialogue-turn store
(plain, exact), MiniLM int8 embedder, pool 200, policies native + mempursuit, K = 10 20 50 100.
"Cold" uses a fresh cache directory (every turn and question is embedded); "warm" repeats the
run on that cache (a new process each time, so imports and numba loading are included).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def run(args, cache: str, out: str) -> tuple[float, dict]:
    cmd = [sys.executable, "-m", "mempursuit_core", "eval", "--dataset", "locomo",
           "--k", "10", "20", "50", "100", "--policies", "native", "mempursuit",
           "--pool", "200", "--cache-dir", cache, "--out", out, "--quiet", "--no-plots"]
    if args.data:
        cmd += ["--data", args.data]
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    with open(os.path.join(out, "summary.json")) as f:
        return wall, json.load(f)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=None)
    ap.add_argument("--warm-runs", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "cache")
        wall, s = run(args, cache, os.path.join(tmp, "cold"))
        print(f"cold: {wall:.1f} s wall (in-run: {json.dumps({k: round(v, 2) for k, v in s['timing_s'].items() if isinstance(v, float)})})")
        for i in range(args.warm_runs):
            wall, s = run(args, cache, os.path.join(tmp, f"warm{i}"))
            print(f"warm: {wall:.1f} s wall (embedding cache misses {s['embedding_cache']['misses']})")
        print(f"questions {s['n_questions']}, scored {s['n_scored']}, load average {os.getloadavg()}")
        for p in s["policies"]:
            row = [f"{s['results'][p][k]['overall']['complete_coverage']:.1f}" for k in ("10", "20", "50", "100")]
            print(f"{p:12s} complete coverage @10/20/50/100: {' / '.join(row)}")


if __name__ == "__main__":
    main()
