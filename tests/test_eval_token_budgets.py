"""``mempursuit eval --budget-tokens``: complete coverage at equal tokens, on the project's
LoCoMo-format dialogue fixture with the packaged MiniLM (and its tokenizer)."""

import json
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime", reason='needs the [embed] extra: pip install -e ".[embed]"')

from mempursuit_core.embed import get_embedder
from mempursuit_core.tokens import token_counter
from mempursuit_eval import run_eval
from mempursuit_eval.datasets import load_dataset

LOCOMO = Path(__file__).resolve().parent / "fixtures" / "dialogue.json"
BUDGETS = (40, 150, 600)
K = 5


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run-tokens")
    summary = run_eval(dataset="locomo", data=str(LOCOMO), k=(K,), pool=200, limit=25,
                       budget_tokens=BUDGETS, cache_dir=str(tmp_path_factory.mktemp("cache")),
                       embedder=get_embedder("minilm", threads=1), progress=False, plots=False,
                       latency_sample=0, bootstrap=100, out=str(out))
    records = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    return summary, [r for r in records if "token_budget" in r]


def test_the_budget_is_never_exceeded_and_is_a_prefix_of_the_k_order(run):
    _, records = run
    texts = {u.uid: u.text for u in load_dataset("locomo", str(LOCOMO)).units}
    short = 0
    for rec in records:
        for name, entry in rec["token_budget"].items():
            order = [rec["pool"][i] for i in rec["selections"][name]["order"]]  # the K-order
            counts = token_counter().counts([texts[u] for u in order])
            for b in BUDGETS:
                n, used = entry["size"][str(b)], entry["used"][str(b)]
                assert used <= b  # never exceeded
                if n <= K:  # the prefix lies within the K-order: its first n, the longest
                    assert used == sum(counts[:n])
                    assert n == K or sum(counts[:n + 1]) > b
                    short += 1
    assert short  # the smallest budget keeps fewer than K turns


def test_coverage_at_a_budget_is_read_off_the_tokens_to_cover(run):
    summary, records = run
    tb = summary["token_budgets"]
    assert tb["budgets"] == list(BUDGETS) and tb["n"] == len(records)
    assert tb["tokenizer"] == token_counter().name == "minilm-wordpiece"
    for name in ("native", "centered-fusion"):
        got = [tb["results"][name][str(b)]["complete_coverage"] for b in BUDGETS]
        assert got == sorted(got)  # more tokens, never less coverage
        for b, pct in zip(BUDGETS, got):
            covered = [r["token_budget"][name]["to_complete"] is not None
                       and r["token_budget"][name]["to_complete"] <= b for r in records]
            assert pct == pytest.approx(100.0 * sum(covered) / len(records))
    paired = tb["paired"]["centered-fusion"][str(BUDGETS[0])]["session"]
    assert paired["n"] == len(records) and paired["test"] == "mcnemar-exact"


@pytest.mark.parametrize("bad, error", [((0,), ValueError), ((500, -1), ValueError),
                                        ((2.5,), TypeError)])
def test_a_bad_budget_is_one_line(bad, error):
    with pytest.raises(error, match="^--budget-tokens takes a whole number of tokens >= 1"):
        run_eval(dataset="locomo", data=str(LOCOMO), budget_tokens=bad, progress=False)
