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
    assert get_selector("experimental/pursuit-rank", gamma=0.0).select(q, M, 15).order.tolist() == list(range(15))
    # on a pool in cosine order, gamma = 1 and no kept prefix is the paper's rule
    by_cos = M[np.argsort(-(M @ q), kind="stable")]
    np.testing.assert_array_equal(
        get_selector("experimental/pursuit-rank", gamma=1.0, keep=0).select(q, by_cos, 15).order,
        select(q, by_cos, 15).order)
    sel = get_selector("experimental/pursuit-rank").select(q, M, 15)
    assert sel.order[0] == 0 and len(set(sel.order.tolist())) == 15


def test_pursuit_anchor_keeps_native_prefix(rng):
    q, M = clustered(rng, P=60, d=32)
    order = get_selector("experimental/pursuit-anchor", frac=0.5).select(q, M, 10).order
    assert order[:5].tolist() == list(range(5)) and len(set(order.tolist())) == 10
    assert get_selector("experimental/pursuit-anchor", frac=1.0).select(q, M, 7).order.tolist() == list(range(7))
    with pytest.raises(ValueError):
        get_selector("experimental/pursuit-anchor", frac=1.5)


def test_pursuit_joint_needs_and_uses_sparse_signals(rng):
    q, M = clustered(rng, P=30, d=16)
    with pytest.raises(ValueError, match="sparse"):
        get_selector("experimental/pursuit-joint").select(q, M, 5)
    S = np.zeros((30, 4))
    S[7, 2] = 1.0  # the only memory sharing the query's rare term
    sig = {"sparse": S, "query_sparse": np.array([0, 0, 1.0, 0])}
    dense_only = select(q, M, 5).order
    joint = get_selector("experimental/pursuit-joint", weight=3.0).select(q, M, 5, signals=sig).order
    assert 7 in joint and joint[0] == 7
    assert 7 not in dense_only[:1]
    with pytest.raises(ValueError, match="shapes"):
        get_selector("experimental/pursuit-joint").select(q, M, 5, signals={"sparse": S[:3], "query_sparse": sig["query_sparse"]})


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
    sel = get_selector("experimental/pursuit-time", weight=1.0, gamma=1.0)
    order = sel.select(q, M, 2, signals={"session_ids": buckets}).order
    assert {buckets[i] for i in order} == {"day1", "day2"}
    no_signal = sel.select(q, M, 4).order
    np.testing.assert_array_equal(
        no_signal, get_selector("experimental/pursuit-rank", gamma=1.0).select(q, M, 4).order)
    with pytest.raises(ValueError):
        get_selector("experimental/pursuit-time", bucket="week")


def test_native_dedup_moves_copies_last(rng):
    q, M = clustered(rng, P=10, d=16)
    pool = np.concatenate([M[:1], M[:1] * 2, M[1:]])
    order = get_selector("experimental/native-dedup", threshold=0.99).select(q, pool, 11).order.tolist()
    assert order[0] == 0 and order[-1] == 1 and sorted(order) == list(range(11))


@pytest.mark.parametrize("name", ["experimental/pursuit-rank", "experimental/pursuit-anchor",
                                  "experimental/pursuit-time", "experimental/native-dedup",
                                  "centered-fusion"])
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
    assert set(sig.computed()) == {"sparse", "query_sparse", "session_ids", "timestamps"}
    assert {"texts", "query_text", "sparse_terms", "session_ids"} <= set(sig) and len(sig) == 7
    from mempursuit_core.signals import PoolSignals

    calls = []
    mixed = PoolSignals({"lexical": lambda: calls.append(1) or [1.0]}, values={"dense": [0.5]})
    assert sorted(mixed) == ["dense", "lexical"] and "dense" in mixed and not calls
    assert mixed["dense"] == [0.5] and mixed["lexical"] == [1.0] and mixed["lexical"] == [1.0]
    assert calls == [1] and mixed.computed() == ["dense", "lexical"]
    with pytest.raises(ValueError, match="dense"):
        PoolSignals({"dense": lambda: 1}, values={"dense": 2})
    with pytest.raises(KeyError):
        mixed["bm25"]
    M = rng.standard_normal((5, 8))
    order = get_selector("experimental/pursuit-joint", weight=3.0).select(rng.standard_normal(8), M, 2, signals=sig).order
    assert order[0] in (0, 2)  # the memories sharing the query's terms "caroline" / "dog"


