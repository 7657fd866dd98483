"""Property-based tests (hypothesis) of the core's select / select_batch and every built-in selector.

Pools are random in shape (P = 0 .. 10, d = 1 .. 6), content (Gaussian, small integers,
non-negative, clustered), structure (exact duplicates, scaled copies, near-duplicates at
1e-6 .. 1e-15), per-row scale (1e-150 .. 1e150) and storage (float32 / float64 / integer,
read-only, non-contiguous, Fortran order). Budgets run from 1 past P (and a huge int).

Properties:

* a valid input gives a valid order: unique ints in range(P), ``min(k, P)`` of them
  (``mempursuit:adaptive=true``: between 1 and ``min(k, P)``);
* an input with NaN / infinite / zero rows (or a bad query) raises a ``ValueError`` naming the
  first bad row (the query); anything else a caller may pass is a valid order or a
  ``ValueError`` / ``TypeError`` with a message, never another exception type;
* equal inputs give equal orders: float32 (exactly representable) == its float64 copy,
  read-only / non-contiguous / integer == the contiguous float64 array, ``select_batch`` ==
  ``select`` one by one (ragged and shared pools), a selector's ``select_batch`` == its
  ``select``, and nested selectors' smaller budgets are prefixes of larger ones.

The examples are derandomized (no database), so CI sees the same cases every run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mempursuit_core
from mempursuit_core import get_selector, select, select_batch
from conftest import current_names

pytestmark = pytest.mark.slow  # hypothesis searches: the longest module of the unit suite

SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])
#: ``MEMPURSUIT_PROPERTY_SCALE=10`` runs ten times as many examples (a longer, still
#: deterministic search); the default keeps the file under a minute on two cores.
_SCALE = max(1, int(os.environ.get("MEMPURSUIT_PROPERTY_SCALE", "1")))
FAST = settings(max_examples=150 * _SCALE, **SETTINGS)
SLOW = settings(max_examples=60 * _SCALE, **SETTINGS)  # each example runs every selector

#: Every registered selector (the experimental ones too) and the paper's rule with its
#: adaptive stop.
# qdrant-mmr (the eval's baseline) runs Qdrant's engine, which takes float32 vectors; it is
# checked against mmr in tests/test_qdrant_mmr.py, not on these adversarial float64 pools.
# The haystack-* baselines (tests/test_haystack_rankers.py) rank the pool's texts with their own
# model, not its vectors.
SELECTORS = {name: get_selector(name) for name in current_names(mempursuit_core.list_selectors())
             if name != "qdrant-mmr" and not name.startswith("haystack-")}
SELECTORS["mempursuit:adaptive=true"] = get_selector("mempursuit", adaptive=True)
NAMES = sorted(SELECTORS)
#: Selectors that never look at the embeddings (bad rows are not their business).
EMBEDDING_BLIND = {"native"}
#: Selectors that may return fewer than min(k, P) positions.
EARLY_STOPPING = {"mempursuit:adaptive=true"}
WORDS = ("apple", "river", "painted", "painting", "blue", "house", "moved", "paris", "dog",
         "dogs", "running", "ran", "the", "and", "job", "sister", "concert", "2023")
ALLOWED = (ValueError, TypeError)


# --------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------


@dataclass
class Case:
    q: np.ndarray  # (d,) float64
    M: np.ndarray  # (P, d) float64, C-contiguous
    k: int
    signals: dict = field(default_factory=dict)
    f32: bool = False  # every value of M is a float32 value
    integral: bool = False  # every value of M is a (small) integer

    @property
    def P(self) -> int:
        return self.M.shape[0]


def _base_rows(rng, kind, P, d):
    if kind == "int":
        return rng.integers(-3, 4, size=(P, d)).astype(np.float64)
    if kind == "nonneg":
        return np.abs(rng.standard_normal((P, d)))
    if kind == "cluster":
        c = rng.standard_normal((max(1, P // 3), d))
        return c[rng.integers(0, len(c), P)] + 0.05 * rng.standard_normal((P, d))
    return rng.standard_normal((P, d))


@st.composite
def cases(draw, *, min_p=0, max_p=10, d=None, f32=None, scales=True):
    """A valid (finite rows, nonzero query) pool, query, budget and signals."""
    P = draw(st.integers(min_p, max_p))
    d = draw(st.integers(1, 6)) if d is None else d
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["gauss", "int", "nonneg", "cluster"]))
    f32 = draw(st.booleans()) if f32 is None else f32
    M = _base_rows(rng, kind, P, d)
    integral = kind == "int"
    if f32:
        M = M.astype(np.float32).astype(np.float64)
    if P:
        # Rows must be nonzero: a zero integer row gets a 1.
        zero = ~np.any(M != 0, axis=1)
        M[zero, rng.integers(0, d, zero.sum())] = 1.0
    if P >= 2 and draw(st.booleans()):  # exact duplicates, some scaled by a power of two
        for _ in range(draw(st.integers(1, P))):
            i, j = rng.integers(0, P, 2)
            M[j] = M[i] * (2.0 ** int(rng.integers(-3, 4)) if rng.random() < 0.3 else 1.0)
    if P >= 2 and draw(st.booleans()):  # near-duplicates
        eps = draw(st.sampled_from([1e-6, 1e-9, 1e-12, 1e-15]))
        for _ in range(draw(st.integers(1, P))):
            i, j = rng.integers(0, P, 2)
            M[j] = M[i] * (1.0 + eps * rng.standard_normal(d))
        integral = False
        if f32:
            M = M.astype(np.float32).astype(np.float64)
    if P and scales and draw(st.booleans()):  # per-row scale
        integral = False
        if f32:  # powers of two keep the float32 values exact (and in float32's range)
            M *= 2.0 ** rng.integers(-60, 61, size=(P, 1)).astype(np.float64)
        else:
            M *= 10.0 ** rng.uniform(-150, 150, size=(P, 1))
    if f32:
        assert np.array_equal(M.astype(np.float32).astype(np.float64), M)
    integral = integral and bool(np.all(M == np.round(M)) and np.all(np.abs(M) <= 127))
    # The query: random, a row of the pool, or a mix of rows; at its own scale.
    qkind = draw(st.sampled_from(["random", "row", "mix"])) if P else "random"
    if qkind == "row":
        q = M[rng.integers(0, P)].copy()
    elif qkind == "mix":
        S = M / np.abs(M).max(axis=1, keepdims=True)
        U = S / np.linalg.norm(S, axis=1, keepdims=True)
        q = rng.random(P) @ U + 0.1 * rng.standard_normal(d)
    else:
        q = rng.standard_normal(d)
    if not np.any(q != 0) or not np.all(np.isfinite(q)):
        q = np.ones(d)
    if f32:
        q = q.astype(np.float32).astype(np.float64)
        if not np.any(q != 0):
            q = np.ones(d)
    if scales and draw(st.booleans()):
        q = q * (2.0 ** int(rng.integers(-60, 61)) if f32 else 10.0 ** rng.uniform(-150, 150))
    k = draw(st.one_of(st.integers(1, P + 3), st.sampled_from([10**30, np.int64(2)])))
    signals = draw(signals_for(P, rng))
    return Case(q, np.ascontiguousarray(M), k, signals, f32, integral)


@st.composite
def signals_for(draw, P, rng):
    """``sparse`` / ``query_sparse`` (always: experimental/pursuit-joint needs them) and, sometimes,
    ``texts`` / ``query_text`` (centered-fusion's pool BM25)."""
    m = draw(st.integers(1, 5))
    sparse = np.abs(rng.standard_normal((P, m))) * (rng.random((P, m)) < 0.6)
    qs = np.abs(rng.standard_normal(m)) * (rng.random(m) < 0.7)
    signals = {"sparse": sparse, "query_sparse": qs}
    if draw(st.booleans()):
        words = st.lists(st.sampled_from(WORDS), min_size=0, max_size=5).map(" ".join)
        signals["texts"] = draw(st.lists(words, min_size=P, max_size=P))
        signals["query_text"] = draw(words)
    when = draw(st.sampled_from([None, "session_ids", "timestamps", "time_buckets"]))
    if when == "session_ids":
        signals["session_ids"] = [int(s) for s in rng.integers(0, 3, P)]
    elif when == "timestamps":
        stamps = st.one_of(st.none(), st.just(""), st.floats(allow_nan=True),
                           st.integers(-10**12, 10**12),
                           st.sampled_from(["2023-05-01T10:00", "2023-05-02", "2024-01-01 9:00"]))
        signals["timestamps"] = draw(st.lists(stamps, min_size=P, max_size=P))
    elif when == "time_buckets":
        signals["time_buckets"] = [None if r < 0.2 else f"b{int(3 * r)}" for r in rng.random(P)]
    return signals


BAD_VALUES = ("nan", "inf", "-inf", "zero", "one-nan", "one-inf")


def corrupt(M, rows, how, rng):
    M = M.copy()
    for i, h in zip(rows, how):
        if h == "zero":
            M[i] = 0.0
        elif h.startswith("one-"):
            M[i, rng.integers(0, M.shape[1])] = float(h[4:])
        else:
            M[i] = float(h)
    return M


@st.composite
def bad_cases(draw):
    """A valid case with some candidate rows made NaN / infinite / zero; (case, first bad row)."""
    case = draw(cases(min_p=1))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rows = draw(st.lists(st.integers(0, case.P - 1), min_size=1, max_size=3, unique=True))
    how = draw(st.lists(st.sampled_from(BAD_VALUES), min_size=len(rows), max_size=len(rows)))
    return replace(case, M=corrupt(case.M, rows, how, rng), f32=False, integral=False), min(rows)


# --------------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------------


def expected_len(k, P):
    return min(int(k), P)


def assert_valid_order(order, k, P, *, early=False):
    order = np.asarray(order)
    assert order.ndim == 1
    assert order.size == 0 or np.issubdtype(order.dtype, np.integer), order.dtype
    values = order.tolist()
    assert len(set(values)) == len(values), f"repeated positions in {values}"
    assert all(0 <= v < P for v in values), f"positions outside range({P}): {values}"
    n = expected_len(k, P)
    if early:
        assert min(1, n) <= len(values) <= n, (len(values), n)
    else:
        assert len(values) == n, (len(values), n)


def assert_result(res, k, P, adaptive=False):
    """A PursuitResult as documented: a valid order, simplex weights, finite diagnostics."""
    assert_valid_order(res.order, k, P, early=adaptive)
    n = len(res.order)
    assert res.pool_size == P
    assert res.weights.shape == res.losses.shape == res.gaps.shape == (n,)
    for name in ("weights", "losses", "gaps"):
        assert np.all(np.isfinite(getattr(res, name))), (name, getattr(res, name))
    assert np.all(res.weights >= 0) and np.all(res.losses >= 0) and np.all(res.gaps >= 0)
    if n:
        assert abs(res.weights.sum() - 1.0) < 1e-9, res.weights
    if not adaptive:
        assert res.stop_reason is None


def outcome(fn, *args, **kwargs):
    """The function's value, or the ValueError/TypeError it raised (after checking that its
    message says something); any other exception propagates and fails the test."""
    try:
        return fn(*args, **kwargs)
    except ALLOWED as exc:
        assert str(exc).strip(), f"{type(exc).__name__} without a message"
        return exc


def run_selector(name, q, M, k, signals):
    return SELECTORS[name].select(q, M, k, signals=signals)


def variants(case):
    """Copies of the case's pool that hold the same numbers: (label, array)."""
    M = case.M
    P, d = M.shape
    out = []
    ro = M.copy()
    ro.flags.writeable = False
    out.append(("read-only", ro))
    big = np.zeros((2 * P, 3 * d))
    big[::2, ::3] = M
    out.append(("strided view", big[::2, ::3]))
    out.append(("fortran", np.asfortranarray(M)))
    if case.f32:
        m32 = M.astype(np.float32)
        out.append(("float32", m32))
        ro32 = m32.copy()
        ro32.flags.writeable = False
        out.append(("float32 read-only", ro32))
        big32 = np.zeros((P, 2 * d), dtype=np.float32)
        big32[:, 1::2] = m32
        out.append(("float32 strided", big32[:, 1::2]))
    if case.integral:
        out.append(("int64", M.astype(np.int64)))
        out.append(("int8", M.astype(np.int8)))
        out.append(("int32 read-only", np.require(M.astype(np.int32), requirements="W")))
        out[-1][1].flags.writeable = False
    return out


# --------------------------------------------------------------------------------------------
# select
# --------------------------------------------------------------------------------------------


@FAST
@given(cases(), st.booleans(), st.sampled_from([1e-10, 0.0, 1e-3]))
def test_select_valid_pool_gives_a_valid_documented_result(case, adaptive, ridge):
    res = select(case.q, case.M, case.k, adaptive=adaptive, ridge=ridge)
    assert_result(res, case.k, case.P, adaptive=adaptive)


@SLOW
@given(cases(min_p=15, max_p=40), st.booleans(), st.sampled_from([1e-10, 0.0]))
def test_select_larger_pools_with_copies(case, adaptive, ridge):
    res = select(case.q, case.M, case.k, adaptive=adaptive, ridge=ridge)
    assert_result(res, case.k, case.P, adaptive=adaptive)
    for label, M in variants(case)[:1] + variants(case)[3:4]:
        assert select(case.q, M, case.k, adaptive=adaptive, ridge=ridge).order.tolist() \
            == res.order.tolist(), label
    for name in NAMES:
        sel = run_selector(name, case.q, case.M, case.k, case.signals)
        assert_valid_order(sel.order, case.k, case.P, early=name in EARLY_STOPPING)


@FAST
@given(cases())
def test_select_same_numbers_same_order(case):
    ref = select(case.q, case.M, case.k)
    for label, M in variants(case):
        got = select(case.q, M, case.k)
        assert got.order.tolist() == ref.order.tolist(), label
        np.testing.assert_allclose(got.weights, ref.weights, rtol=1e-12, atol=1e-15,
                                   err_msg=label)


@FAST
@given(cases(f32=True))
def test_select_float32_query_and_pool_same_as_float64(case):
    q32 = case.q.astype(np.float32)
    assert np.array_equal(q32.astype(np.float64), case.q)
    ref = select(case.q, case.M, case.k)
    got = select(q32, case.M.astype(np.float32), case.k)
    assert got.order.tolist() == ref.order.tolist()


@FAST
@given(cases(min_p=1), st.integers(1, 12))
def test_select_smaller_budgets_are_prefixes(case, k2):
    k1 = min(int(case.k), k2)
    long = select(case.q, case.M, max(int(case.k), k2) if int(case.k) < 10**6 else case.k)
    short = select(case.q, case.M, k1)
    assert short.order.tolist() == long.order.tolist()[:len(short.order)]
    assert len(short.order) == expected_len(k1, case.P)


@FAST
@given(bad_cases())
def test_select_bad_rows_are_named(bad):
    case, row = bad
    with pytest.raises(ValueError, match=rf"candidate row {row}\b"):
        select(case.q, case.M, case.k)


@FAST
@given(cases(min_p=1), st.sampled_from(["nan", "inf", "zero"]))
def test_select_bad_query_is_named(case, how):
    q = case.q.copy()
    q[:] = 0.0 if how == "zero" else float(how)
    with pytest.raises(ValueError, match="query"):
        select(q, case.M, case.k)


@FAST
@given(st.integers(0, 6), st.integers(1, 5), st.booleans())
def test_select_empty_pool(d, k, flat):
    M = np.empty(0) if flat else np.empty((0, d))
    res = select(np.ones(d), M, k)
    assert len(res.order) == 0 and res.pool_size == 0


ODD_K = st.one_of(st.integers(-3, 0), st.floats(allow_nan=True), st.just(True), st.none(),
                  st.just("3"), st.just(np.float64(2.0)), st.integers(1, 4))
ODD_ARRAYS = st.sampled_from([
    "ok", "complex", "object", "strings", "3d", "1d", "bool", "float16", "uint64",
    "ragged-list", "list", "dim-mismatch", "d0",
])


def odd_pool(kind, M):
    P, d = M.shape
    return {
        "ok": M,
        "complex": M.astype(np.complex128),
        "object": M.astype(object),
        "strings": np.array([["a"] * d] * P),
        "3d": M[None],
        "1d": M.reshape(-1),
        "bool": M > 0,
        "float16": M.astype(np.float16),
        "uint64": np.abs(M).astype(np.uint64),
        "ragged-list": [list(r) for r in M][:1] + [[1.0] * (d + 1)],
        "list": M.tolist(),
        "dim-mismatch": np.hstack([M, M]),
        "d0": np.empty((P, 0)),
    }[kind]


@FAST
@given(cases(scales=False), ODD_ARRAYS, ODD_ARRAYS, ODD_K)
def test_select_odd_arguments_give_an_order_or_a_clear_error(case, pool_kind, query_kind, k):
    M = odd_pool(pool_kind, case.M)
    q = odd_pool(query_kind, case.q[None])
    if query_kind == "ok":
        q = case.q
    res = outcome(select, q, M, k)
    if not isinstance(res, Exception):
        assert_valid_order(res.order, k, res.pool_size)


# --------------------------------------------------------------------------------------------
# select_batch
# --------------------------------------------------------------------------------------------


@st.composite
def ragged(draw):
    d = draw(st.integers(1, 5))
    f32 = draw(st.booleans())
    items = draw(st.lists(cases(d=d, f32=f32), min_size=1, max_size=4))
    return d, items


@FAST
@given(ragged(), st.integers(1, 12), st.booleans(), st.sampled_from([None, 1, 2]),
       st.sampled_from(["same", "float32", "mixed"]))
def test_select_batch_ragged_equals_select(rp, k, adaptive, threads, dtypes):
    d, items = rp
    f32 = items[0].f32
    pools = [c.M for c in items]
    if f32 and dtypes == "float32":
        pools = [m.astype(np.float32) for m in pools]
    elif f32 and dtypes == "mixed":
        pools = [m.astype(np.float32) if i % 2 else m for i, m in enumerate(pools)]
    queries = [c.q for c in items]
    out = select_batch(queries, pools, k, adaptive=adaptive, threads=threads)
    assert len(out) == len(items)
    for c, res, pool in zip(items, out, pools):
        assert_result(res, k, c.P, adaptive=adaptive)
        one = select(c.q, pool, k, adaptive=adaptive)
        assert res.order.tolist() == one.order.tolist()
        np.testing.assert_allclose(res.weights, one.weights, rtol=1e-12, atol=1e-15)
        assert res.stop_reason == one.stop_reason


@FAST
@given(cases(), st.integers(1, 4), st.booleans(), st.booleans())
def test_select_batch_shared_pool_equals_select(case, B, adaptive, as_array):
    rng = np.random.default_rng(case.P * 31 + B)
    queries = [case.q] + [rng.standard_normal(case.M.shape[1]) for _ in range(B - 1)]
    pool = case.M.astype(np.float32) if case.f32 else case.M
    out = select_batch(np.stack(queries) if as_array else queries, pool, case.k,
                       adaptive=adaptive)
    assert len(out) == B
    for q, res in zip(queries, out):
        assert_result(res, case.k, case.P, adaptive=adaptive)
        assert res.order.tolist() == select(q, pool, case.k, adaptive=adaptive).order.tolist()


@FAST
@given(st.lists(bad_cases(), min_size=1, max_size=3), st.integers(0, 3))
def test_select_batch_bad_rows_name_pool_and_row(bads, n_good):
    d = bads[0][0].M.shape[1]
    bads = [b for b in bads if b[0].M.shape[1] == d]
    rng = np.random.default_rng(n_good)
    good = [rng.standard_normal((3, d)) for _ in range(n_good)]
    pools = good + [b[0].M for b in bads]
    queries = [np.ones(d)] * n_good + [b[0].q for b in bads]
    first, row = n_good, bads[0][1]
    with pytest.raises(ValueError, match=rf"candidate row {row} of pools\[{first}\]"):
        select_batch(queries, pools, 3)


@FAST
@given(st.integers(0, 4), st.integers(1, 4), st.integers(1, 5))
def test_select_batch_empty(B, d, k):
    for pools in (np.empty((0, d)), [np.empty((0, d))] * B, [np.empty(0)] * B):
        out = select_batch(np.ones((B, d)), pools, k)
        assert len(out) == B and all(len(r.order) == 0 and r.pool_size == 0 for r in out)


# --------------------------------------------------------------------------------------------
# Every registered selector
# --------------------------------------------------------------------------------------------


def test_every_builtin_is_covered():
    assert set(NAMES) >= {"native", "mempursuit", "mempursuit:adaptive=true", "mmr",
                          "centered-fusion"} | {f"experimental/{n}" for n in (
                              "pursuit-rank", "pursuit-anchor", "pursuit-joint", "pursuit-time",
                              "native-dedup")}
    assert set(mempursuit_core.list_selectors()) >= set(NAMES) - {"mempursuit:adaptive=true"}



@SLOW
@given(cases())
def test_every_selector_gives_a_valid_order(case):
    for name in NAMES:
        sel = run_selector(name, case.q, case.M, case.k, case.signals)
        assert_valid_order(sel.order, case.k, case.P, early=name in EARLY_STOPPING)


@SLOW
@given(cases())
def test_every_selector_same_numbers_same_order(case):
    for name in NAMES:
        ref = run_selector(name, case.q, case.M, case.k, case.signals).order.tolist()
        for label, M in variants(case):
            got = run_selector(name, case.q, M, case.k, case.signals).order.tolist()
            assert got == ref, (name, label)


@SLOW
@given(st.lists(cases(d=3), min_size=1, max_size=3))
def test_every_selector_batch_equals_one_by_one(items):
    k = max(int(min(c.k, 10**6)) for c in items)
    for name in NAMES:
        sel = SELECTORS[name]
        out = sel.select_batch([c.q for c in items], [c.M for c in items], k,
                               signals=[c.signals for c in items])
        assert len(out) == len(items)
        for c, got in zip(items, out):
            one = sel.select(c.q, c.M, k, signals=c.signals)
            assert got.order.tolist() == one.order.tolist(), name


@SLOW
@given(cases(min_p=1), st.integers(1, 12))
def test_nested_selectors_smaller_budgets_are_prefixes(case, k2):
    k1, kk = sorted((int(min(case.k, 10**6)), k2))
    for name in NAMES:
        sel = SELECTORS[name]
        if not sel.nested:
            continue
        long = sel.select(case.q, case.M, kk, signals=case.signals).order.tolist()
        short = sel.select(case.q, case.M, k1, signals=case.signals).order.tolist()
        assert short == long[:len(short)], name


@SLOW
@given(bad_cases())
def test_every_embedding_selector_names_the_bad_row(bad):
    case, row = bad
    for name in NAMES:
        if name in EMBEDDING_BLIND:
            sel = run_selector(name, case.q, case.M, case.k, case.signals)
            assert_valid_order(sel.order, case.k, case.P)
            continue
        with pytest.raises(ValueError, match=rf"candidate row {row}\b"):
            run_selector(name, case.q, case.M, case.k, case.signals)


@SLOW
@given(cases(min_p=1), st.sampled_from(["nan", "inf", "zero"]))
def test_every_embedding_selector_refuses_a_bad_query(case, how):
    q = np.full_like(case.q, 0.0 if how == "zero" else float(how))
    for name in NAMES:
        if name in EMBEDDING_BLIND:
            continue
        with pytest.raises(ValueError, match="query"):
            run_selector(name, q, case.M, case.k, case.signals)


@SLOW
@given(st.integers(0, 6), st.integers(1, 5), st.booleans())
def test_every_selector_empty_pool(d, k, flat):
    M = np.empty(0) if flat else np.empty((0, d))
    signals = {"sparse": np.empty((0, 2)), "query_sparse": np.ones(2), "texts": [],
               "query_text": "apple"}
    for name in NAMES:
        res = outcome(SELECTORS[name].select, np.ones(d), M, k, signals=signals)
        assert not isinstance(res, Exception), (name, res)
        assert len(res.order) == 0, name


@SLOW
@given(cases(scales=False), ODD_ARRAYS, ODD_K, st.sampled_from(["ok", "none", "short", "nan"]))
def test_every_selector_odd_arguments_give_an_order_or_a_clear_error(case, pool_kind, k, sig):
    M = odd_pool(pool_kind, case.M)
    signals = dict(case.signals)
    if sig == "none":
        signals = None
    elif sig == "short":
        signals["sparse"] = signals["sparse"][:-1]
        if "texts" in signals:
            signals["texts"] = signals["texts"][:-1]
    elif sig == "nan":
        signals["query_sparse"] = np.full_like(signals["query_sparse"], np.nan)
    for name in NAMES:
        res = outcome(run_selector, name, case.q, M, k, signals)
        if not isinstance(res, Exception):
            assert_valid_order(res.order, k, len(M) if hasattr(M, "__len__") else 0,
                               early=name in EARLY_STOPPING)


ODD_QUERIES = st.sampled_from(["ok", "scalar", "2d-row", "2d", "nan", "zero", "complex",
                               "strings", "short", "list"])


def odd_query(kind, q):
    return {
        "ok": q, "scalar": np.float64(1.0), "2d-row": q[None], "2d": np.stack([q, q]),
        "nan": np.full_like(q, np.nan), "zero": np.zeros_like(q),
        "complex": q.astype(np.complex128), "strings": np.array(["a"] * len(q)),
        "short": q[:-1], "list": q.tolist(),
    }[kind]


@FAST
@given(st.lists(cases(d=3, scales=False), min_size=1, max_size=3), ODD_QUERIES, ODD_ARRAYS,
       ODD_K, st.booleans())
def test_select_batch_odd_arguments_give_orders_or_a_clear_error(items, qkind, pkind, k, shared):
    queries = [odd_query(qkind, c.q) if i == 0 else c.q for i, c in enumerate(items)]
    pools = odd_pool(pkind, items[0].M) if shared else [odd_pool(pkind, c.M) for c in items]
    res = outcome(select_batch, queries, pools, k)
    if not isinstance(res, Exception):
        assert len(res) == len(items)
        for r in res:
            assert_valid_order(r.order, k, r.pool_size)


# --------------------------------------------------------------------------------------------
# Cases the properties above found (each failed before its fix)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pools", [[np.empty((0, 3))], np.empty((0, 3))],
                         ids=["ragged", "shared"])
