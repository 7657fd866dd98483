"""The pursuit kernel against the numpy reference, and the numerics checklist."""

import numpy as np
import pytest

from conftest import clustered, current_names
from mempursuit_core import select, select_batch
from mempursuit_core._reference import select_reference, simplex_qp

RIDGE = 1e-10


def objective(q, M, order, weights, ridge=RIDGE):
    Mn = M / np.linalg.norm(M, axis=1, keepdims=True)
    qn = q / np.linalg.norm(q)
    r = qn - Mn[order].T @ weights
    return 0.5 * r @ r + 0.5 * ridge * weights @ weights


def assert_matches_reference(q, M, k, **kw):
    res = select(q, M, k, **kw)
    order, weights, losses, gaps, margins = select_reference(q, M, k, tie_margins=True, **kw)
    # Orders must agree wherever the reference's choice is not a numerical tie.
    decided = np.flatnonzero(margins < 1e-9)
    upto = decided[0] if decided.size else len(order)
    assert upto >= min(k, len(M)) // 2, "test data has too many near-ties to be meaningful"
    np.testing.assert_array_equal(res.order[:upto], order[:upto])
    if upto == len(order):
        assert len(res.order) == len(order)
        assert abs(objective(q, M, res.order, res.weights)
                   - objective(q, M, order, weights)) < 1e-8
        np.testing.assert_allclose(res.losses, losses, atol=1e-9)
        np.testing.assert_allclose(res.gaps, gaps, atol=1e-8)
    return res


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("shape", [(50, 16), (200, 384), (30, 200)])
def test_random_pools_match_reference(seed, shape):
    rng = np.random.default_rng(seed)
    P, d = shape
    M = rng.standard_normal((P, d))
    q = rng.standard_normal(d)
    assert_matches_reference(q, M, min(P, 40))


@pytest.mark.parametrize("seed", range(4))
def test_clustered_pools_match_reference(seed):
    q, M = clustered(np.random.default_rng(100 + seed))
    assert_matches_reference(q, M, 30)


def test_weights_on_simplex_and_at_most_k(rng):
    q, M = clustered(rng)
    for k in (1, 2, 5, 17, 60):
        res = select(q, M, k)
        assert len(res.order) == k == len(set(res.order.tolist()))
        assert np.all(res.weights >= 0)
        assert abs(res.weights.sum() - 1) < 1e-12
        assert res.order.dtype == np.intp
        assert np.all(np.diff(res.losses) <= 1e-12), "fully corrective refits never increase the loss"


def test_prefixes_are_nested(rng):
    q, M = clustered(rng)
    full = select(q, M, 40).order
    for k in (1, 3, 10, 25):
        np.testing.assert_array_equal(select(q, M, k).order, full[:k])


def test_first_pick_is_best_cosine(rng):
    M = rng.standard_normal((80, 32))
    q = rng.standard_normal(32)
    cos = (M / np.linalg.norm(M, axis=1, keepdims=True)) @ (q / np.linalg.norm(q))
    assert select(q, M, 1).order[0] == np.argmax(cos)


def test_full_budget_reaches_simplex_optimum_with_zero_certificate(rng):
    P, d = 40, 64
    M = rng.standard_normal((P, d))
    q = rng.standard_normal(d)
    res = select(q, M, P)
    assert sorted(res.order.tolist()) == list(range(P))
    assert res.gaps[-1] == 0.0
    Mn = M / np.linalg.norm(M, axis=1, keepdims=True)
    qn = q / np.linalg.norm(q)
    best = simplex_qp(Mn @ Mn.T + RIDGE * np.eye(P), Mn @ qn)
    w = np.zeros(P)
    w[res.order] = res.weights
    assert abs(objective(q, M, np.arange(P), w) - objective(q, M, np.arange(P), best)) < 1e-10