def _background_pool():
    """Every memory carries the same background e0; memories 0-2 are (almost) nothing else,
    memory 3 is the one about the query's topic e1, memories 4-17 are about other topics."""
    E = np.eye(24)
    M = np.stack([E[0], E[0] + 0.05 * E[20], E[0] + 0.05 * E[21]]
                 + [E[0] + 0.5 * E[i] for i in range(1, 16)])
    return E[0] + 0.15 * E[1], M


def _assert_sorted_by(order, score, P):
    """``order`` is a permutation of the pool by non-increasing ``score`` (up to rounding ties)."""
    assert sorted(order.tolist()) == list(range(P))
    assert np.all(np.diff(score[order]) <= 1e-12)


def _centred_relevance(q, M):
    U = M / np.linalg.norm(M, axis=1, keepdims=True)
    mu = U.mean(axis=0)
    R, r = U - mu, q / np.linalg.norm(q) - mu
    return R @ r / (np.linalg.norm(R, axis=1) * np.linalg.norm(r))


def test_pursuit_center_measures_relevance_beyond_the_background():
    q, M = _background_pool()
    raw = np.argsort(-(M @ q / np.linalg.norm(M, axis=1)), kind="stable")
    assert raw[:4].tolist() == [0, 1, 2, 3]  # raw cosine: the generic memories first
    sel = get_selector("centered-fusion").select(q, M, 18)
    assert sel.order[0] == 3 and sel.info["lexical"] == "none"
    _assert_sorted_by(sel.order, _centred_relevance(q, M), 18)
    # the paper's rule starts from the raw cosine: its first pick is a generic memory
    assert select(q, M, 1).order[0] == 0


def test_pursuit_center_fuses_the_frameworks_lexical_signal():
    q, M = _background_pool()
    lexical = np.zeros(18)
    lexical[[10, 12]] = [5.0, 1.0]
    sel = get_selector("centered-fusion", weight=3.0).select(q, M, 3, signals={"lexical": lexical})
    assert sel.info["lexical"] == "signal" and sel.order[0] == 10
    with_zero_weight = get_selector("centered-fusion", weight=0.0).select(
        q, M, 3, signals={"lexical": lexical})
    assert with_zero_weight.order[0] == 3 and with_zero_weight.info["lexical"] == "none"
    # a constant signal (the framework's keyword channel found nothing) carries no order
    flat = get_selector("centered-fusion").select(q, M, 3, signals={"lexical": np.ones(18)})
    assert flat.info["lexical"] == "none" and flat.order[0] == 3
    with pytest.raises(ValueError, match="P=18 finite"):
        get_selector("centered-fusion").select(q, M, 3, signals={"lexical": np.ones(5)})
    with pytest.raises(ValueError, match="lexical='auto'"):
        get_selector("centered-fusion", lexical="signal").select(q, M, 3, signals={})


def _pool_with_texts():
    """The first six memories of the background pool with texts; memory 4 answers the query."""
    q, M = _background_pool()
    texts = ["hello there", "we adopted a puppy", "the weather was fine", "new job at the bank",
             "Rex the puppy chewed a shoe", "pottery class"]
    return q, M[:6], texts, "What did the puppy Rex chew?"


