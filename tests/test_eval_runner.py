"""End-to-end runs of the paired harness on the project's LoCoMo-format dialogue fixture
(``tests/fixtures/dialogue.json``) and, where the benchmark files are present in
``../shared/data``, on small slices of LongMemEval and BEAM.

The embedder is the packaged MiniLM (int8 ONNX; the ``[embed]`` extra); one cache directory is
shared by the tests of this module so each text is embedded once.
"""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason='needs the [embed] extra: pip install -e ".[embed]"')

from mempursuit_core import Selection, Selector
from mempursuit_core.cli import main as cli_main
from mempursuit_core.embed import get_embedder
from mempursuit_eval import run_eval
from mempursuit_eval.cache import CachedEmbedder
from mempursuit_eval.datasets import load_dataset
from mempursuit_core.hookspecs import hookimpl
from mempursuit_core.plugins import get_plugin_manager

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
#: LoCoMo-format data for the harness mechanics: the project's own fixture (2 conversations).
LOCOMO = Path(__file__).resolve().parent / "fixtures" / "dialogue.json"


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("mempursuit-cache")


@pytest.fixture(scope="module")
def embedder():
    return get_embedder("minilm", threads=2)


def _base(cache, embedder, **kw):
    opts = dict(dataset="locomo", data=str(LOCOMO), k=(5, 10, 20),
                policies=("native", "mempursuit", "mempursuit:adaptive=true"), pool=200,
                cache_dir=str(cache), embedder=embedder, progress=False, plots=False,
                latency_sample=5, bootstrap=200, limit=25)
    opts.update(kw)
    return opts


@pytest.fixture(scope="module")
def locomo_run(cache, embedder, tmp_path_factory):
    out = tmp_path_factory.mktemp("run-locomo")
    summary = run_eval(**_base(cache, embedder, out=str(out), plots=True))
    return summary, out


@pytest.mark.slow  # a real benchmark file or model
def test_locomo_run_writes_everything(locomo_run):
    summary, out = locomo_run
    for name in ("config.json", "questions.jsonl", "summary.json", "summary.md"):
        assert (out / name).is_file(), name
    if importlib.util.find_spec("matplotlib") is not None:
        assert (out / "coverage_vs_k.png").stat().st_size > 1000
        assert (out / "category_gains.png").is_file()
    assert summary["n_questions"] == 25 and summary["n_scored"] == 25
    assert summary["policies"] == ["native", "mempursuit", "mempursuit:adaptive=true"]
    for policy in summary["policies"]:
        for k in ("5", "10", "20"):
            o = summary["results"][policy][k]["overall"]
            for m in ("session_recall", "complete_coverage", "turn_recall", "turn_coverage"):
                assert 0.0 <= o[m] <= 100.0
            assert o["size"] <= int(k)
            assert set(summary["results"][policy][k]["by_category"]) <= {
                "multi-hop", "temporal", "open-domain", "single-hop"}
    assert summary["results"]["native"]["10"]["overall"]["replaced"] == 0.0
    # monotone in K for nested policies
    for policy in summary["policies"]:
        cov = [summary["results"][policy][k]["overall"]["session_recall"] for k in ("5", "10", "20")]
        assert cov == sorted(cov)
    st = summary["paired"]["mempursuit"]["10"]["overall"]["complete_coverage"]
    assert st["test"] == "mcnemar-exact" and st["n"] == 25
    assert st["ci_low"] <= st["diff"] <= st["ci_high"]
    assert summary["latency_ms"]["mempursuit"]["10"]["n"] == 5
    saved = json.loads((out / "summary.json").read_text())
    assert saved["results"]["mempursuit"]["10"]["overall"]["complete_coverage"] == pytest.approx(
        summary["results"]["mempursuit"]["10"]["overall"]["complete_coverage"])
    md = (out / "summary.md").read_text()
    assert "| mempursuit | 10 |" in md and "Paired differences" in md
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["k"] == [5, 10, 20] and cfg["embedder_fingerprint"].startswith("all-MiniLM")


@pytest.mark.slow  # shares the LoCoMo run of test_locomo_run_writes_everything
def test_without_selection_equals_native_top_k(locomo_run, cache, embedder):
    """The w/o policy keeps exactly the store's exact-cosine top K, independently recomputed."""
    _, out = locomo_run
    recs = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    ds = load_dataset("locomo", LOCOMO)
    assert {r["group"] for r in recs} == {"dlg-1", "dlg-2"}  # limit=25: both conversations
    emb = CachedEmbedder(embedder, cache)
    qv = emb.encode([r["question"] for r in recs])
    for r, q in zip(recs, qv):
        units = [u for u in ds.units if u.group == r["group"]]
        M = emb.encode([u.text for u in units])
        ref = [units[i].uid for i in np.argsort(-(M @ q), kind="stable")]
        assert r["pool"] == ref[:200]
        order = r["selections"]["native"]["order"]
        assert [r["pool"][j] for j in order] == ref[:20]
        # pursuit reorders the same pool: its picks all come from the pool
        assert set(r["selections"]["mempursuit"]["order"]) <= set(range(len(r["pool"])))


