"""The harness's stages called one by one (:mod:`mempursuit_eval.stages`), on the project's
LoCoMo-format fixture: each stage alone, and all of them together giving exactly what
``run_eval`` gives; and QA options in their own :class:`QAConfig`."""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason='needs the [embed] extra: pip install -e ".[embed]"')

from mempursuit_core import get_selector
from mempursuit_core.embed import get_embedder
from mempursuit_eval import EvalConfig, QAConfig, run_eval
from mempursuit_eval.cache import CachedEmbedder
from mempursuit_eval.stages import (apply_policies, collect_pools, embed_questions, load_data,
                                    measure_latency, open_store, score, summarise)

LOCOMO = Path(__file__).resolve().parent / "fixtures" / "dialogue.json"


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("stages-cache")


@pytest.fixture(scope="module")
def cfg(cache):
    c = EvalConfig(dataset="locomo", data=str(LOCOMO), k=(3, 10), pool=40, limit=12,
                   policies=("native", "centered-fusion", "mmr"), cache_dir=str(cache),
                   embedder=get_embedder("minilm", threads=1), progress=False, plots=False,
                   latency_sample=3, bootstrap=100)
    c.validate()
    return c


@pytest.fixture(scope="module")
def staged(cfg, cache):
    """Every stage in order, by hand."""
    data = load_data(cfg, Path(cache))
    embedder = CachedEmbedder(cfg.embedder, Path(cache))
    selectors = {label: get_selector(label) for label in cfg.policies}
    with open_store(cfg, data.dataset.units, embedder, Path(cache)) as opened:
        qvecs = embed_questions(embedder, data.questions)
        pools = collect_pools(opened.store, data.questions, qvecs, cfg.pool)
        chosen = apply_policies(selectors, pools, cfg.k, nested={"native": True},
                                qids=[q.qid for q in data.questions])
        records = score(data.questions, pools, chosen, data.units_by_uid, cfg.k)
        latency = measure_latency(selectors, pools[:2], cfg.k)
    summary = summarise(cfg, data, records, latency, None, embedder.name)
    return data, qvecs, pools, chosen, records, latency, summary


def test_load_data_selects_and_counts_what_is_left_out(cfg, cache, staged):
    data = staged[0]
    assert len(data.questions) == 12
    assert set(data.units_by_uid) == {u.uid for u in data.dataset.units}
    n_all = len(data.full.questions)
    assert sum(data.left_out.values()) == n_all - 12
    with pytest.raises(ValueError, match="unknown group"):
        load_data(dataclasses.replace(cfg, groups=["no-such-group"]), Path(cache))


def test_pools_are_the_stores_own_and_orders_respect_k(cfg, staged):
    data, qvecs, pools, chosen = staged[:4]
    assert qvecs.shape == (12, 384)
    for q, p in zip(data.questions, pools):
        assert 0 < len(p.items) <= cfg.pool and p.vectors.shape == (len(p.items), 384)
        assert all(data.units_by_uid[u].group == q.group for u in p.items)
    for label in cfg.policies:
        for k in cfg.k:
            for p, o in zip(pools, chosen.orders[label][k]):
                assert o.dtype == np.int64 and len(o) == min(k, len(p.items))
                assert len(set(o.tolist())) == len(o)
    # native is the pool's own top K
    assert all(o.tolist() == list(range(len(o))) for o in chosen.orders["native"][10])
    assert set(chosen.seconds) == set(cfg.policies)


def test_apply_policies_names_the_question_of_a_bad_order(staged):
    pools = staged[2]

    class Broken:
        nested = False

        def select_batch(self, queries, cands, k, **kw):
            return [[0, 0]] * len(queries)

    with pytest.raises(ValueError, match=r"question q-x.*K=3"):
        apply_policies({"broken": Broken()}, pools[:1], (3,), qids=["q-x"])


def test_score_records_every_policy_and_k(cfg, staged):
    data, _, pools, chosen, records = staged[:5]
    assert [r["qid"] for r in records] == [q.qid for q in data.questions]
    for r, p in zip(records, pools):
        assert r["pool"] == list(p.items)
        assert set(r["selections"]) == set(cfg.policies)
        if r["metrics"]:
            assert set(r["metrics"]["mmr"]) == {"3", "10"}


def test_latency_and_summary(cfg, staged):
    latency, summary = staged[5], staged[6]
    assert latency["native"]["10"]["n"] == 2
    assert summary["n_questions"] == 12 and summary["policies"] == list(cfg.policies)
    assert "centered-fusion" in summary["paired"] and "native" not in summary["paired"]
    assert summary["left_out"] == staged[0].left_out


def test_stages_give_exactly_what_run_eval_gives(cfg, staged, tmp_path):
    """Same orders, same metrics: run_eval is the stages in order and nothing else."""
    records, summary = staged[4], staged[6]
    run = run_eval(dataclasses.replace(cfg, out=str(tmp_path / "run"), policies=cfg.policies))
    lines = (tmp_path / "run" / "questions.jsonl").read_text().splitlines()
    ran = [json.loads(line) for line in lines]
    for a, b in zip(records, ran):
        assert a["selections"] == b["selections"]
        assert a["metrics"] == b["metrics"]
    assert run["results"] == summary["results"]
    assert run["paired"] == summary["paired"]


def test_qa_options_live_in_their_own_config(cfg):
    """Flat keywords (the CLI's names) and qa=QAConfig(...) are the same configuration; QA's own
    checks say what to fix."""
    base = dict(dataset="locomo", k=(5, 10))
    a = EvalConfig(**base, qa=QAConfig("http://127.0.0.1:1/v1", "m", k=(10,), max_tokens=32))
    a.validate()
    assert a.qa.k == (10,) and a.qa.max_tokens == 32 and a.qa.concurrency == 8
    with pytest.raises(ValueError, match=r"--qa-k \[20\] not among --k \[5, 10\]"):
        EvalConfig(**base, qa=QAConfig("http://127.0.0.1:1/v1", "m", k=(20,))).validate()
    with pytest.raises(ValueError, match="--answerer-url needs --model"):
        EvalConfig(**base, qa=QAConfig("http://127.0.0.1:1/v1")).validate()
    with pytest.raises(TypeError, match="not both"):
        run_eval(**base, qa=QAConfig("http://x/v1", "m"), answerer_url="http://y/v1")
    with pytest.raises(ValueError, match=r"--qa-k \[20\]"):  # flat names reach the same checks
        run_eval(**base, answerer_url="http://127.0.0.1:1/v1", model="m", qa_k=(20,))