def test_pursuit_center_averages_the_frameworks_and_the_pools_lexical_scores():
    from mempursuit_core.lexical import pool_bm25
    from mempursuit_core.signals import pool_signals

    q, M, texts, query = _pool_with_texts()
    framework = np.array([0.0, 2.0, 0.5, 0.0, 1.0, 3.0])  # a keyword score that disagrees
    signals = lambda: pool_signals(texts, query, lexical=framework)
    z = lambda x: (x - x.mean()) / x.std()
    rel, bm25 = _centred_relevance(q, M), pool_bm25(texts, query, stem=True)
    both = get_selector("centered-fusion").select(q, M, 6, signals=signals())
    assert both.info["lexical"] == "signal+pool"
    _assert_sorted_by(both.order, z(rel) + 0.7 * (z(framework) + z(bm25)) / 2, 6)
    # the earlier rule: the framework's score alone when it has one, the pool's BM25 otherwise
    prefer = get_selector("centered-fusion", lexical="prefer-signal")
    sel = prefer.select(q, M, 6, signals=signals())
    assert sel.info["lexical"] == "signal"
    _assert_sorted_by(sel.order, z(rel) + 0.7 * z(framework), 6)
    assert not np.array_equal(sel.order, both.order)
    assert prefer.select(q, M, 6, signals=pool_signals(texts, query)).info["lexical"] == "pool"
    # a pool BM25 without any query word carries no order and does not dilute the framework's
    stop_words = get_selector("centered-fusion").select(
        q, M, 6, signals=pool_signals(texts, "what is it?", lexical=framework))
    assert stop_words.info["lexical"] == "signal"
    _assert_sorted_by(stop_words.order, z(rel) + 0.7 * z(framework), 6)
    pool_only = get_selector("centered-fusion", lexical="pool").select(q, M, 6, signals=signals())
    assert pool_only.info["lexical"] == "pool"
    _assert_sorted_by(pool_only.order, z(rel) + 0.7 * z(bm25), 6)


def test_pursuit_center_spread_moves_picks_to_other_sessions():
    q, M = _background_pool()
    rel = _centred_relevance(q, M)
    z = (rel - rel.mean()) / rel.std()
    by_rel = np.argsort(-rel, kind="stable")
    sessions = ["a" if i in by_rel[:3] else f"s{i % 4}" for i in range(len(M))]
    signals = {"session_ids": sessions}
    plain = get_selector("centered-fusion", spread=0).select(q, M, 5, signals=signals).order
    assert plain.tolist() == by_rel[:5].tolist()
    # a penalty smaller than the z-gap between the 2nd and the best other-session memory
    # changes nothing; a larger one moves that memory up to second place
    other = next(i for i in by_rel if sessions[i] != "a")
    gap = z[by_rel[1]] - z[other]
    kept = get_selector("centered-fusion", spread=0.9 * gap).select(q, M, 2, signals=signals)
    assert kept.order.tolist() == by_rel[:2].tolist()
    moved = get_selector("centered-fusion", spread=1.1 * gap).select(q, M, 2, signals=signals)
    assert moved.order.tolist() == [by_rel[0], other]
    # the penalty is paid once per session, not once per pick: with a session already
    # picked, its third memory still beats the other session's best by more than the penalty
    four = {"session_ids": ["a" if i in by_rel[:4] else f"s{i % 4}" for i in range(len(M))]}
    gap3 = z[by_rel[2]] - z[by_rel[4]]
    assert gap3 > 0.1
    once = get_selector("centered-fusion", spread=0.75 * gap3).select(q, M, 3, signals=four)
    assert once.order.tolist() == by_rel[:3].tolist()
    big = get_selector("centered-fusion", spread=100.0).select(q, M, 18, signals=signals).order
    firsts = [sessions[i] for i in big[:5]]
    assert big[0] == by_rel[0] and len(set(firsts)) == 5  # one memory per session first
    for sess in set(sessions):  # within a session, relevance order is kept
        mine = [i for i in big if sessions[i] == sess]
        assert mine == sorted(mine, key=lambda i: -rel[i])
    assert sorted(big.tolist()) == list(range(18))
    # by calendar day when there are no session ids; nothing without any time signal
    days = {"timestamps": [f"2023-05-0{1 + (s == 'a')}T10:00" for s in sessions]}
    by_day = get_selector("centered-fusion", spread=100.0).select(q, M, 2, signals=days).order
    assert sessions[by_day[0]] == "a" and sessions[by_day[1]] != "a"
    none = get_selector("centered-fusion", spread=100.0).select(q, M, 5).order
    assert none.tolist() == by_rel[:5].tolist()
    undated = {"timestamps": ["" if s == "a" else "2023-05-01T10:00" for s in sessions]}
    blank = get_selector("centered-fusion", spread=100.0).select(q, M, 3, signals=undated).order
    assert blank.tolist() == by_rel[:3].tolist()  # empty timestamps are not one shared day
    from mempursuit_core.policies import time_buckets

    epoch = [1683540000.0, 1683590000, np.float32(1683600000), float("nan"), True, "", None,
             1e300, -float("inf")]
    got = time_buckets({"timestamps": epoch}, 9)
    assert got[:3] == ["2023-05-08", "2023-05-08", "2023-05-09"]  # seconds since 1970, UTC
    assert all(isinstance(b, tuple) for b in got[3:])  # no usable time: a bucket each
    with pytest.raises(ValueError, match="spread"):
        get_selector("centered-fusion", spread=-0.1)