def test_certificate_bounds_distance_to_optimum(rng):
    q, M = clustered(rng, P=60, d=32)
    Mn = M / np.linalg.norm(M, axis=1, keepdims=True)
    qn = q / np.linalg.norm(q)
    best = simplex_qp(Mn @ Mn.T + RIDGE * np.eye(len(M)), Mn @ qn)
    f_star = objective(q, M, np.arange(len(M)), best)
    res = select(q, M, 15)
    for t in range(1, 16):
        sub = select(q, M, t)
        gap_to_opt = objective(q, M, sub.order, sub.weights) - f_star
        assert -1e-12 <= gap_to_opt <= res.gaps[t - 1] + 1e-12


def test_kkt_conditions_hold_after_every_refit(rng):
    q, M = clustered(rng, P=90, d=48)
    Mn = M / np.linalg.norm(M, axis=1, keepdims=True)
    qn = q / np.linalg.norm(q)
    for k in (3, 8, 20, 45):
        res = select(q, M, k)
        S = res.order
        H = Mn[S] @ Mn[S].T + RIDGE * np.eye(k)
        grad = H @ res.weights - Mn[S] @ qn
        support = res.weights > 0
        mu = -grad[support].mean()
        np.testing.assert_allclose(grad[support], -mu, atol=1e-10)
        assert np.all(grad[~support] + mu >= -1e-10)


def test_float32_and_float64_agree(rng):
    q, M = clustered(rng, P=150, d=96)
    r64 = select(q, M.astype(np.float32).astype(np.float64), 25)
    r32 = select(q.astype(np.float32), M.astype(np.float32), 25)
    np.testing.assert_array_equal(r32.order, r64.order)
    np.testing.assert_allclose(r32.weights, r64.weights, atol=1e-9)
    r_orig = select(q, M, 25)  # float32 rounding of the data itself must not reorder this pool
    np.testing.assert_array_equal(r32.order[:20], r_orig.order[:20])


def test_read_only_non_contiguous_and_other_dtypes(rng):
    q, M = clustered(rng, P=50, d=32)
    expected = select(q, M, 10).order
    ro = M.copy()
    ro.flags.writeable = False
    np.testing.assert_array_equal(select(q, ro, 10).order, expected)
    fortran = np.asfortranarray(M)
    np.testing.assert_array_equal(select(q, fortran, 10).order, expected)
    strided = np.repeat(M, 2, axis=1)[:, ::2]
    assert not strided.flags.c_contiguous
    np.testing.assert_array_equal(select(q, strided, 10).order, expected)
    np.testing.assert_array_equal(select(list(q), M.tolist(), 10).order, expected)
    ints = np.round(M * 1000).astype(np.int32)
    assert len(select(q, ints, 10).order) == 10


def test_non_normalised_vectors_are_normalised(rng):
    q, M = clustered(rng, P=50, d=32)
    scales = rng.uniform(0.1, 50.0, size=(50, 1))
    np.testing.assert_array_equal(select(7.5 * q, M * scales, 12).order, select(q, M, 12).order)


def test_exact_duplicates_never_repeat_or_break_the_qp(rng):
    q, M = clustered(rng, P=40, d=32)
    Mdup = np.concatenate([M, M, M[:10]], axis=0)  # every row twice, some three times
    res = select(q, Mdup, len(Mdup))
    assert sorted(res.order.tolist()) == list(range(len(Mdup)))
    assert np.all(res.weights >= 0) and abs(res.weights.sum() - 1) < 1e-12
    first = select(q, M, 12).order
    dedup = select(q, Mdup, 12).order % 40
    np.testing.assert_array_equal(dedup, first)  # a copy is picked only where its original would be
    # Ties between identical rows go to the lowest native index.
    assert np.all(select(q, Mdup, 12).order < 40)


def test_ties_go_to_lowest_native_index():
    d = 8
    e = np.eye(d)
    M = np.stack([e[1], e[0], e[0], e[2], e[0]])
    q = e[0] + 0.1 * e[1]
    assert select(q, M, 1).order[0] == 1
    assert 1 in select(q, M, 3).order and 2 not in select(q, M, 2).order


def test_near_duplicates(rng):
    q, M = clustered(rng, P=60, d=32)
    near = M + 1e-9 * rng.standard_normal(M.shape)
    res = select(q, np.concatenate([M, near]), 30)
    assert len(set(res.order.tolist())) == 30
    assert abs(res.weights.sum() - 1) < 1e-12 and np.all(res.weights >= 0)


