"""The QA benchmark's report code (benchmarks/qa_locomo_small_llm.py, qa_disagreements.py) on a
small fake run built here: official scores, paired tests on per-question F1, failed requests
left out of the pairs, and the coverage / F1 disagreement page with both contexts."""

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("scipy", reason="the paired Wilcoxon test needs SciPy (the [test] extra)")

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name):
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(BENCH))


QA = _load("qa_locomo_small_llm")
DIS = _load("qa_disagreements")
P = ("native", "centered-fusion")
TEXTS = {f"u{i}": (f"memory {i}", f"S{i % 3}", f"2023-05-0{9 - i}T10:00:00") for i in range(6)}


def _rec(qid, cat, gold, orders, answers, cov, recall, gold_sessions=("S1",)):
    return {"orig_id": qid, "qid": qid, "category": cat, "question": f"question {qid}?",
            "answer": gold, "gold_sessions": list(gold_sessions),
            "pool": [f"u{i}" for i in range(6)],
            "selections": {p: {"order": o} for p, o in zip(P, orders)},
            "metrics": {p: {"2": {"complete_coverage": c, "session_recall": r, "turn_recall": r}}
                        for p, c, r in zip(P, cov, recall)},
            "qa": {p: {"2": {"answer": a, "correct": a is not None and gold.lower() in a.lower(),
                             **({"failed": True} if a is None else {})}}
                   for p, a in zip(P, answers)}}


def _run():
    recs = [
        # coverage down, F1 up: the disagreement
        _rec("c/q1", "single-hop", "Paris", ([1, 0], [0, 2]), ("Rome", "Paris"), (1.0, 0.0),
             (1.0, 0.0)),
        # same coverage, another answer
        _rec("c/q2", "temporal", "May 2023", ([1, 4], [4, 1]), ("June", "May 2023"), (1.0, 1.0),
             (1.0, 1.0)),
        # the policy's request failed: left out of the pairs and the page
        _rec("c/q3", "multi-hop", "tea, coffee", ([0, 1], [1, 3]), ("tea", None), (0.0, 1.0),
             (0.0, 1.0)),
        _rec("c/q4", "open-domain", "yes; because", ([2, 3], [2, 3]), ("yes", "yes"), (0.0, 0.0),
             (0.0, 0.0)),
    ]
    s = {"qa": {"judged_by_llm": True, "failures": {"answer": {"timeout": 1}, "judge": {}}},
         "results": {p: {"2": {"overall": {"qa_accuracy": 50.0, "complete_coverage": 50.0},
                               "by_category": {}}} for p in P},
         "paired": {"centered-fusion": {"2": {"overall": {}}}}}
    return QA.summarise("hybrid", s, recs, list(P), "2", TEXTS)


def test_scores_and_paired_tests():
    r = _run()
    off = r["policies"]["centered-fusion"]["official"]
    assert r["policies"]["centered-fusion"]["failed"] == 1
    assert off["f1"] == pytest.approx(100 * (1 + 1 + 0 + 1) / 4)  # the failed answer scores 0
    pa = r["paired_answers"]["centered-fusion"]["all"]
    assert (pa["n"], pa["failed_pairs"], pa["wins"], pa["losses"]) == (3, 1, 2, 0)
    assert pa["f1_base"] == pytest.approx(100 / 3) and pa["sign_p"] == 0.5
    assert pa["wilcoxon_p"] is not None and 0 < pa["wilcoxon_p"] <= 1
    assert pa["coverage_base"] == pytest.approx(200 / 3) and pa["judge"] == pytest.approx(200 / 3)
    assert r["paired_answers"]["centered-fusion"]["multi-hop"] == {"n": 0, "failed_pairs": 1}
    q1 = r["questions"][0]["native"]
    # the prompt's order: oldest first (u1, picked first, is dated before u0)
    assert q1["memory_ranks"] == [1, 2] and q1["memories"][0].endswith("memory 1")
    rep = {"results": [r], "command": "--n 4", "model": "fake", "k": 2, "n": 4}
    md = "\n".join(QA.official_section(rep))
    assert "Wilcoxon" in md and "| hybrid | centered-fusion | all | 3 |" in md
    assert "answer: 1 timeout" in md and "qa-disagreements.md" in md


def test_disagreement_page_lists_both_contexts():
    rep = {"results": [_run()], "command": "--n 4", "model": "fake", "k": 2, "n": 4}
    rows = DIS.disagreements(rep)
    assert [x["question"]["id"] for x in rows] == ["c/q1"] and rows[0]["level"] == "coverage"
    doc = DIS.disagreements_doc(rep, n=2)
    assert doc.count("### ") == 2 and "## Same coverage, different answer" in doc
    first = doc.split("### 1. ")[1].split("### 2. ")[0]
    assert "c/q1" in first and "complete session coverage 1 -> 0" in first
    assert "native's context:" in first and "centered-fusion's context:" in first
    assert "**[gold session]** (pick 1) [" in first  # u1 is in S1, the gold session
    assert "c/q3" not in doc  # a failed request is no disagreement
    assert "### 2. c/q2" in doc
    old = {"results": [{"questions": [{"native": {"answer": "x"}}], "policies": {}}]}
    assert DIS.disagreements_doc(old) is None
