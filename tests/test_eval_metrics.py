"""Metrics and paired statistics on hand-made cases with known answers."""

import math

import numpy as np
import pytest

from mempursuit_eval.metrics import (
    binomial_two_sided,
    bootstrap_ci,
    mcnemar_exact,
    paired_comparison,
    selection_metrics,
    sign_test,
)


def test_selection_metrics_partial_session_hit():
    m = selection_metrics(["A", "C", "C"], ["a1", "c1", "c2"], ["A", "B"], ["a1", "b1"],
                          selected_uids=["u1", "u2", "u3"], native_uids=["u1", "u4", "u5"])
    assert m["session_recall"] == 0.5
    assert m["complete_coverage"] == 0.0
    assert m["turn_recall"] == 0.5
    assert m["turn_coverage"] == 0.0
    assert m["replaced"] == pytest.approx(2 / 3)
    assert m["size"] == 3


def test_selection_metrics_complete_and_no_gold_turns():
    m = selection_metrics(["B", "A"], ["b1", "a9"], ["A", "B"], [],
                          selected_uids=["x", "y"], native_uids=["x", "y"])
    assert m["session_recall"] == 1.0 and m["complete_coverage"] == 1.0
    assert m["turn_recall"] is None and m["turn_coverage"] is None
    assert m["replaced"] == 0.0


def test_selection_metrics_empty_selection_and_duplicate_gold():
    m = selection_metrics([], [], ["A", "A"], ["t"])
    assert m["session_recall"] == 0.0 and m["complete_coverage"] == 0.0
    assert m["turn_recall"] == 0.0 and m["size"] == 0
    with pytest.raises(ValueError, match="without gold"):
        selection_metrics(["A"], [], [], [])


@pytest.mark.parametrize("k,n,expected", [
    (0, 0, 1.0),
    (0, 5, 2 / 32),                      # 2 * P[X <= 0]
    (5, 5, 2 / 32),
    (1, 10, 2 * (1 + 10) / 1024),
    (5, 10, 1.0),
    (3, 4, 2 * (1 + 4) / 16),            # min(k, n - k) = 1
])
def test_binomial_two_sided_known_values(k, n, expected):
    assert binomial_two_sided(k, n) == pytest.approx(expected, rel=1e-12)


def test_binomial_matches_scipy_and_large_n():
    stats = pytest.importorskip("scipy.stats", reason="scipy (test extra) cross-checks the test")
    for n in (1, 2, 7, 20, 33, 150):
        for k in range(0, n + 1, max(1, n // 7)):
            ref = stats.binomtest(k, n, 0.5, alternative="two-sided").pvalue
            assert binomial_two_sided(k, n) == pytest.approx(ref, rel=1e-9, abs=1e-300)
    # exact integer arithmetic does not overflow for big n
    p = binomial_two_sided(400, 1000)
    assert 0 < p < 1e-9
    with pytest.raises(ValueError):
        binomial_two_sided(3, 2)


def test_mcnemar_exact_counts_discordant_pairs():
    a = [1, 1, 1, 0, 1, 0]
    b = [0, 0, 0, 0, 1, 1]
    r = mcnemar_exact(a, b)
    assert (r["wins"], r["losses"], r["ties"]) == (3, 1, 2)
    assert r["p_value"] == pytest.approx(2 * (1 + 4) / 16)
    with pytest.raises(ValueError, match="0/1"):
        mcnemar_exact([0.5], [1])


def test_sign_test_drops_ties():
    r = sign_test([0.5, 0.25, 0.0, 0.0, -0.1, 1.0])
    assert (r["wins"], r["losses"], r["ties"]) == (3, 1, 2)
    assert r["p_value"] == pytest.approx(0.625)


def test_bootstrap_ci_seeded_and_sane():
    d = np.array([0.0, 1.0] * 50)
    lo1, hi1 = bootstrap_ci(d, seed=7)
    lo2, hi2 = bootstrap_ci(d, seed=7)
    assert (lo1, hi1) == (lo2, hi2)
    assert lo1 < 0.5 < hi1
    # the normal approximation of the mean's 95% interval is about +-0.098
    assert hi1 - lo1 == pytest.approx(2 * 1.96 * 0.5 / 10, rel=0.2)
    assert bootstrap_ci(np.full(10, 0.25)) == (0.25, 0.25)
    lo, hi = bootstrap_ci([])
    assert math.isnan(lo) and math.isnan(hi)


def test_paired_comparison_in_points():
    policy = [1, 1, 0, 1]
    base = [0, 1, 0, 0]
    r = paired_comparison(policy, base, binary=True, n_boot=500)
    assert r["n"] == 4
    assert r["policy"] == pytest.approx(75.0) and r["baseline"] == pytest.approx(25.0)
    assert r["diff"] == pytest.approx(50.0)
    assert r["ci_low"] <= 50.0 <= r["ci_high"]
    assert r["test"] == "mcnemar-exact" and r["wins"] == 2 and r["losses"] == 0
    assert r["p_value"] == pytest.approx(0.5)
    r2 = paired_comparison([0.5, 0.2], [0.5, 0.4], binary=False)
    assert r2["test"] == "sign" and r2["diff"] == pytest.approx(-10.0)