def test_pursuit_center_scores_the_pools_texts_without_a_framework_signal():
    from mempursuit_core.lexical import LexicalIndex, pool_bm25
    from mempursuit_core.signals import pool_signals

    q, M, texts, query = _pool_with_texts()
    bm25 = pool_bm25(texts, query, stem=True)
    np.testing.assert_allclose(bm25, LexicalIndex(texts, stem=True).bm25(query))
    assert bm25.argmax() == 4
    assert bm25[4] > pool_bm25(texts, query)[4]  # "chewed" matches "chew" only when stemmed
    sel = get_selector("centered-fusion").select(q, M, 6, signals=pool_signals(texts, query))
    assert sel.info["lexical"] == "pool"
    rel = _centred_relevance(q, M)
    z = lambda x: (x - x.mean()) / x.std()
    _assert_sorted_by(sel.order, z(rel) + 0.7 * z(bm25), 6)
    # the first version of the policy: min-max fusion with equal weights, like a hybrid store
    mm = lambda x: (x - x.min()) / (x.max() - x.min())
    first = get_selector("centered-fusion", fusion="minmax", weight=1.0, stem=False).select(
        q, M, 6, signals=pool_signals(texts, query))
    _assert_sorted_by(first.order, mm(rel) + mm(pool_bm25(texts, query)), 6)
    with pytest.raises(ValueError, match="'texts' and 'query_text'"):
        get_selector("centered-fusion", lexical="pool").select(q, M, 3, signals={"texts": texts})
    with pytest.raises(ValueError, match="lexical must be one of"):
        get_selector("centered-fusion", lexical="bm25")
    with pytest.raises(ValueError, match=">= 0"):
        get_selector("centered-fusion", weight=-1.0)
    with pytest.raises(ValueError, match="stem must be true or false"):
        get_selector("centered-fusion", stem="yes")
    with pytest.raises(ValueError, match="fusion must be one of"):
        get_selector("centered-fusion", fusion="rrf")


def test_pursuit_center_with_gamma_composes_on_centred_features(rng):
    q, M = clustered(rng, P=60, d=32)
    base = get_selector("centered-fusion").select(q, M, 15).order
    tiny = get_selector("centered-fusion", gamma=1e-9).select(q, M, 15).order
    np.testing.assert_array_equal(base, tiny)
    composed = get_selector("centered-fusion", gamma=1.0).select(q, M, 15)
    assert composed.order[0] == base[0] and len(set(composed.order.tolist())) == 15
    assert composed.weights is not None and composed.weights.sum() == pytest.approx(1.0)