@pytest.mark.slow  # shares the LoCoMo run of test_locomo_run_writes_everything
def test_prefixes_equal_per_k_runs(locomo_run, cache, embedder):
    """Taking prefixes of the largest K gives the same answers as running every K."""
    summary, _ = locomo_run
    again = run_eval(**_base(cache, embedder, prefix=False, latency_sample=0))
    for policy in summary["policies"]:
        for k in ("5", "10", "20"):
            a = summary["results"][policy][k]["overall"]
            b = again["results"][policy][k]["overall"]
            assert a == pytest.approx(b), (policy, k)
    assert again["embedding_cache"]["misses"] == 0  # the second run embedded nothing


class LexicalFirst(Selector):
    """A plugin policy that reads the store's BM25 and tf-idf signals (not nested)."""

    name = "test-lexical-first"

    def __init__(self):
        self.seen = []

    def select(self, query, candidates, k, *, native_scores=None, signals=None):
        bm25 = np.asarray(signals["bm25"])
        X = signals["sparse"]
        assert X.shape[0] == len(candidates) == bm25.shape[0]
        self.seen.append(k)
        return Selection(order=np.argsort(-bm25, kind="stable")[:k])


class _Plugin:
    instance = LexicalFirst()

    @hookimpl
    def register_selectors(self, register):
        register("test-lexical-first", lambda **kw: _Plugin.instance, "test plugin")


def test_a_plugin_selector_runs_with_no_harness_change(cache, embedder):
    pm = get_plugin_manager()
    pm.register(_Plugin(), name="test-lexical-plugin")
    try:
        s = run_eval(**_base(cache, embedder, policies=("test-lexical-first",), limit=6,
                             native_order="hybrid", latency_sample=2))
    finally:
        pm.unregister(name="test-lexical-plugin")
    assert s["policies"] == ["native", "test-lexical-first"]
    assert s["native_order"] == "hybrid"
    assert sorted(set(_Plugin.instance.seen)) == [5, 10, 20]  # run once per K
    assert "test-lexical-first" in s["paired"]
    assert s["results"]["test-lexical-first"]["20"]["overall"]["n"] == 6


@pytest.mark.skipif(not (DATA / "longmemeval" / "longmemeval_oracle.json.gz").exists(),
                    reason="LongMemEval benchmark file not in ../shared/data")
@pytest.mark.slow  # a real benchmark file or model
def test_longmemeval_oracle_few_questions(cache, embedder):
    s = run_eval(**_base(cache, embedder, dataset="longmemeval-oracle",
                         data=str(DATA / "longmemeval" / "longmemeval_oracle.json.gz"), limit=3,
                         k=(2, 5)))
    assert s["n_scored"] == 3 and s["dataset"] == "longmemeval-oracle"
    o = s["results"]["native"]["5"]["overall"]
    assert o["turn_recall"] is not None and 0 <= o["complete_coverage"] <= 100


@pytest.mark.skipif(not (DATA / "beam" / "100K").exists(),
                    reason="BEAM benchmark files not in ../shared/data")
@pytest.mark.slow  # a real benchmark file or model
def test_beam_few_questions(tmp_path):
    short = get_embedder("minilm", max_length=64, threads=2)  # long messages: keep the test quick
    s = run_eval(dataset="beam", data=str(DATA / "beam" / "100K"), groups=["4"], limit=4,
                 k=(5, 10), policies=("native", "mempursuit"), embedder=short,
                 cache_dir=str(tmp_path), progress=False, plots=False, latency_sample=2,
                 bootstrap=100)
    assert s["n_questions"] == 4 and s["dataset"] == "beam"
    assert 0 <= s["results"]["mempursuit"]["10"]["overall"]["turn_recall"] <= 100


def test_cli_eval(cache, tmp_path, capsys):
    out = tmp_path / "cli-run"
    rc = cli_main(["eval", "--dataset", "locomo", "--data", str(LOCOMO),
                   "--limit", "5", "--k", "5", "10", "--policies", "native", "mmr",
                   "--pool", "50", "--out", str(out), "--cache-dir", str(cache), "--quiet",
                   "--no-plots", "--latency-sample", "2", "--bootstrap", "100",
                   "--categories", "1", "2", "3", "4"])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "| mmr | 10 |" in printed
    s = json.loads((out / "summary.json").read_text())
    assert s["pool"] == 50 and s["policies"] == ["native", "mmr"]
    assert s["mean_pool_size"] == 50
    rc = cli_main(["eval", "--dataset", "locomo", "--data", str(tmp_path / "missing.json"),
                   "--quiet"])
    assert rc == 2
    assert "does not exist" in capsys.readouterr().err
    rc = cli_main(["eval", "--dataset", "locomo", "--data", str(LOCOMO),
                   "--policies", "no-such-policy", "--limit", "1", "--quiet",
                   "--cache-dir", str(cache), "--out", str(tmp_path / "x")])
    assert rc == 2
    assert "no-such-policy" in capsys.readouterr().err