def test_proposition_1_fact_clusters_covered_once(rng):
    """h well-separated fact clusters of near-duplicates plus distractors: the first h picks
    take one representative of each cluster (and native cosine order does not)."""
    d, h = 256, 4
    centres = np.linalg.qr(rng.standard_normal((d, h + 6)))[0].T  # orthonormal facts
    facts, others = centres[:h], centres[h:]
    rows, owner = [], []
    for c in range(h):
        for _ in range(8 if c == 0 else 3):
            v = facts[c] + 0.03 * rng.standard_normal(d) / np.sqrt(d)
            rows.append(v / np.linalg.norm(v))
            owner.append(c)
    for _ in range(40):  # distractors: unrelated facts, a little query-like noise
        v = others[rng.integers(len(others))] + 0.3 * rng.standard_normal(d) / np.sqrt(d)
        rows.append(v / np.linalg.norm(v))
        owner.append(-1)
    perm = rng.permutation(len(rows))
    M = np.array(rows)[perm]
    owner = np.array(owner)[perm]
    q = facts.T @ np.array([0.7, 0.45, 0.4, 0.35])
    res = select(q, M, 10)
    assert sorted(owner[res.order[:h]].tolist()) == list(range(h))
    native = np.argsort(-(M @ q), kind="stable")[:h]
    assert len(set(owner[native].tolist())) < h  # the baseline wastes slots on paraphrases


def test_adaptive_stops_where_the_rule_says(rng):
    q, M = clustered(rng, P=80, d=200)
    full = select(q, M, 80)
    tau, patience = 1e-3, 2
    res = select(q, M, 80, adaptive=True, tau=tau, patience=patience)
    losses = np.concatenate([[1.0], full.losses])
    rel = (losses[:-1] - losses[1:]) / np.maximum(losses[:-1], 1e-12)
    flat = 0
    expected = len(rel)
    for t, r in enumerate(rel):
        flat = flat + 1 if r <= tau else 0
        if flat >= patience:
            expected = t + 1
            break
    assert expected < 80, "data must trigger the stop"
    assert len(res.order) == expected
    assert res.stop_reason == "adaptive" and res.stopped_early
    np.testing.assert_array_equal(res.order, full.order[:expected])
    # tau = 0 on a pool whose loss keeps dropping never stops early
    never = select(q, M, 5, adaptive=True, tau=0.0)
    assert len(never.order) == 5 and never.stop_reason is None


def test_k_larger_than_pool_returns_all_and_p_equals_one(rng):
    M = rng.standard_normal((7, 16))
    q = rng.standard_normal(16)
    res = select(q, M, 50)
    assert sorted(res.order.tolist()) == list(range(7))
    one = select(q, M[:1], 5)
    assert one.order.tolist() == [0] and one.weights.tolist() == [1.0]


def test_empty_pool_gives_empty_result():
    res = select(np.ones(4), np.empty((0, 4)), 3)
    assert len(res.order) == 0 and res.pool_size == 0
    assert len(select(np.ones(4), [], 3).order) == 0


@pytest.mark.parametrize(
    "q, M, k, message",
    [
        (np.ones(4), np.ones((3, 5)), 2, "dimension mismatch"),
        (np.ones((2, 4)), np.ones((3, 4)), 2, "1-D vector"),
        (np.ones(4), np.ones(4), 2, "2-D array"),
        (np.ones(4), np.ones((2, 3, 4)), 2, "2-D array"),
        (np.array([1.0, np.nan, 0, 0]), np.ones((3, 4)), 2, "NaN or infinite"),
        (np.array([1.0, np.inf, 0, 0]), np.ones((3, 4)), 2, "NaN or infinite"),
        (np.zeros(4), np.ones((3, 4)), 2, "zero"),
        (np.ones(4), np.ones((3, 4)), 0, "k must be >= 1"),
        (np.ones(4), np.ones((3, 4)), -3, "k must be >= 1"),
        (np.ones(4), np.array([["a"] * 4]), 2, "real numbers"),
    ],
)
def test_bad_input_raises_clear_value_error(q, M, k, message):
    with pytest.raises(ValueError, match=message):
        select(q, M, k)


