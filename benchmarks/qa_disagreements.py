"""Questions where session coverage and the answer's F1 disagree, with both contexts.

    python benchmarks/qa_disagreements.py [REPORT.json] [--n 10] [--out docs/qa-disagreements.md]

Reads the report of ``benchmarks/qa_locomo_small_llm.py`` (default
``benchmarks/results/qa_locomo_small_llm.json``; it must carry each policy's memories, i.e. be
written by the script since issue 37) and lists, per native order, the questions where a policy
and native move coverage and the official LoCoMo F1 in opposite directions: coverage up and F1
down, or coverage down and F1 up. Coverage is complete session coverage; where it ties, session
recall, then turn recall decide the direction. The ``n`` with the largest F1 change are
shown (ties: by question id); when fewer than ``n`` disagree, the page goes on with questions
where F1 moved but no coverage measure did. Each comes with both contexts: the K memories native and the
policy showed the answerer, oldest first as the prompt shows them, gold-session memories marked.
``benchmarks/readme_tables.py`` writes the same page from the committed report.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from qa_locomo_small_llm import shown_command  # noqa: E402  (the same display of a command)

ROOT = Path(__file__).resolve().parents[1]
#: The 160-question run (issue 37) when it is there, else the earlier 40-question sample.
REPORTS = (ROOT / "benchmarks" / "results" / "qa_locomo_small_llm_n160.json",
           ROOT / "benchmarks" / "results" / "qa_locomo_small_llm.json")
REPORT = next((p for p in REPORTS if p.exists()), REPORTS[-1])
DOC = ROOT / "docs" / "qa-disagreements.md"


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


#: Coverage measures in the order they decide a direction (the first that differs).
LEVELS = ("coverage", "session_recall", "turn_recall")


def coverage_change(a: dict, b: dict) -> tuple[float, str | None]:
    """``(change, measure)``: policy ``a`` minus native ``b`` at the first of :data:`LEVELS`
    that differs; ``(0.0, None)`` when none does."""
    for level in LEVELS:
        x, y = a.get(level), b.get(level)
        if x is not None and y is not None and x != y:
            return x - y, level
    return 0.0, None


def candidates(rep: dict, base: str = "native") -> list[dict]:
    """Every (question, policy) pair both sides answered (no failed request), with its
    coverage change, the measure that decided it and the official F1 change."""
    rows = []
    for r in rep["results"]:
        for q in r.get("questions") or []:
            for p in r["policies"]:
                if p == base or p not in q or "memories" not in q[p]:
                    continue
                a, b = q[p], q[base]
                if a.get("failed") or b.get("failed") or a.get("coverage") is None \
                        or b.get("coverage") is None:
                    continue
                cov, level = coverage_change(a, b)
                rows.append({"order": r["native_order"], "policy": p, "question": q,
                             "cov": cov, "level": level,
                             "f1": a["official"]["f1"] - b["official"]["f1"]})
    rows.sort(key=lambda x: (-abs(x["f1"]), x["order"], x["question"]["id"], x["policy"]))
    return rows


def disagreements(rep: dict, n: int = 10, base: str = "native") -> list[dict]:
    """Up to ``n`` rows ``{"order", "policy", "question", "cov", "level", "f1"}`` where coverage
    and F1 move in opposite directions, largest ``|F1 change|`` first."""
    return [x for x in candidates(rep, base) if _sign(x["cov"]) * _sign(x["f1"]) < 0][:n]


def unchanged(rep: dict, n: int, base: str = "native") -> list[dict]:
    """Up to ``n`` rows where F1 moved but no coverage measure did (the same evidence, a
    different answer), largest ``|F1 change|`` first."""
    return [x for x in candidates(rep, base) if x["level"] is None and x["f1"] != 0][:n]


def _context(side: dict, gold: set) -> list[str]:
    k = len(side["memories"])
    mems = zip(side["memories"], side.get("memory_sessions") or [None] * k,
               side.get("memory_ranks") or [None] * k)
    return [f"{i}. {'**[gold session]** ' if s in gold else ''}"
            f"{f'(pick {r}) ' if r else ''}{' '.join(str(t).split())}"
            for i, (t, s, r) in enumerate(mems, 1)]


def disagreements_doc(rep: dict, n: int = 10, base: str = "native",
                      source: str = "benchmarks/results/qa_locomo_small_llm.json") -> str | None:
    """The markdown page, or ``None`` when the report carries no memories (older reports)."""
    if not any(r.get("questions") and "memories" in r["questions"][0].get(base, {})
               for r in rep["results"]):
        return None
    rows = disagreements(rep, n, base)
    total = len(disagreements(rep, 10 ** 9, base))
    fill = unchanged(rep, n - len(rows), base) if len(rows) < n else []
    lines = [
        "# QA: where coverage and answers disagree", "",
        "Generated by `python benchmarks/readme_tables.py` (or `benchmarks/qa_disagreements.py`) "
        f"from `{source}`; do not edit by hand. "
        f"Run: `{shown_command(rep.get('command', ''))}`, model `{rep.get('model')}`, "
        f"K={rep.get('k')}, "
        f"n={rep.get('n')}.", "",
        "A row is a question both policies answered (no failed request) where a policy and "
        "native move coverage and the official LoCoMo F1 of the answer in opposite directions. "
        "Coverage is complete session coverage; where it ties, session recall, then turn recall "
        f"(the evidence turns kept) decide. {total} such (question, policy) pairs in this run; "
        f"the {len(rows)} with the largest F1 change are shown"
        + (f", then {len(fill)} where F1 moved but no coverage measure did" if fill else "")
        + ". Both contexts are shown as the answerer saw them (oldest first, dated; **[gold "
        "session]** marks a memory from a session that holds the evidence; *pick n*: its rank "
        "in the policy's selection).", "",
    ]
    if not rows:
        lines += ["No question in this run has coverage and F1 moving in opposite directions.",
                  ""]
    for i, row in enumerate(rows + fill, 1):
        q, p = row["question"], row["policy"]
        a, b = q[p], q[base]
        gold = set(q.get("gold_sessions") or [])
        if i == len(rows) + 1:
            lines += ["## Same coverage, different answer", ""]
        moved = (f"{row['level'].replace('_', ' ')} {b[row['level']]:.2f} -> "
                 f"{a[row['level']]:.2f}" if row["level"] else "no coverage measure moved")
        lines += [
            f"### {i}. {q['id']} ({q['category']}; {row['order']} order; {p} vs {base})", "",
            f"- question: {q.get('question') or '(not in the report)'}",
            f"- gold answer: {q['gold']}",
            f"- coverage: {moved} (complete session coverage {b['coverage']:.0f} -> "
            f"{a['coverage']:.0f}); official F1 {b['official']['f1']:.2f} -> "
            f"{a['official']['f1']:.2f}",
            f"- {base} answered: {b['answer']}",
            f"- {p} answered: {a['answer']}",
            "", f"{base}'s context:", "", *_context(b, gold),
            "", f"{p}'s context:", "", *_context(a, gold), "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report", nargs="?", type=Path, default=REPORT)
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--out", type=Path, default=DOC)
    args = ap.parse_args(argv)
    try:
        rep = json.loads(args.report.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"qa_disagreements: cannot read {args.report}: {exc}", file=sys.stderr)
        return 2
    try:
        source = str(args.report.resolve().relative_to(ROOT))
    except ValueError:
        source = str(args.report)
    doc = disagreements_doc(rep, args.n, source=source)
    if doc is None:
        print(f"qa_disagreements: {args.report} has no per-question memories (written before "
              "issue 37): rerun benchmarks/qa_locomo_small_llm.py (cached replies cost nothing)",
              file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(doc, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
