"""pyversity's strategies as named baselines (``pyversity-*``, issue 45).

Each policy is pyversity's own ``diversify`` on the pool (its stored rows, the native scores),
returns a valid order on every edge pool, and takes the strategy's options by name. Without
pyversity (the fast subset's ``.[eval,test]``) the policies are not registered and this module
is skipped.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mempursuit_core import get_selector, list_selectors

try:
    import pyversity
except ImportError:
    pyversity = None
needs_pyversity = pytest.mark.skipif(pyversity is None,
                                     reason='needs pip install -e ".[diversifiers]"')
ROOT = Path(__file__).resolve().parents[1]

STRATEGIES = ("mmr", "msd", "dpp", "cover", "ssd")
NAMES = [f"pyversity-{s}" for s in STRATEGIES]


@needs_pyversity
def test_every_strategy_is_registered():
    assert set(NAMES) <= set(list_selectors())


@needs_pyversity
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_equals_pyversity_diversify(strategy, rng):
    P, d = 120, 32
    M = rng.standard_normal((P, d)).astype(np.float32)
    M /= np.linalg.norm(M, axis=1, keepdims=True)  # stored unit rows, as the embedder gives them
    M[1] = M[0]  # an exact copy
    q = rng.standard_normal(d)
    scores = np.sort(rng.random(P))[::-1]  # native order: scores non-increasing
    sel = get_selector(f"pyversity-{strategy}")
    for k in (1, 10, 20):
        want = pyversity.diversify(M, scores, k, strategy=strategy).indices.tolist()
        got = sel.select(q, M, k, native_scores=scores).order
        assert got.tolist() == want, (strategy, k)
        assert len(set(want)) == k
    # without native scores: the rows' cosine with the query
    cos = (M.astype(np.float64) @ (q / np.linalg.norm(q))).astype(np.float32)
    want = pyversity.diversify(M, cos, 10, strategy=strategy).indices.tolist()
    assert sel.select(q, M, 10).order.tolist() == want
    assert get_selector(f"pyversity-{strategy}", scores="cosine").select(
        q, M, 10, native_scores=scores).order.tolist() == want


@needs_pyversity
@pytest.mark.parametrize("name", NAMES)
def test_edge_pools_give_valid_orders(name, rng):
    sel = get_selector(name)
    assert len(sel.select(np.ones(4), np.empty((0, 4)), 3).order) == 0  # empty pool
    assert sel.select(np.ones(4), rng.standard_normal((1, 4)), 5).order.tolist() == [0]  # P = 1
    M = rng.standard_normal((6, 4))
    for pool in (M, np.repeat(M[:2], 4, axis=0), M * 1e200):  # k > P, duplicate rows, huge rows
        order = sel.select(np.ones(4), pool, 50).order.tolist()
        assert sorted(order) == list(range(len(pool))), (name, order)
        short = sel.select(np.ones(4), pool, 3).order.tolist()
        assert short == order[:3], name  # nested: the harness reads K = 10 off K = 20
    M[2] = 0.0
    with pytest.raises(ValueError, match="candidate row 2"):
        sel.select(np.ones(4), M, 3)
    with pytest.raises(ValueError, match="native_scores"):
        sel.select(np.ones(4), M[:2], 2, native_scores=[1.0, np.nan])


@needs_pyversity
def test_named_options_change_the_order_or_fail_clearly(rng):
    P, d = 80, 16
    M = rng.standard_normal((P, d))
    q = rng.standard_normal(d)
    scores = np.sort(rng.random(P))[::-1]
    for strategy in STRATEGIES:
        # diversity 0: the top K by the native scores, i.e. the native order
        sel = get_selector(f"pyversity-{strategy}", diversity=0.0)
        assert sel.select(q, M, 10, native_scores=scores).order.tolist() == list(range(10))
    opts = {"pyversity-cover": {"gamma": 0.2}, "pyversity-dpp": {"scale": 5.0},
            "pyversity-ssd": {"gamma": 3.0, "window": 2},
            "pyversity-mmr": {"diversity": 0.9}, "pyversity-msd": {"diversity": 0.9}}
    for name, kw in opts.items():
        default = get_selector(name).select(q, M, 10, native_scores=scores).order.tolist()
        sel = get_selector(name, **kw)
        for key, value in kw.items():
            assert (sel.options.get(key) if key in sel.options else getattr(sel, key)) == value
        got = sel.select(q, M, 10, native_scores=scores).order.tolist()
        assert got == pyversity.diversify(M.astype(np.float32) / np.linalg.norm(
            M, axis=1, keepdims=True).astype(np.float32), scores, 10,
            strategy=name.split("-")[1], **kw).indices.tolist()
        assert got != default, name
    with pytest.raises(ValueError, match="pyversity-cover: gamma must be in"):
        get_selector("pyversity-cover", gamma=0.0)
    with pytest.raises(ValueError, match="pyversity-ssd: window must be"):
        get_selector("pyversity-ssd", window=0)
    with pytest.raises(ValueError, match="pyversity-mmr has no option 'gamma'"):
        get_selector("pyversity-mmr", gamma=0.5)
    with pytest.raises(ValueError, match=r"diversity must be in \[0, 1\]"):
        get_selector("pyversity-dpp", diversity=1.5)
    with pytest.raises(ValueError, match="scores must be one of native, cosine"):
        get_selector("pyversity-msd", scores="bm25")


@needs_pyversity
def test_the_eval_parses_the_options():
    """``mempursuit eval --policies pyversity-ssd:window=2`` builds the option by name, and a
    wrong one fails before any data is read, naming what the policy accepts."""
    from mempursuit_eval.runner import parse_policy
    from mempursuit_eval.stages import factory_options
    from mempursuit_core.plugins import list_selector_factories

    name, opts = parse_policy("pyversity-ssd:window=2,gamma=3,append_bias=false")
    sel = get_selector(name, **opts)
    assert sel.options == {"gamma": 3, "window": 2, "append_bias": False, "normalize_scores": True}
    assert factory_options(list_selector_factories()["pyversity-cover"][0]) == [
        "diversity", "scores", "gamma"]


def test_without_pyversity_nothing_is_listed_and_building_names_the_extra():
    code = (
        "import sys\n"
        "sys.modules['pyversity'] = None\n"
        "from mempursuit_core import list_selectors\n"
        "assert not [n for n in list_selectors() if n.startswith('pyversity')], list_selectors()\n"
        "from mempursuit_eval.diversifiers import DIVERSIFIERS\n"
        "try:\n"
        "    DIVERSIFIERS[0]()\n"
        "except ValueError as exc:\n"
        "    print(exc)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={"MEMPURSUIT_PLUGINS": "", "PATH": "", "PYTHONPATH": str(ROOT)})
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == ('pyversity-mmr needs pyversity: pip install -e ".[diversifiers]" '
                                  "(in a mempursuit checkout)")


def test_results_section_renders_any_run_dropped_in(tmp_path):
    """docs/results.md's section renders every run under benchmarks/results/eval/diversifiers/
    (the HotpotQA runs join by their folder), in a fixed order, and says which run has no
    default-versus-policy statistics yet."""
    import importlib.util
    import shutil

    spec = importlib.util.spec_from_file_location("readme_tables",
                                                  ROOT / "benchmarks" / "readme_tables.py")
    tables = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tables)
    src = ROOT / "benchmarks" / "results" / "eval" / "diversifiers" / "beam-dense"
    for name in ("zz-new-set", "hotpotqa-dense", "locomo-dense"):
        (tmp_path / name).mkdir()
        shutil.copy(src / "summary.json", tmp_path / name)
    shutil.copy(src / "vs_default.json", tmp_path / "locomo-dense")
    assert [p.name for p in tables.diversifier_runs(tmp_path)] == [
        "locomo-dense", "hotpotqa-dense", "zz-new-set"]
    text = "\n".join(tables.diversifiers(tmp_path))
    assert text.count("| pyversity-dpp |") == 3
    assert "mmr (session +2.5, p=0.18)" in text  # BEAM's dense run: the default not clearly ahead
    assert text.rstrip().endswith("No default − policy columns for hotpotqa-dense, zz-new-set "
                                  "(no vs_default.json).")
    assert "None of these runs is committed yet." in text  # no RUN-haystack folder
    (tmp_path / "lme-dense-haystack").mkdir()
    shutil.copy(src / "summary.json", tmp_path / "lme-dense-haystack")
    text = "\n".join(tables.diversifiers(tmp_path))
    assert "Run so far: `lme-dense-haystack`. Not run yet: `locomo-dense-haystack`," in text