def test_pursuit_center_keeps_copies_and_degenerate_pools():
    q, M = _background_pool()
    dup = np.concatenate([M, M[3:4]])
    order = get_selector("centered-fusion").select(q, dup, 19).order.tolist()
    assert sorted(order) == list(range(19)) and {order[0], order[1]} == {3, 18}
    assert get_selector("centered-fusion").select(q, M[:1], 5).order.tolist() == [0]
    same = np.repeat(M[1:2], 4, axis=0)  # every memory is the centroid: native order
    assert get_selector("centered-fusion").select(q, same, 3).order.tolist() == [0, 1, 2]
    assert get_selector("centered-fusion").select(M.mean(0), M, 3).order.tolist() == [0, 1, 2]


def test_fusion_scales_of_pursuit_center():
    from mempursuit_core.signals import minmax, zscore

    x = np.array([3.0, 1.0, 2.0, 6.0])
    np.testing.assert_allclose(zscore(x), (x - 3.0) / np.sqrt(3.5))
    np.testing.assert_allclose(minmax(x), [0.4, 0.0, 0.2, 1.0])
    for f in (zscore, minmax):  # a channel that carries no order adds nothing
        np.testing.assert_array_equal(f(np.full(5, 2.0)), np.zeros(5))
        assert f(np.array([])).shape == (0,)


