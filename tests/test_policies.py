"""The composed read policies (issue 7): each reduces to a known rule at its extremes."""

import numpy as np
import pytest

from conftest import clustered
from mempursuit_core import get_selector, select
from mempursuit_core.policies import rank_prior, time_buckets


def test_rank_prior_is_sorted_cosines(rng):
    q, M = clustered(rng, P=40, d=16)
    prior = rank_prior(q, 3.0 * M)
    cos = M @ q
    np.testing.assert_allclose(prior, np.sort(cos)[::-1], atol=1e-12)
    assert rank_prior(q, np.empty((0, 16))).shape == (0,)


def test_pursuit_rank_extremes(rng):
    q, M = clustered(rng, P=60, d=32)
    assert get_selector("pursuit-rank", gamma=0.0).select(q, M, 15).order.tolist() == list(range(15))
    # on a pool in cosine order, gamma = 1 and no kept prefix is the paper's rule
    by_cos = M[np.argsort(-(M @ q), kind="stable")]
    np.testing.assert_array_equal(
        get_selector("pursuit-rank", gamma=1.0, keep=0).select(q, by_cos, 15).order,
        select(q, by_cos, 15).order)
    sel = get_selector("pursuit-rank").select(q, M, 15)
    assert sel.order[0] == 0 and len(set(sel.order.tolist())) == 15


def test_pursuit_anchor_keeps_native_prefix(rng):
    q, M = clustered(rng, P=60, d=32)
    order = get_selector("pursuit-anchor", frac=0.5).select(q, M, 10).order
    assert order[:5].tolist() == list(range(5)) and len(set(order.tolist())) == 10
    assert get_selector("pursuit-anchor", frac=1.0).select(q, M, 7).order.tolist() == list(range(7))
    with pytest.raises(ValueError):
        get_selector("pursuit-anchor", frac=1.5)


def test_pursuit_joint_needs_and_uses_sparse_signals(rng):
    q, M = clustered(rng, P=30, d=16)
    with pytest.raises(ValueError, match="sparse"):
        get_selector("pursuit-joint").select(q, M, 5)
    S = np.zeros((30, 4))
    S[7, 2] = 1.0  # the only memory sharing the query's rare term
    sig = {"sparse": S, "query_sparse": np.array([0, 0, 1.0, 0])}
    dense_only = select(q, M, 5).order
    joint = get_selector("pursuit-joint", weight=3.0).select(q, M, 5, signals=sig).order
    assert 7 in joint and joint[0] == 7
    assert 7 not in dense_only[:1]
    with pytest.raises(ValueError, match="shapes"):
        get_selector("pursuit-joint").select(q, M, 5, signals={"sparse": S[:3], "query_sparse": sig["query_sparse"]})


def test_time_buckets_from_signals():
    assert time_buckets(None, 3) is None
    assert time_buckets({"session_ids": ["a", "b", "a"]}, 3) == ["a", "b", "a"]
    days = time_buckets({"timestamps": ["2023-05-08T13:56:00", "2023-05-08T20:00:00", None]}, 3)
    assert days[0] == days[1] == "2023-05-08" and days[2] != days[0]
    exact = time_buckets({"timestamps": ["2023-05-08T13:56:00", "2023-05-08T20:00:00"]}, 2, "exact")
    assert exact[0] != exact[1]
    with pytest.raises(ValueError, match="P=2"):
        time_buckets({"session_ids": ["a"]}, 2)


def test_pursuit_time_spreads_over_time_buckets(rng):
    """Two periods with near-identical memories: with the time signal, the second pick comes
    from the other period; without it, the policy is pursuit-rank."""
    d = 32
    base = rng.standard_normal(d)
    M = np.stack([base + 0.01 * rng.standard_normal(d) for _ in range(6)])
    buckets = ["day1"] * 4 + ["day2"] * 2
    q = base + 0.05 * rng.standard_normal(d)
    sel = get_selector("pursuit-time", weight=1.0, gamma=1.0)
    order = sel.select(q, M, 2, signals={"session_ids": buckets}).order
    assert {buckets[i] for i in order} == {"day1", "day2"}
    no_signal = sel.select(q, M, 4).order
    np.testing.assert_array_equal(
        no_signal, get_selector("pursuit-rank", gamma=1.0).select(q, M, 4).order)
    with pytest.raises(ValueError):
        get_selector("pursuit-time", bucket="week")


def test_native_dedup_moves_copies_last(rng):
    q, M = clustered(rng, P=10, d=16)
    pool = np.concatenate([M[:1], M[:1] * 2, M[1:]])
    order = get_selector("native-dedup", threshold=0.99).select(q, pool, 11).order.tolist()
    assert order[0] == 0 and order[-1] == 1 and sorted(order) == list(range(11))


@pytest.mark.parametrize("name", ["pursuit-rank", "pursuit-anchor", "pursuit-time", "native-dedup"])
def test_policies_handle_edge_pools(name, rng):
    sel = get_selector(name)
    assert len(sel.select(np.ones(4), np.empty((0, 4)), 3).order) == 0
    M = rng.standard_normal((5, 4))
    assert sorted(sel.select(np.ones(4), M, 50).order.tolist()) == list(range(5))
    M[2] = 0.0
    with pytest.raises(ValueError, match="candidate row 2"):
        sel.select(np.ones(4), M, 3)


def test_pool_signals_are_lazy_and_feed_pursuit_joint(rng):
    from mempursuit_core.signals import pool_signals

    texts = ["Caroline adopted a dog named Rex", "Melanie paints landscapes", "the dog Rex is old",
             "we went camping", "Caroline likes painting too"]
    sig = pool_signals(texts, "What is the name of Caroline's dog?",
                       timestamps=["2023-05-08", "2023-05-08", "2023-06-01", None, "2023-07-01"],
                       session_ids=["s1", "s1", "s2", "s3", "s4"])
    assert sig.computed() == []
    S, qs = sig["sparse"], sig["query_sparse"]
    assert S.shape[0] == 5 and qs.shape == (S.shape[1],) and qs.sum() > 0
    assert set(sig.computed()) == {"sparse", "query_sparse"}
    assert sig["session_ids"][2] == "s2" and sig["timestamps"][3] is None
    M = rng.standard_normal((5, 8))
    order = get_selector("pursuit-joint", weight=3.0).select(rng.standard_normal(8), M, 2, signals=sig).order
    assert order[0] in (0, 2)  # the memories sharing the query's terms "caroline" / "dog"
