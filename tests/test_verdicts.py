"""The verdicts of docs/results.md are computed from the numbers (benchmarks/verdicts.py): the
committed numbers give today's words (test_docs.py's --check), and a changed copy of them gives
other words, so no verdict is fixed text a rerun would leave standing."""

import copy
import importlib.util
import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EVAL = ROOT / "benchmarks" / "results" / "eval"


@pytest.fixture(scope="module")
def tables():
    spec = importlib.util.spec_from_file_location("readme_tables",
                                                  ROOT / "benchmarks" / "readme_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _copy_run(src: Path, dst: Path, edit=None, files=("summary.json", "config.json")) -> Path:
    dst.mkdir(parents=True)
    for name in files:
        data = json.loads((src / name).read_text())
        if edit is not None and name in edit:
            edit[name](data)
        (dst / name).write_text(json.dumps(data))
    return dst


def test_the_verdict_rules():
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import verdicts

    assert verdicts.compare([85.9, 62.4], [82.6, 53.5]) == "lost"
    assert verdicts.compare([85.9, 62.4], [86.0, 63.0]) == "won"
    assert verdicts.compare([85.9, 62.4], [86.0, 62.0]) == "mixed"
    assert verdicts.compare([1.0], [1.0]) == "level"
    cell = lambda d, p: {"diff": d, "p_value": p}  # noqa: E731
    assert verdicts.against_native([cell(0.8, 0.7), cell(-0.6, 0.75)]) == "level"
    assert verdicts.against_native([cell(5, 0.01), cell(6, 0.001)]) == "ahead"
    assert verdicts.against_native([cell(-5, 0.01), cell(-6, 0.001)]) == "behind"
    assert verdicts.against_native([cell(5, 0.01), cell(1, 0.5)]) == "mixed"
    assert verdicts.meets_goal([1.1, 2.6]) == "short"
    assert verdicts.meets_goal([3.0, 4.2]) == "met"


def test_the_titles_trial_verdict_follows_its_numbers(tables, tmp_path):
    trial = json.loads((EVAL / "locomo_titles_trial.json").read_text())
    assert ", it lost (K=10" in tables.trial_words()
    assert tables.trial_words().endswith(", so dialogue stores hand over none")
    won = copy.deepcopy(trial)
    for level in won["coverage"]["speakers as titles"]:
        won["coverage"]["speakers as titles"][level] = won["coverage"]["as shipped"][level] + 1
    (tmp_path / "trial.json").write_text(json.dumps(won))
    words = tables.trial_words(tmp_path / "trial.json")
    assert ", it won (K=10" in words and "it lost" not in words
    assert "so dialogue stores" not in words


def test_the_untitled_row_verdict_follows_its_numbers(tables, tmp_path):
    runs = [(o, EVAL / "hotpotqa" / f"test-{o}") for o in ("dense", "hybrid")]
    assert tables.untitled_words(runs) == "level with the hybrid order"

    def ahead(summary):
        for by_k in summary["paired"]["centered-fusion:bridge=0,titled=0"].values():
            by_k["overall"]["complete_coverage"].update(diff=4.0, p_value=0.001)

    run = _copy_run(runs[1][1], tmp_path / "test-hybrid", {"summary.json": ahead})
    assert tables.untitled_words([("hybrid", run)]) == "ahead of the hybrid order"


def test_the_date_channels_verdicts_follow_their_numbers(tables, tmp_path):
    round3 = EVAL / "round3"
    assert tables.date_channel_goal() == "It fell short of +3 on LongMemEval-S."
    assert tables.date_channel_held_out().startswith(
        "held-out effect is nil on BEAM chats 11-20 and LongMemEval-S")

    def reached(summary):
        for cell in summary["paired"][tables.PREVIOUS]["10"]["overall"].values():
            cell["diff"] = 3.5

    run = _copy_run(round3 / "lme-hybrid", tmp_path / "lme-hybrid", {"summary.json": reached},
                    files=("summary.json",))
    assert tables.date_channel_goal(run) == "It reached +3 on LongMemEval-S."

    for key in ("beam", "lme"):
        shutil.copy(round3 / f"{key}_sides.json", tmp_path / f"{key}_sides.json")
    sides = json.loads((tmp_path / "lme_sides.json").read_text())
    entry = next(e for e in sides if e["native_order"] == "hybrid" and e["pool"] == 200)
    rows = entry["halves"]["held out"]["rows"]
    rows[tables.PREVIOUS]["session K=10"]["policy"] = rows[tables.ROUND2]["session K=10"]["policy"] + 2
    (tmp_path / "lme_sides.json").write_text(json.dumps(sides))
    words = tables.date_channel_held_out(tmp_path)
    assert "nil" not in words and "+2.0 / +0.0 points (session / turn, K = 10) on LongMemEval-S" in words


def test_an_options_goal_verdict_follows_its_numbers(tables, tmp_path, monkeypatch):
    assert "LongMemEval-S short of +3 at K=10" in tables.option_row("gather")["kept"]
    runs = json.loads((EVAL / "round3" / "gather.json").read_text())
    lme = next(r for r in runs["runs"] if r["dataset"] == "longmemeval" and r["pool"] == 200
               and r["native_order"] == "hybrid")
    for side in lme["sides"].values():  # 20 more questions won on each side: +40 of 469
        for cell in ("session K=10", "turn K=10"):
            side["changed"][cell]["won"] += 20
    (tmp_path / "gather.json").write_text(json.dumps(runs))
    monkeypatch.setattr(tables, "ROUND3", tmp_path)
    kept = tables.option_row("gather")["kept"]
    assert "LongMemEval-S at +3 or more at K=10" in kept and "short of" not in kept


def test_the_rankers_verdict_follows_its_numbers(tables, tmp_path):
    runs = tables.diversifier_runs()
    assert tables.ranker_words(runs) == ("it falls below native\neverywhere here (on HotpotQA "
                                         "it almost never keeps both gold passages)")

    def better(summary):
        for by_k in summary["paired"]["haystack-diversity"].values():
            by_k["overall"]["complete_coverage"]["diff"] = 1.0
        for by_k in summary["results"]["haystack-diversity"].values():
            by_k["overall"]["complete_coverage"] = 50.0

    changed = [_copy_run(r, tmp_path / r.name, {"summary.json": better}, files=("summary.json",))
               if r.name == "hotpotqa-dense-haystack" else r for r in runs]
    words = tables.ranker_words(changed)
    assert "(not on `hotpotqa-dense-haystack`)" in words and "almost never" not in words


def test_the_corpus_sizes_are_read_from_the_runs(tables, tmp_path):
    docs = EVAL / "documents"
    sentence = tables.documents_sentence()
    assert "6,119 Wikipedia" in sentence and "(500 held-out questions, 10,787" in sentence
    wiki = _copy_run(docs / "2wiki-hybrid", tmp_path / "2wiki-hybrid",
                     {"config.json": lambda c: c.update(n_units=7000)}, files=("config.json",))
    shutil.copy(docs / "2wiki-hybrid" / "halves.json", wiki / "halves.json")

    def fewer(summary):
        summary["n_scored"] = 400

    _copy_run(docs / "hotpotqa-test-hybrid", tmp_path / "hotpotqa-test-hybrid",
              {"summary.json": fewer, "config.json": lambda c: c.update(n_units=12345)})
    sentence = " ".join(tables.documents_sentence(tmp_path).split())
    assert "7,000 Wikipedia" in sentence and "(400 held-out questions, 12,345 paragraphs)" in sentence
