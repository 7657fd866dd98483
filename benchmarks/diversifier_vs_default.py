"""The default against each diversifier on the same questions (docs/results.md, "Diversifiers a
user would pick instead").

``mempursuit eval`` pairs every policy with ``native``; this pairs ``centered-fusion`` with each
other policy of a run, question by question, from the run's ``questions.jsonl`` (the exact
McNemar test on complete coverage at the session and turn level, every K of the run, as
``summary.json``'s paired statistics), and writes ``vs_default.json`` beside the summary, so the
committed run can drop its per-question file. ``benchmarks/diversifier_runs.sh`` calls it.

    python benchmarks/diversifier_vs_default.py benchmarks/results/eval/diversifiers/locomo-dense
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1])]
from readme_tables import DEFAULT, METRICS  # noqa: E402
from mempursuit_eval.metrics import paired_comparison  # noqa: E402


def vs_default(run: Path, ks=None) -> dict:
    """``{"n": questions, "default": DEFAULT, "vs": {policy: {"K": {metric: paired}}}}``: the
    default minus each policy (``diff`` > 0: the default is ahead)."""
    rows = [json.loads(line) for line in (run / "questions.jsonl").open()]
    rows = [r for r in rows if r["gold_turns"]]
    out: dict = {"n": len(rows), "default": DEFAULT, "vs": {}}
    ks = ks or list(rows[0]["metrics"][DEFAULT])  # every K of the run
    for name in rows[0]["metrics"]:
        if name in (DEFAULT, "native"):
            continue
        by_k = {}
        for k in ks:
            cells = {}
            for metric, _ in METRICS:
                a = np.array([r["metrics"][DEFAULT][k][metric] for r in rows], dtype=float)
                b = np.array([r["metrics"][name][k][metric] for r in rows], dtype=float)
                ok = ~(np.isnan(a) | np.isnan(b))
                cells[metric] = paired_comparison(a[ok], b[ok], binary=True)
            by_k[k] = cells
        out["vs"][name] = by_k
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="run directories with questions.jsonl")
    args = ap.parse_args(argv)
    for run in args.runs:
        path = run / "vs_default.json"
        path.write_text(json.dumps(vs_default(run), indent=1) + "\n")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
