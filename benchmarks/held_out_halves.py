"""README tables for the tuning and held-out halves of BEAM and LongMemEval-S.

Some of the default's (``centered-fusion``, measured then under its earlier label
``pursuit-center``) parameters were chosen on the even-positioned questions of these
two datasets (``benchmarks/results/eval/tuning_halves.json`` lists them); this prints, for
``mempursuit eval`` run directories that still hold their ``questions.jsonl``, each half's
complete coverage at K = 10 and 20 with the paired difference to ``native`` and the exact
McNemar p-value, and writes them as JSON with ``--out``.

    python benchmarks/held_out_halves.py runs/beam-dense runs/lme-hybrid \\
        --policies centered-fusion centered-fusion:spread=0 --out halves.json

``--split benchmarks/results/eval/round3_split.json`` scores the sides of the next round's split
instead (``{dataset: {"tuning": [ids], "held_out": [ids]}}``, from ``held_out_split.py``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
from readme_tables import METRICS, cell  # noqa: E402
from mempursuit_eval.metrics import paired_comparison  # noqa: E402

HALVES = Path(__file__).resolve().parent / "results" / "eval" / "tuning_halves.json"


def halves(run: Path, policies: list[str] | None, ks=("10", "20"), split: Path | None = None
           ) -> dict:
    summary = json.loads((run / "summary.json").read_text())
    if split is None:
        tuning = set(json.loads(HALVES.read_text())[summary["dataset"]])
        sides = (("tuning (even)", True), ("held out (odd)", False))
    else:
        tuning = set(json.loads(split.read_text())[summary["dataset"]]["tuning"])
        sides = (("tuning", True), ("held out", False))
    rows = [json.loads(line) for line in (run / "questions.jsonl").open()]
    rows = [r for r in rows if r["gold_turns"]]
    names = policies or [p for p in rows[0]["metrics"] if p != "native"]
    out = {"dataset": summary["dataset"], "native_order": summary["native_order"],
           "pool": summary.get("pool"), "halves": {}}
    for half, keep in sides:
        sub = [r for r in rows if (r["qid"] in tuning) == keep]
        table = {}
        for name in ["native"] + names:
            cells = {}
            for k in ks:
                for metric, level in METRICS:
                    a = np.array([r["metrics"][name][k][metric] for r in sub], dtype=float)
                    b = np.array([r["metrics"]["native"][k][metric] for r in sub], dtype=float)
                    ok = ~(np.isnan(a) | np.isnan(b))
                    # the statistics mempursuit eval writes to summary.json, on this half
                    cells[f"{level} K={k}"] = paired_comparison(a[ok], b[ok], binary=True)
            table[name] = cells
        out["halves"][half] = {"n": len(sub), "rows": table}
    return out


def markdown(result: dict) -> str:
    lines = []
    for half, data in result["halves"].items():
        rows = data["rows"]
        cols = list(rows["native"])
        lines += [f"**{result['dataset']}**, {result['native_order']} native order, {half}, "
                  f"{data['n']} questions", "", "| policy | " + " | ".join(cols) + " |",
                  "|---|" + "---:|" * len(cols)]
        for name, cells in rows.items():
            shown = [cell(None if name == "native" else c, c["policy"]) for c in cells.values()]
            lines.append(f"| {name} | " + " | ".join(shown) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--policies", nargs="*", default=None)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--k", nargs="+", default=["10", "20"], help="cut-offs to score (default 10 20)")
    ap.add_argument("--split", type=Path, default=None,
                    help="a {dataset: {tuning, held_out}} split file instead of the halves")
    args = ap.parse_args(argv)
    results = [halves(run, args.policies, ks=tuple(args.k), split=args.split) for run in args.runs]
    print("\n".join(markdown(r) for r in results))
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