def test_policy_variants_in_one_run(cache, embedder):
    from mempursuit_eval.runner import parse_policy

    assert parse_policy("mmr:lam=0.7") == ("mmr", {"lam": 0.7})
    assert parse_policy("mempursuit:ridge=1e-8,tau=1e-4") == (
        "mempursuit", {"ridge": 1e-8, "tau": 1e-4})
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_policy("mmr:lam")
    s = run_eval(**_base(cache, embedder, policies=("mmr", "mmr:lam=1.0"), limit=4,
                         latency_sample=0))
    assert s["policies"] == ["native", "mmr", "mmr:lam=1.0"]
    # lambda = 1 is pure relevance: the native (cosine) order itself
    assert s["results"]["mmr:lam=1.0"]["10"]["overall"]["replaced"] == 0.0


@pytest.mark.slow  # shares the LoCoMo run of test_locomo_run_writes_everything
def test_plots_are_skipped_with_a_note_without_matplotlib(locomo_run, tmp_path, monkeypatch):
    import sys

    from mempursuit_eval import EvalConfig
    from mempursuit_eval.report import write_outputs

    summary, _ = locomo_run
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    notes = []
    write_outputs(tmp_path, EvalConfig(plots=True), summary, [], {}, log=notes.append)
    assert any("plots skipped" in n and 'pip install -e ".[eval]"' in n for n in notes)
    assert (tmp_path / "summary.md").is_file() and not (tmp_path / "coverage_vs_k.png").exists()


def test_left_out_and_unscored_questions_are_reported(cache, embedder, tmp_path, capsys):
    out = tmp_path / "run"
    summary = run_eval(**_base(cache, embedder, out=str(out), categories=["multi-hop"],
                               limit=None, k=(5,), policies=("native",), progress=True,
                               latency_sample=0))
    ds = load_dataset("locomo", LOCOMO)
    others = {}
    for q in ds.questions:
        if q.category != "multi-hop":
            others[q.category] = others.get(q.category, 0) + 1
    assert summary["left_out"] == others and sum(others.values()) > 0
    assert summary["unscored_ids"] == [] and summary["n_scored"] == summary["n_questions"]
    err = capsys.readouterr().err
    assert "left out:" in err and f"{others['single-hop']} single-hop" in err
    md = (out / "summary.md").read_text()
    assert "left out by category:" in md and "session coverage %" in md


def test_the_readmes_main_job_runs_as_written(cache, tmp_path, capsys):
    import shlex

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    setup = readme.split("## Set-up:", 1)[1].split("## Install", 1)[0]
    line = next(ln for ln in setup.splitlines() if "mempursuit eval" in ln and not ln.startswith("#"))
    argv = shlex.split(line.split("&&", 1)[1])
    assert argv[0] == "mempursuit"
    argv = argv[1:]
    out = tmp_path / "demo"
    argv[argv.index("--out") + 1] = str(out)
    root = Path(__file__).resolve().parents[1]
    argv[argv.index("--data") + 1] = str(root / argv[argv.index("--data") + 1])
    assert cli_main(argv + ["--cache-dir", str(cache), "--no-plots", "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    from mempursuit_core import DEFAULT_POLICY

    assert summary["policies"] == ["native", DEFAULT_POLICY] and summary["n_scored"] > 0
    assert (out / "summary.md").read_text().startswith("# mempursuit eval")


def test_dataset_signals_are_opt_in_and_labelled(locomo_run, cache, embedder, tmp_path):
    """A framework store's pools carry only what its adapter hands over unless the run asks for
    the benchmark's own labels (``--dataset-signals``), and then config and reports say so."""
    from mempursuit_eval.runner import EvalConfig, signal_source

    summary, out = locomo_run
    assert json.loads((out / "config.json").read_text())["dataset_signals"] is False
    assert summary["signals"].startswith("the plain store's own")
    assert "- signals: the plain store's own" in (out / "summary.md").read_text()
    with pytest.raises(ValueError, match="--dataset-signals applies to a framework's store"):
        run_eval(**_base(cache, embedder, dataset_signals=True))
    cfg = EvalConfig(framework="memorybank", dataset_signals=True)
    assert signal_source(cfg).startswith("DATASET SIGNALS")
    assert "adapter hands over" in signal_source(EvalConfig(framework="memorybank"))
