"""Research round 6 (issue 63): a second read that never costs. Trials of the read path's
second-read stage and the default's bridge step on three shapes of multi-hop document data, on
the harness's plain store (hybrid native order, P = 200, the packaged MiniLM), each pool read
once and every variant applied to the same pools.

The split, fixed before any trial was run (tune on the first side, report the second):

* 2WikiMultihopQA (the 500-question dev half, one store of 6,119 paragraphs): questions 1-250
  in file order tune, 251-500 are held out (the split of round 5);
* HotpotQA (distractor paragraphs pooled into one store): ``train`` + ``dev`` tune, ``test`` is
  held out;
* MuSiQue (the shared 100 answerable questions, one store of 1,890 paragraphs): the first 50 in
  file order tune, the last 50 are held out.

    python benchmarks/round6_trial.py [--data ../shared/data] [--side tune|held-out]
        [--variants NAME ...] [--out benchmarks/results/eval/documents/round6_trial.json]

Prints complete coverage (every gold paragraph among the first K) at K = 5 and 10 and recall@5,
by question type, for each variant; writes them as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _common import SHARED_DATA, plain_store  # noqa: E402
from mempursuit_core import get_selector  # noqa: E402
from mempursuit_core.follow import follow_up  # noqa: E402
from mempursuit_eval.datasets import load_dataset, select_questions  # noqa: E402

KS = (5, 10)
P = 200


def sides(name: str, questions: list) -> dict[str, list]:
    """The fixed split: ``{"tune": [...], "held-out": [...]}``."""
    if name == "2wikimultihopqa":
        return {"tune": questions[:250], "held-out": questions[250:500]}
    if name == "hotpotqa":
        return {"tune": [q for q in questions if q.meta.get("split") in ("train", "dev")],
                "held-out": [q for q in questions if q.meta.get("split") == "test"]}
    if name == "musique":
        return {"tune": questions[:50], "held-out": questions[50:100]}
    raise ValueError(name)


DATASETS = {"2wikimultihopqa": "2wikimultihopqa", "hotpotqa": "hotpotqa",
            "musique": "musique/train.json"}

#: variant name -> policy spec (a selector built by name and options): round 6's default, each of
#: its three parts off, round 5's default and the two references of the issue
ROUND5 = "cased=false,hub_named=0,defer=false,link_once=false"
VARIANTS: dict[str, str] = {
    "round6": "centered-fusion",
    "round6, cased=false": "centered-fusion:cased=false",
    "round6, hub_named=0": "centered-fusion:hub_named=0",
    "round6, defer=false": "centered-fusion:defer=false",
    "round6, link_once=false": "centered-fusion:link_once=false",
    "round5": f"centered-fusion:{ROUND5}",
    "round5, follow=0": f"centered-fusion:{ROUND5},follow=0",
    "round5, follow=0,bridge=4": f"centered-fusion:{ROUND5},follow=0,bridge=4",
}


def build(spec: str):
    from mempursuit_eval.runner import parse_policy

    name, opts = parse_policy(spec)
    return get_selector(name, **opts)


def read(sel, pool, k: int) -> list[str]:
    first = sel.select(pool.query_vector, pool.vectors, k, native_scores=pool.native_scores,
                       signals=pool.signals)
    got = follow_up(first, pool.query_vector, pool.vectors, k,
                    native_scores=pool.native_scores, signals=pool.signals, items=pool.items)
    uids = list(pool.items) + (list(got.extra.items) if got.extra is not None else [])
    return [uids[i] for i in got.order[:k]]


def evaluate(name: str, data: Path, side: str, variants: dict[str, str]) -> dict:
    ds = load_dataset(name, data / DATASETS[name])
    questions = sides(name, select_questions(ds))[side]
    units = {u.uid: u for u in ds.units}
    store, embedder = plain_store(ds.units, threads=1)
    qvecs = embedder.encode([q.text for q in questions])
    pools = [store.pool(q.group, q.text, P, query_vector=v) for q, v in zip(questions, qvecs)]
    out: dict[str, Any] = {"questions": len(questions)}
    for label, spec in variants.items():
        sel = build(spec)
        rows: dict[str, list] = {}
        for q, pool in zip(questions, pools):
            gold = set(q.gold_sessions)
            chosen = read(sel, pool, max(KS))
            got = [units[u].session_id for u in chosen]
            rec = {f"cc@{k}": float(gold <= set(got[:k])) for k in KS}
            rec["r@5"] = len(gold & set(got[:5])) / len(gold)
            for cat in ("all", q.category):
                rows.setdefault(cat, []).append(rec)
        out[label] = {cat: {m: 100 * float(np.mean([r[m] for r in recs])) for m in recs[0]}
                      | {"n": len(recs)} for cat, recs in rows.items()}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=SHARED_DATA)
    ap.add_argument("--side", choices=("tune", "held-out"), default="tune")
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--variants", nargs="+", default=None,
                    help="NAME=SPEC pairs or names of VARIANTS (default all)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    variants = dict(VARIANTS)
    if args.variants:
        variants = {}
        for v in args.variants:  # NAME=SPEC, SPEC a policy (NAME may hold "=" too)
            at = v.rfind("=centered-fusion")
            if at >= 0:
                variants[v[:at]] = v[at + 1:]
            else:
                variants[v] = VARIANTS.get(v, v)
    results = {}
    for name in args.datasets:
        res = evaluate(name, args.data, args.side, variants)
        results[name] = res
        print(f"\n{name} ({args.side}, {res['questions']} questions): cc@5 / cc@10 / r@5")
        cats = [c for c in next(v for k, v in res.items() if k != "questions")]
        for label in variants:
            cells = "  ".join(f"{c}: {res[label][c]['cc@5']:.1f}/{res[label][c]['cc@10']:.1f}/"
                              f"{res[label][c]['r@5']:.1f} (n={res[label][c]['n']})"
                              for c in cats)
            print(f"  {label:<40} {cells}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"side": args.side, "results": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
