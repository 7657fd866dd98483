"""Does following names help dialogue? LoCoMo (turns, plain store, P = 200, K = 10) with the
default as shipped (dialogue stores hand over no titles) and with each turn's speaker handed
over as its ``titles`` signal, so that ``titled`` and ``bridge`` run; complete coverage at the
session and turn level (all questions, and LoCoMo's multi-hop ones at the turn level).

    python benchmarks/locomo_titles_trial.py [LOCOMO_JSON] --native-order hybrid \\
        --out benchmarks/results/eval/locomo_titles_trial.json

Read by benchmarks/readme_tables.py (docs/results.md, *Documents: multi-hop*).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from _common import SHARED_DATA, plain_store  # noqa: E402
from mempursuit_core import DEFAULT_POLICY, get_selector  # noqa: E402
from mempursuit_eval.datasets import load_dataset  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", default=str(SHARED_DATA / "locomo" / "locomo10.json"))
    ap.add_argument("--native-order", default="hybrid", choices=("dense", "hybrid"))
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)

    ds = load_dataset("locomo", args.data, units="turns")
    units = {u.uid: u for u in ds.units}
    store, _ = plain_store(ds.units, args.native_order)
    sel, K = get_selector(DEFAULT_POLICY), args.k
    acc: dict[str, dict[str, list]] = {n: {"session": [], "turn": [], "multi-hop turn": []}
                                       for n in ("as shipped", "speakers as titles")}
    for q in ds.questions:
        if not q.gold_sessions or q.category == "adversarial":
            continue
        pool = store.pool(q.group, q.text, 200)
        speakers = pool.signals.overlay({"titles": [units[u].speaker for u in pool.items]})
        for name, signals in (("as shipped", pool.signals), ("speakers as titles", speakers)):
            order = sel.select(pool.query_vector, pool.vectors, K,
                               native_scores=pool.native_scores, signals=signals).order[:K]
            kept = [units[pool.items[j]] for j in order]
            sessions = {u.session_id for u in kept}
            turns = {t for u in kept for t in u.source_ids}
            acc[name]["session"].append(set(q.gold_sessions) <= sessions)
            if q.gold_turns:
                acc[name]["turn"].append(set(q.gold_turns) <= turns)
                if q.category == "multi-hop":
                    acc[name]["multi-hop turn"].append(set(q.gold_turns) <= turns)
    result = {n: {m: round(100 * float(np.mean(v)), 1) for m, v in a.items()}
              for n, a in acc.items()}
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"native_order": args.native_order, "k": K, "pool": 200,
                                        "questions": len(acc["as shipped"]["session"]),
                                        "coverage": result}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
