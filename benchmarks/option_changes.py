"""What a ``centered-fusion`` option (``--policy``, e.g. ``centered-fusion:aspects=1``) changes
against today's default, question by question.

For ``mempursuit eval`` run directories that still hold their ``questions.jsonl`` and ran both
policies on the same pools, counts the questions it newly covers less those it loses (complete
coverage, session and turn level) at each K, on each side of the round-3 split (LoCoMo: the turns
store tunes, the observations store is held out), and writes them as JSON. A LongMemEval-S run
may hold only the questions the option can change (``option_runs.sh``): every other
question's order is the default's, so the counts are the whole set's; ``whole`` is the number of
scored questions of the whole set, for points.

    python benchmarks/option_changes.py RUN... --policy centered-fusion:aspects=1 \\
        --out benchmarks/results/eval/round3/aspects.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

SPLIT = Path(__file__).resolve().parent / "results" / "eval" / "round3_split.json"
BASE = "centered-fusion"
WHOLE = {"longmemeval": 469}  # scored LongMemEval-S questions (the runs take those that can change)
LEVELS = (("complete_coverage", "session"), ("turn_coverage", "turn"))


def changes(run: Path, split: dict, policy: str) -> dict:
    config = json.loads((run / "config.json").read_text())
    summary = json.loads((run / "summary.json").read_text())
    dataset = summary["dataset"]
    rows = [json.loads(line) for line in (run / "questions.jsonl").open()]
    rows = [r for r in rows if r["metrics"]]
    if dataset == "locomo":
        side = {"turns": "tuning"}.get(config.get("units", "turns"), "held out")
        side_of = lambda r: side  # noqa: E731
    else:
        tuning = set(split[dataset]["tuning"])
        side_of = lambda r: "tuning" if r["qid"] in tuning else "held out"  # noqa: E731
    out = {"run": run.name, "dataset": dataset, "native_order": summary["native_order"],
           "pool": summary.get("pool"), "questions": len(rows),
           "whole": WHOLE.get(dataset, len(rows)), "sides": {}}
    for r in rows:
        s = out["sides"].setdefault(side_of(r), {"n": 0, "changed": {}})
        s["n"] += 1
        for k, new in r["metrics"][policy].items():
            old = r["metrics"][BASE][k]
            for metric, level in LEVELS:
                c = s["changed"].setdefault(f"{level} K={k}", {"won": 0, "lost": 0})
                d = new[metric] - old[metric]
                c["won"] += d > 0
                c["lost"] += d < 0
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--policy", required=True, help="the policy with its option, as run")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    split = json.loads(SPLIT.read_text())
    result = {"policy": args.policy, "against": BASE,
              "runs": [changes(r, split, args.policy) for r in args.runs]}
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for r in result["runs"]:
        for side, s in r["sides"].items():
            net = {k: v["won"] - v["lost"] for k, v in s["changed"].items()}
            print(r["run"], side, s["n"], " ".join(f"{k}:{v:+d}" for k, v in net.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