@pytest.mark.parametrize("bad_value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bad_candidate_rows_are_named(rng, bad_value, dtype):
    M = rng.standard_normal((6, 8)).astype(dtype)
    M[4, 2] = bad_value
    with pytest.raises(ValueError, match="candidate row 4 "):
        select(rng.standard_normal(8), M, 3)
    M = rng.standard_normal((6, 8)).astype(dtype)
    M[2] = 0.0
    with pytest.raises(ValueError, match="candidate row 2 .*zero norm"):
        select(rng.standard_normal(8), M, 3)


def test_bad_options():
    with pytest.raises(TypeError):
        select(np.ones(3), np.eye(3), 2.5)
    with pytest.raises(TypeError):
        select(np.ones(3), np.eye(3), True)
    for kw in ({"ridge": -1.0}, {"ridge": np.nan}, {"tau": -1e-3}, {"patience": 0}):
        with pytest.raises(ValueError):
            select(np.ones(3), np.eye(3), 2, **kw)


def test_zero_ridge_with_duplicates_is_guarded(rng):
    q, M = clustered(rng, P=30, d=16)
    res = select(q, np.concatenate([M, M]), 60, ridge=0.0)
    assert len(set(res.order.tolist())) == 60
    assert np.all(res.weights >= 0) and abs(res.weights.sum() - 1) < 1e-9


def test_batch_matches_single_with_ragged_pools(rng):
    queries, pools = [], []
    for P in (5, 40, 1, 120, 33):
        q, M = clustered(rng, P=max(P, 1), d=24, n_clusters=min(P, 12) or 1)
        queries.append(q)
        pools.append(M[:P])
    for threads in (1, 2):
        out = select_batch(queries, pools, 10, threads=threads)
        for q, M, res in zip(queries, pools, out):
            single = select(q, M, 10)
            np.testing.assert_array_equal(res.order, single.order)
            np.testing.assert_allclose(res.weights, single.weights, atol=1e-12)
            np.testing.assert_allclose(res.losses, single.losses, atol=1e-12)


def test_batch_shared_pool_mixed_dtypes_empty_and_errors(rng):
    q, M = clustered(rng, P=50, d=16)
    Q = np.stack([q, -q, q + 0.1])
    out = select_batch(Q, M.astype(np.float32), 5)
    for qi, res in zip(Q, out):
        np.testing.assert_array_equal(res.order, select(qi, M.astype(np.float32), 5).order)
    mixed = select_batch([q, q], [M.astype(np.float32), M], 5)
    np.testing.assert_array_equal(mixed[0].order, mixed[1].order)
    empty = select_batch([q, q], [np.empty((0, 16)), M], 5)
    assert len(empty[0].order) == 0 and len(empty[1].order) == 5
    assert select_batch([], [], 3) == []
    bad = M.copy()
    bad[7] = np.nan
    with pytest.raises(ValueError, match=r"candidate row 7 of pools\[1\]"):
        select_batch([q, q], [M, bad], 5)
    with pytest.raises(ValueError, match=r"queries\[1\]"):
        select_batch([q, np.zeros(16)], [M, M], 5)
    with pytest.raises(ValueError, match="2 queries but 1 pools"):
        select_batch([q, q], [M], 5)
    with pytest.raises(ValueError, match="different dimensions"):
        select_batch([q, q], [M, M[:, :8]], 5)


def test_batch_adaptive_matches_single(rng):
    q, M = clustered(rng, P=80, d=200)
    out = select_batch([q, q], [M, M[:40]], 80, adaptive=True, tau=1e-3)
    assert out[0].order.tolist() == select(q, M, 80, adaptive=True, tau=1e-3).order.tolist()
    assert out[1].order.tolist() == select(q, M[:40], 80, adaptive=True, tau=1e-3).order.tolist()


def test_result_repr_and_len(rng):
    q, M = clustered(rng, P=30, d=16)
    res = select(q, M, 12)
    assert len(res) == 12
    assert "of P=30" in repr(res) and "..." in repr(res)


def test_prior_extension_reduces_to_the_paper_rule_and_to_native(rng):
    q, M = clustered(rng, P=80, d=64)
    cos = (M / np.linalg.norm(M, axis=1, keepdims=True)) @ q
    plain = select(q, M, 20)
    with_cos_prior = select(q, M, 20, prior=cos, gamma=1.0)
    np.testing.assert_array_equal(with_cos_prior.order, plain.order)
    native_scores = np.linspace(1.0, 0.0, 80)  # the pool is in native order
    np.testing.assert_array_equal(select(q, M, 20, prior=native_scores, gamma=0.0).order,
                                  np.arange(20))
    kept = select(q, M, 20, keep=5)
    np.testing.assert_array_equal(kept.order[:5], np.arange(5))
    assert len(set(kept.order.tolist())) == 20
    assert abs(kept.weights.sum() - 1) < 1e-12 and np.all(kept.weights >= 0)
    with pytest.raises(ValueError, match="prior has 3 scores"):
        select(q, M, 5, prior=np.ones(3))
    with pytest.raises(ValueError, match="NaN"):
        select(q, M, 5, prior=np.full(80, np.nan))
    with pytest.raises(ValueError, match="gamma"):
        select(q, M, 5, prior=cos, gamma=-1.0)
    with pytest.raises(ValueError, match="keep"):
        select(q, M, 5, keep=-1)


def test_batch_priors_match_single(rng):
    q, M = clustered(rng, P=60, d=32)
    pri = [np.linspace(1, 0, 60), np.linspace(1, 0, 25)]
    out = select_batch([q, q], [M, M[:25]], 10, priors=pri, gamma=0.5, keep=2)
    for res, Mi, p in zip(out, [M, M[:25]], pri):
        np.testing.assert_array_equal(res.order, select(q, Mi, 10, prior=p, gamma=0.5, keep=2).order)
    with pytest.raises(ValueError, match=r"priors\[1\] has 3 scores"):
        select_batch([q, q], [M, M[:25]], 10, priors=[pri[0], np.ones(3)])


@pytest.mark.parametrize("seed", range(3))
def test_reference_qp_agrees_with_scipy(seed):
    """The oracle itself, checked against scipy's SLSQP on small well-conditioned simplex QPs."""
    optimize = pytest.importorskip("scipy.optimize")
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((12, 8))
    H = A.T @ A / 12 + 0.05 * np.eye(8)
    b = rng.standard_normal(8)
    f = lambda a: 0.5 * a @ H @ a - b @ a
    ours = simplex_qp(H, b)
    res = optimize.minimize(f, np.full(8, 1 / 8), jac=lambda a: H @ a - b, method="SLSQP",
                            bounds=[(0, None)] * 8,
                            constraints=[{"type": "eq", "fun": lambda a: a.sum() - 1}],
                            options={"ftol": 1e-15, "maxiter": 500})
    assert res.success
    assert f(ours) <= f(res.x) + 1e-10
    assert abs(f(ours) - f(res.x)) < 1e-8


# ---------------------------------------------------------------- the prior / keep extension


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("gamma,keep", [(0.5, 0), (1.0, 1), (0.25, 3), (2.0, 0)])
def test_prior_and_keep_match_reference(seed, gamma, keep):
    rng = np.random.default_rng(300 + seed)
    q, M = clustered(rng, P=80, d=32)
    prior = np.sort(rng.random(80))[::-1] + 0.05 * rng.standard_normal(80)
    assert_matches_reference(q, M, 25, prior=prior, gamma=gamma, keep=keep)


def test_prior_reference_is_not_the_paper_rule(rng):
    # the oracle must actually read the prior (else the test above compares nothing new)
    q, M = clustered(rng, P=60, d=24)
    prior = rng.random(60)
    plain = select_reference(q, M, 10)[0]
    with_prior = select_reference(q, M, 10, prior=prior, gamma=0.5)[0]
    assert plain.tolist() != with_prior.tolist()
    assert select_reference(q, M, 10, keep=3)[0][:3].tolist() == [0, 1, 2]


def test_options_are_frozen_complete_and_not_shared(rng):
    import dataclasses

    q, M = clustered(rng, P=30, d=16)
    res = select(q, M, 5, prior=np.linspace(1, 0, 30), gamma=0.5, keep=2)
    assert (res.options.gamma, res.options.keep, res.options.has_prior) == (0.5, 2, True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.options.ridge = 1.0
    batch = select_batch([q, q], [M, M], 4, gamma=0.25, keep=1, priors=[np.ones(30)] * 2)
    assert batch[0].options == batch[1].options
    assert (batch[0].options.gamma, batch[0].options.keep) == (0.25, 1)
    assert select_batch([q], M, 3)[0].options.has_prior is False


def test_bad_extension_options():
    for kw in ({"gamma": -1.0}, {"gamma": np.inf}, {"keep": -1}, {"keep": 1.5}):
        with pytest.raises((TypeError, ValueError)):
            select(np.ones(3), np.eye(3), 2, **kw)


@pytest.mark.slow  # many threads on a large batch
@pytest.mark.parametrize("layer", ["workqueue", "default"])
def test_select_batch_from_several_threads(layer, tmp_path):
    """numba's workqueue layer aborts the process when two threads enter a parallel region at
    once; select_batch must take turns there (run in a child: an abort would kill pytest)."""
    import os
    import subprocess
    import sys

    code = (
        "import threading, numpy as np\n"
        "from mempursuit_core import select, select_batch\n"
        "rng = np.random.default_rng(0)\n"
        "Q = rng.standard_normal((16, 24)); pools = [rng.standard_normal((40, 24)) for _ in Q]\n"
        "want = [select(q, p, 8).order.tolist() for q, p in zip(Q, pools)]\n"
        "errors = []\n"
        "def work():\n"
        "    try:\n"
        "        for _ in range(20):\n"
        "            got = [r.order.tolist() for r in select_batch(Q, pools, 8, threads=2)]\n"
        "            assert got == want\n"
        "    except Exception as exc:\n"
        "        errors.append(repr(exc))\n"
        "ts = [threading.Thread(target=work) for _ in range(4)]\n"
        "[t.start() for t in ts]; [t.join() for t in ts]\n"
        "import numba; print(numba.threading_layer(), len(errors))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_THREADING")}
    if layer != "default":
        env["NUMBA_THREADING_LAYER"] = layer
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    got_layer, n_errors = res.stdout.split()
    assert n_errors == "0"
    if layer != "default":
        assert got_layer == layer


@pytest.mark.parametrize("scale", [1e-300, 1e-200, 1e-158, 1e158, 1e200, 1e300])
def test_tiny_and_huge_rows_are_directions_like_any_other(scale, rng):
    """Finite, non-zero rows are normalised with a scaled norm: no ZeroDivisionError from the
    kernel and no "zero norm" error for rows whose squared norm under- or overflows."""
    from mempursuit_core import get_selector, list_selectors

    q, M = clustered(rng, P=40, d=16)
    want = select(q, M, 8).order.tolist()
    assert select(q, M * scale, 8).order.tolist() == want
    assert select(q * scale, M, 8).order.tolist() == want
    assert select_batch([q], [M * scale], 8)[0].order.tolist() == want
    mixed = M.copy()
    mixed[::3] *= scale  # rows of every size in one pool
    assert select(q, mixed, 8).order.tolist() == want
    for name in current_names(list_selectors()):
        if name == "experimental/pursuit-joint" or name.startswith("haystack-"):
            continue  # lexical signals; the pool's texts, ranked by Haystack's own model
        sel = get_selector(name)
        assert sel.select(q, M * scale, 8).order.tolist() == sel.select(q, M, 8).order.tolist(), name


def test_subnormal_only_rows_are_still_refused():
    M = np.eye(3)
    M[1] = 5e-324  # the smallest subnormal: 1 / |row| is not a float64
    with pytest.raises(ValueError, match="candidate row 1"):
        select(np.ones(3), M, 2)


def test_every_selector_returns_empty_for_an_empty_list_pool():
    from mempursuit_core import get_selector, list_selectors

    for name in current_names(list_selectors()):
        sel = get_selector(name)
        assert sel.select(np.ones(4), [], 3).order.tolist() == [], name
