"""Why the paper's rule loses on documents: HotpotQA tuning questions (train + dev, pooled
store, hybrid native order, P = 200) whose two gold paragraphs are both in the native top 5
and in the default's, but not in the paper's rule's; each pick's title and cosine to the query.

    python benchmarks/hotpotqa_examples.py [DATA_DIR] \\
        --out benchmarks/results/eval/hotpotqa/examples.json

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
    ap.add_argument("data", nargs="?", default=str(SHARED_DATA / "hotpotqa"))
    ap.add_argument("--examples", type=int, default=3)
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)

    ds = load_dataset("hotpotqa", args.data)
    units = {u.uid: u for u in ds.units}
    store, _ = plain_store(ds.units)
    rule, default = get_selector("mempursuit"), get_selector(DEFAULT_POLICY)
    K, found = args.top, []
    for q in ds.questions:
        if q.meta.get("split") not in ("train", "dev"):
            continue
        pool = store.pool(q.group, q.text, 200)
        gold = set(q.gold_sessions)
        picks = {"native": list(range(K))}
        for name, sel in (("mempursuit", rule), (DEFAULT_POLICY, default)):
            picks[name] = sel.select(pool.query_vector, pool.vectors, K,
                                     native_scores=pool.native_scores,
                                     signals=pool.signals).order[:K].tolist()
        kept = {n: {pool.items[j] for j in p} for n, p in picks.items()}
        if not (gold <= kept["native"] and gold <= kept[DEFAULT_POLICY]
                and not gold <= kept["mempursuit"]):
            continue
        cos = pool.vectors @ pool.query_vector / np.linalg.norm(pool.vectors, axis=1)
        found.append({"question": q.text, "gold": [units[g].title for g in q.gold_sessions],
                      **{n: [[units[pool.items[j]].title, round(float(cos[j]), 2)] for j in p]
                         for n, p in picks.items()}})
        if len(found) == args.examples:
            break
    print(json.dumps(found, indent=1, ensure_ascii=False))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"native_order": "hybrid", "pool": 200, "top": K,
                                        "split": "train,dev", "examples": found}, indent=1,
                                       ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
