"""The held-out split for the next round of policy research, fixed before any tuning.

    python benchmarks/held_out_split.py [--data ../shared/data] [--out benchmarks/results/eval/round3_split.json]

The even / odd question halves of BEAM and LongMemEval-S are spent (the even halves chose
``spread`` and the lexical weight; the odd halves were looked at as held-out numbers), and every
LoCoMo conversation was used for tuning. This split cuts along other lines:

* LoCoMo: tune on the turns store (``--units turns``); hold out the extracted-facts store
  (``--units observations``), which no parameter has seen.
* BEAM-100K: tune on chats 1-10; hold out chats 11-20 (whole conversations, so no held-out
  question shares a memory store with a tuning one).
* LongMemEval-S: tune on the temporal-reasoning and single-session types; hold out the
  multi-session and knowledge-update questions.

A policy becomes the default only if it also wins on the held-out side; report both sides
separately. The file lists the question ids of each side, so the split cannot drift.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from mempursuit_eval.datasets import load_dataset, select_questions  # noqa: E402

BEAM_HELD_OUT_CHATS = {str(i) for i in range(11, 21)}
LME_HELD_OUT_TYPES = {"multi-session", "knowledge-update"}


def split(data: Path) -> dict:
    out = {"about": __doc__.split("\n\n", 2)[2].strip()}
    beam = select_questions(load_dataset("beam", data / "beam" / "100K"))
    out["beam"] = {"tuning": sorted(q.qid for q in beam if q.group not in BEAM_HELD_OUT_CHATS),
                   "held_out": sorted(q.qid for q in beam if q.group in BEAM_HELD_OUT_CHATS)}
    lme = select_questions(load_dataset("longmemeval", data / "longmemeval" / "longmemeval_s.json.gz"))
    out["longmemeval"] = {
        "tuning": sorted(q.qid for q in lme if q.category not in LME_HELD_OUT_TYPES),
        "held_out": sorted(q.qid for q in lme if q.category in LME_HELD_OUT_TYPES)}
    out["locomo"] = {"tuning": "--units turns (all questions)",
                     "held_out": "--units observations (all questions)"}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "eval" / "round3_split.json")
    args = ap.parse_args()
    result = split(args.data)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for name in ("beam", "longmemeval"):
        print(f"{name}: {len(result[name]['tuning'])} tuning, {len(result[name]['held_out'])} held out")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
