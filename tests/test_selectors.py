import numpy as np
import pytest

from conftest import clustered
from mempursuit_core import Selection, Selector, get_selector, list_selectors, select
from mempursuit_core.plugins import UnknownNameError


def test_builtin_selectors_are_registered():
    names = list_selectors()
    for name in ("native", "mempursuit", "mmr", "centered-fusion"):
        assert name in names and names[name]


def test_unknown_selector_names_what_exists():
    with pytest.raises(KeyError) as info:
        get_selector("nope")
    assert isinstance(info.value, UnknownNameError)
    assert "nope" in str(info.value) and "mempursuit" in str(info.value) and "native" in str(info.value)


def test_native_keeps_pool_order(rng):
    q, M = clustered(rng, P=30, d=16)
    sel = get_selector("native").select(q, M, 10)
    assert sel.order.tolist() == list(range(10))
    assert get_selector("native").select(q, M, 100).order.tolist() == list(range(30))
    with pytest.raises(ValueError):
        get_selector("native").select(q, M, 0)


def test_pursuit_selectors_wrap_select(rng):
    q, M = clustered(rng, P=60, d=200)
    sel = get_selector("mempursuit").select(q, M, 12)
    res = select(q, M, 12)
    np.testing.assert_array_equal(sel.order, res.order)
    np.testing.assert_allclose(sel.weights, res.weights)
    assert sel.stopped is None and len(sel.info["losses"]) == 12
    ada = get_selector("mempursuit", adaptive=True, tau=1e-3).select(q, M, 60)
    assert ada.stopped == "adaptive" and len(ada.order) < 60
    batch = get_selector("mempursuit").select_batch([q, q], [M, M[:20]], 5)
    assert [b.order.tolist() for b in batch] == [select(q, M, 5).order.tolist(),
                                                 select(q, M[:20], 5).order.tolist()]


def mmr_slow(q, M, k, lam=0.5):
    Mn = M / np.linalg.norm(M, axis=1, keepdims=True)
    qn = q / np.linalg.norm(q)
    chosen = []
    for _ in range(min(k, len(M))):
        best, best_score = None, -np.inf
        for i in range(len(M)):
            if i in chosen:
                continue
            red = max((Mn[i] @ Mn[j] for j in chosen), default=0.0)
            score = lam * (Mn[i] @ qn) - (1 - lam) * red
            if score > best_score + 1e-15:
                best, best_score = i, score
        chosen.append(best)
    return chosen


def test_mmr_matches_slow_definition(rng):
    q, M = clustered(rng, P=50, d=32)
    assert get_selector("mmr").select(q, M * 3.0, 15).order.tolist() == mmr_slow(q, M, 15)
    assert get_selector("mmr", lam=1.0).select(q, M, 5).order.tolist() == np.argsort(
        -(M @ q), kind="stable")[:5].tolist()
    with pytest.raises(ValueError):
        get_selector("mmr", lam=2.0)


def test_default_select_batch_loops_over_select(rng):
    q, M = clustered(rng, P=20, d=8)
    out = get_selector("mmr").select_batch([q, -q], [M, M], 4)
    assert [len(s.order) for s in out] == [4, 4]
    with pytest.raises(ValueError, match="2 queries but 1 pools"):
        get_selector("mmr").select_batch([q, q], [M], 4)


def test_selection_is_a_small_frozen_record():
    s = Selection(order=np.arange(3))
    with pytest.raises(Exception):
        s.order = np.arange(2)
    assert "native" in repr(get_selector("native"))
    assert issubclass(type(get_selector("mmr")), Selector)
