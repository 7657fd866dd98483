"""A fixed order of LongMemEval-S questions, so that every prefix is a stratified sample.

Embedding LongMemEval-S's 189k unique turns takes over an hour on two cores, so round 3 first
scored LongMemEval-S on a prefix of this order (whatever was embedded), not on a hand-picked
subset; the committed round-3 runs use all of it.
The order interleaves the two sides of ``round3_split.json`` (held-out, tuning, held-out, ...)
and, within a side, deals question types round-robin, each type shuffled with a fixed seed.

    python benchmarks/lme_question_order.py      # writes benchmarks/results/eval/round3_lme_order.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from itertools import chain, zip_longest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _deal(qids: list[str], types: dict[str, str], rng: random.Random) -> list[str]:
    by_type: dict[str, list[str]] = {}
    for q in sorted(qids):
        by_type.setdefault(types[q], []).append(q)
    for t in sorted(by_type):
        rng.shuffle(by_type[t])
    return [q for q in chain.from_iterable(zip_longest(*(by_type[t] for t in sorted(by_type))))
            if q is not None]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path,
                    default=ROOT.parent / "shared" / "data" / "longmemeval" / "longmemeval_s.json.gz")
    ap.add_argument("--split", type=Path,
                    default=ROOT / "benchmarks" / "results" / "eval" / "round3_split.json")
    ap.add_argument("--out", type=Path,
                    default=ROOT / "benchmarks" / "results" / "eval" / "round3_lme_order.json")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    with gzip.open(args.data, "rt") as f:
        types = {q["question_id"]: q["question_type"] for q in json.load(f)}
    split = json.loads(args.split.read_text())["longmemeval"]
    rng = random.Random(args.seed)
    held, tune = _deal(split["held_out"], types, rng), _deal(split["tuning"], types, rng)
    order = [q for q in chain.from_iterable(zip_longest(held, tune)) if q is not None]
    out = {"about": __doc__.split("\n\n")[1].replace("\n", " "), "seed": args.seed,
           "order": [{"qid": q, "side": "held_out" if q in set(split["held_out"]) else "tuning",
                      "type": types[q]} for q in order]}
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}: {len(order)} questions")


if __name__ == "__main__":
    main()