def test_spread_order_is_the_greedy_one_off_penalty():
    from mempursuit_core.policies import _spread_order

    rng = np.random.default_rng(7)
    for trial in range(200):
        P = int(rng.integers(1, 40))
        score = np.round(rng.normal(size=P), 1)  # rounded: ties within and across buckets
        buckets = [f"b{b}" for b in rng.integers(0, max(1, P // 3), size=P)]
        penalty = float(rng.choice([0.0, 0.05, 0.3, 1.0, 10.0]))
        seen, free, greedy = set(), np.ones(P, bool), []
        for _ in range(P):  # the rule as stated: argmax, lowest index first among ties
            adjusted = score - penalty * np.array([b in seen for b in buckets])
            j = int(np.argmax(np.where(free, adjusted, -np.inf)))
            greedy.append(j)
            free[j] = False
            seen.add(buckets[j])
        order = np.argsort(-score, kind="stable")
        assert _spread_order(score, order, buckets, penalty).tolist() == greedy, trial


def test_native_dedup_refuses_a_nan_threshold():
    with pytest.raises(ValueError, match="threshold"):
        get_selector("experimental/native-dedup", threshold=float("nan"))


def test_pool_signals_with_an_optional_producer():
    from mempursuit_core.signals import PoolSignals

    calls = []
    base = PoolSignals({"texts": lambda: ["a", "b"]}, values={"dense": [1.0, 0.5]})
    none = base.with_optional("lexical", lambda: calls.append("none"))
    assert "lexical" not in none and calls == ["none"] and set(none) == {"texts", "dense"}
    with pytest.raises(KeyError):
        none["lexical"]
    assert calls == ["none"]  # produced once
    some = base.with_optional("lexical", lambda: [2.0, 1.0])
    assert some.computed() == [] and "lexical" in some and some["lexical"] == [2.0, 1.0]
    assert some.computed() == ["lexical"] and len(some) == 3
    with pytest.raises(ValueError, match="more than once"):
        PoolSignals({"x": list}, optional={"x": list})


def _greedy_with_neighbours(score, sessions, positions, penalty, bonus, k):
    """The adjacency rule as stated: argmax of score - penalty (session already picked) +
    bonus x (picked neighbours: same session, position one apart), lowest index on ties."""
    P = len(score)
    free, picks = np.ones(P, bool), []
    for _ in range(k):
        seen = {sessions[j] for j in picks}
        adj = np.array([sum(sessions[j] == sessions[i] and abs(positions[j] - positions[i]) == 1
                            for j in picks) for i in range(P)], dtype=float)
        key = score - penalty * np.array([s in seen for s in sessions]) + bonus * adj
        j = int(np.argmax(np.where(free, key, -np.inf)))
        picks.append(j)
        free[j] = False
    return picks


def test_adjacent_order_is_the_stated_greedy():
    from mempursuit_core.policies import Neighbours, _greedy_order, _spread_key

    rng = np.random.default_rng(11)
    for trial in range(200):
        P = int(rng.integers(1, 30))
        # eighths: exact sums, so ties are real ties for both ways of adding the bonuses
        score = np.round(8 * rng.normal(size=P)) / 8
        sessions = [f"s{b}" for b in rng.integers(0, max(1, P // 4), size=P)]
        positions = rng.permutation(P + 3)[:P]  # gaps: not every memory has both neighbours
        penalty = float(rng.choice([0.0, 0.25, 1.0]))
        bonus = float(rng.choice([0.125, 0.75, 5.0]))
        k = int(rng.integers(1, P + 1))
        order = np.argsort(-score, kind="stable")
        group, key = _spread_key(score, order, sessions, penalty)
        got = _greedy_order(key, order, k, [Neighbours(group, positions, bonus)])
        assert got[:k].tolist() == _greedy_with_neighbours(score, sessions, positions, penalty,
                                                           bonus, k), trial
        assert sorted(got.tolist()) == list(range(P))


def test_adjacent_takes_the_neighbour_of_a_pick(rng):
    q, M = _background_pool()
    P = len(M)
    rel = _centred_relevance(q, M)
    by_rel = np.argsort(-rel, kind="stable")
    best, last = int(by_rel[0]), int(by_rel[-1])
    positions = 10 * np.arange(P)
    positions[last] = positions[best] + 1  # the least relevant memory is the best one's only neighbour
    signals = {"session_ids": ["one"] * P, "positions": positions}
    off = get_selector("centered-fusion", spread=0).select(q, M, 2, signals=signals)
    assert last not in off.order.tolist()
    on = get_selector("centered-fusion", spread=0, adjacent=100).select(q, M, 2, signals=signals)
    assert on.order.tolist() == [best, last]
    # in another session the same position is no neighbour
    apart = {"session_ids": ["one"] * P, "positions": positions}
    apart["session_ids"] = ["two" if i == last else "one" for i in range(P)]
    assert last not in get_selector("centered-fusion", spread=0, adjacent=100).select(
        q, M, 2, signals=apart).order.tolist()
    # nested: the first k of a longer selection
    long = get_selector("centered-fusion", adjacent=0.8).select(q, M, 10, signals=signals).order
    short = get_selector("centered-fusion", adjacent=0.8).select(q, M, 4, signals=signals).order
    assert short.tolist() == long[:4].tolist()
    with pytest.raises(ValueError, match="positions"):
        get_selector("centered-fusion", adjacent=1).select(
            q, M, 2, signals={"positions": ["a"] * P})
    with pytest.raises(ValueError, match="positions"):
        get_selector("centered-fusion", adjacent=1).select(q, M, 2, signals={"positions": [1, 2]})


def test_default_policy_leaves_unread_signals_unread(rng):
    """Asking whether a lazy signal exists runs only that signal's producer: the default policy
    must not size the mapping (len() would run every optional producer, such as a framework's
    keyword search) to learn whether there are signals at all."""
    from mempursuit_core.signals import PoolSignals

    q = rng.standard_normal(16)
    M = rng.standard_normal((12, 16))
    ran = []

    def expensive():
        ran.append("lexical")
        return np.ones(12)

    signals = PoolSignals({"query_text": lambda: "what happened on 3 June 2023?"},
                          optional={"lexical": expensive})
    get_selector("centered-fusion", weight=0, adjacent=1.0).select(q, M, 5, signals=signals)
    assert ran == []


def test_the_default_policys_options_are_declared_once_each_place():
    """The signature (defaults), the constraints table (checks) and the docstring (meaning)
    name the same options, so a new channel's weight cannot be half-added."""
    import inspect
    import re

    from mempursuit_core.policies import CenteredFusion

    signature = list(inspect.signature(CenteredFusion).parameters)
    documented = re.findall(r"^    (\w+) : ", CenteredFusion.__doc__, flags=re.M)
    assert set(signature) == set(CenteredFusion._parameter_constraints) == set(documented)
    weights = {option for _, option, _ in CenteredFusion.CHANNELS}
    assert weights <= set(signature)
    built = CenteredFusion()
    assert all(getattr(built, name) == inspect.signature(CenteredFusion).parameters[name].default
               for name in signature)


def test_query_terms_of_a_longer_pool_extend_the_shorter_ones():
    from mempursuit_core.lexical import QueryTerms, pool_bm25

    q, M, texts, query = _pool_with_texts()
    shorter = QueryTerms.of(texts[:2], query, stem=True)
    longer = shorter.extended(texts[2:])
    whole = QueryTerms.of(texts, query, stem=True)
    np.testing.assert_array_equal(longer.tf, whole.tf)
    np.testing.assert_array_equal(longer.lengths, whole.lengths)
    np.testing.assert_array_equal(longer.bm25(), pool_bm25(texts, query, stem=True))
    assert shorter.tf.shape[0] == 2 and not np.array_equal(shorter.bm25(), longer.bm25()[:2])


def test_derived_values_are_made_once_and_a_longer_pool_extends_the_shorter_ones():
    from mempursuit_core.follow import Fetched, extended_signals
    from mempursuit_core.signals import PoolSignals, derived

    made, extended = [], []
    make = lambda: made.append(1) or ["a", "b"]  # noqa: E731
    grow = lambda value, P: extended.append(P) or value + ["c"]  # noqa: E731
    signals = PoolSignals(values={"texts": ["a", "b"]})
    wider = extended_signals(signals, 2, Fetched(["c"], np.ones((1, 2)), {"texts": ["c"]}))
    assert derived(wider, "x", make, grow) == ["a", "b"] and made == [1]  # the shorter had none
    assert derived(signals, "y", make, grow) == ["a", "b"]
    assert derived(signals, "y", make, grow) == ["a", "b"] and made == [1, 1]  # kept
    wider = extended_signals(signals, 2, Fetched(["c"], np.ones((1, 2)), {"texts": ["c"]}))
    assert derived(wider, "y", make, grow) == ["a", "b", "c"] and extended == [2]
    assert derived({"texts": ["a"]}, "y", make) == ["a", "b"] and made == [1, 1, 1]  # a dict


@pytest.mark.parametrize("seed", range(6))
def test_the_second_choice_over_derived_values_is_the_choice_over_fresh_signals(seed):
    """The policy over the second read's pool reads the first pool's term counts and title
    links and extends them: its order is the order over the same values read afresh."""
    from mempursuit_core.follow import Fetched, extended_signals
    from mempursuit_core.signals import PoolSignals

    rng = np.random.default_rng(seed)
    names = ["Aretha Franklin", "Detroit", "Café Noir", "Leaving You (song)", "Memphis",
             "Kiss and Tell (1945 film)", "Father", "New York City", "Columbia Records"]
    P, m, d = 24, 6, 16
    titles = [names[i] for i in rng.integers(0, len(names), P + m)]
    texts = [f"{t} was recorded with " + " and ".join(
             names[j] for j in rng.integers(0, len(names), rng.integers(1, 3))) + " songs."
             for t in titles]
    V = rng.normal(size=(P + m, d))
    q = V[0] + 0.3 * rng.normal(size=d)
    query = "Where did the performer of Leaving You die, in Memphis or Detroit?"
    first = PoolSignals(values={"texts": texts[:P], "titles": titles[:P], "query_text": query})
    sel = get_selector("centered-fusion", follow=0)
    sel.select(q, V[:P], 5, signals=first)  # the first choice derives its values
    assert {key if isinstance(key, str) else key[0] for key in first._derived} == {
        "title links", "query terms", "pool texts"}
    wider = extended_signals(first, P, Fetched(list(range(m)), V[P:],
                                               {"texts": texts[P:], "titles": titles[P:]}))
    fresh = {"texts": texts, "titles": titles, "query_text": query}
    for k in (3, 8):
        got = sel.select(q, V, k, signals=wider)
        want = sel.select(q, V, k, signals=fresh)
        assert got.order.tolist() == want.order.tolist() and got.info == want.info