def test_batch_scalar_query_with_only_empty_pools(pools):
    with pytest.raises(ValueError, match="query"):
        select(1.0, np.empty((0, 3)), 1)
    with pytest.raises(ValueError, match="query"):
        select_batch([1.0], pools, 1)
    with pytest.raises(ValueError, match="dimension mismatch"):  # as select: d is the pool's
        select_batch([np.ones(4)], pools, 1)
    assert [len(r) for r in select_batch([np.ones(3)], pools, 1)] == [0]


def test_joint_pursuit_scalar_sparse_signal_is_a_value_error():
    M = np.eye(3)
    with pytest.raises(ValueError, match="sparse"):
        get_selector("experimental/pursuit-joint").select(np.ones(3), M, 2,
                                              signals={"sparse": 1.0, "query_sparse": [1.0]})


def test_finite_rows_with_a_norm_above_float64_max_are_refused_clearly():
    # documented limit: the norm itself must be a float64 (entries up to ~1e300 are fine)
    M = np.array([[1.5e308, 1.5e308], [1.0, 0.0]])
    with pytest.raises(ValueError, match="candidate row 0 .*beyond the float64 range"):
        select(np.array([1.0, 1.0]), M, 1)


# --------------------------------------------------------------------------------------------
# One validation path: every selector, ``native`` included, answers bad input alike (issue 26)
# --------------------------------------------------------------------------------------------


def _error(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except (ValueError, TypeError) as exc:
        return type(exc), str(exc)
    return None


@FAST
@given(cases(min_p=1, scales=False), st.sampled_from(
    ["complex", "object", "strings", "3d", "1d", "dim-mismatch", "d0"]))
def test_every_selector_refuses_a_bad_pool_with_the_same_error(case, kind):
    M = odd_pool(kind, case.M)
    if kind == "object":  # an object array of numbers is refused by dtype, like complex
        M = np.asarray(M, dtype=object)
    errors = {name: _error(SELECTORS[name].select, case.q, M, 3, signals=case.signals)
              for name in NAMES}
    assert set(errors.values()) == {_error(select, case.q, M, 3)}, errors
    assert None not in errors.values()
    batch = _error(SELECTORS["native"].select_batch, [case.q], [M], 3)
    assert batch is not None and batch[0] is ValueError


@FAST
@given(cases(min_p=1, scales=False), st.sampled_from(
    ["scalar", "2d", "complex", "strings", "short"]))
def test_every_selector_refuses_a_bad_query_shape_with_the_same_error(case, kind):
    q = odd_query(kind, case.q)
    errors = {name: _error(SELECTORS[name].select, q, case.M, 3, signals=case.signals)
              for name in NAMES}
    assert set(errors.values()) == {_error(select, q, case.M, 3)}, errors
    assert None not in errors.values()
    assert _error(SELECTORS["native"].select_batch, [q], [case.M], 3) is not None


@pytest.mark.parametrize("signals", [[{"texts": []}], "texts", 5, object()],
                         ids=["list", "str", "int", "object"])
def test_every_selector_names_signals_that_are_not_a_mapping(signals):
    q, M = np.ones(3), np.eye(3) + 0.1
    for name in NAMES:
        with pytest.raises(TypeError, match="signals must be a mapping"):
            SELECTORS[name].select(q, M, 2, signals=signals)
        with pytest.raises(TypeError, match="signals"):
            SELECTORS[name].select_batch([q], [M], 2, signals={"texts": ["a", "b", "c"]})


@pytest.mark.parametrize("key", ["texts", "timestamps", "speakers", "session_ids",
                                 "time_buckets"])
@pytest.mark.parametrize("value", [None, 3, "abc", ["a"], {"a": 1}])
def test_garbage_signal_values_are_named(key, value):
    q, M = np.ones(3), np.eye(3) + 0.1
    signals = {"query_text": "What did Caroline paint on 3 June, 2023? How many?",
               "texts": ["a", "b", "c"], key: value}
    if value is None and key in ("session_ids", "time_buckets"):
        return  # an absent time signal: the next one is used
    with pytest.raises(ValueError, match=f"'{key}'"):
        get_selector("centered-fusion").select(q, M, 2, signals=signals)


def test_native_scores_of_the_wrong_length_are_named():
    q, M = np.ones(3), np.eye(3) + 0.1
    for name in NAMES:
        with pytest.raises(ValueError, match="native_scores must be P=3 numbers"):
            SELECTORS[name].select(q, M, 2, native_scores=[1.0, 2.0])


def test_native_still_ignores_the_values_of_the_embeddings():
    M = np.full((4, 3), np.nan)
    assert SELECTORS["native"].select(np.zeros(3), M, 2).order.tolist() == [0, 1]
    with pytest.raises(ValueError, match="dimension mismatch"):
        SELECTORS["native"].select(np.zeros(2), M, 2)
