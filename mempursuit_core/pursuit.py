"""MemPursuit: fully corrective residual pursuit over a candidate pool (the public API).

Reference: Feng & Fan, "MemPursuit" (arXiv 2610.15642), Eqs. 2-6, Appendix A.1 and Theorem B.2.
"""

from __future__ import annotations

import math
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from numba.typed import List as TypedList

from . import _kernel
from .validation import check_int, check_k
from .validation import bad_row_error as _bad_row_error
from .validation import check_candidates as _as_matrix
from .validation import check_query as _as_vector
from .validation import checked_row_norms, row_norms  # noqa: F401 (re-exported)
from .validation import unit_rows as _unit_rows

__all__ = ["PursuitOptions", "PursuitResult", "rank_prior", "select", "select_batch"]

_STOP_NAMES = {_kernel.STOP_BUDGET: None, _kernel.STOP_ADAPTIVE: "adaptive"}


@dataclass(frozen=True)
class PursuitOptions:
    """The options one :func:`select` / :func:`select_batch` call ran with (checked, immutable).

    ``has_prior`` says whether a ``prior`` (``priors``) was given; the scores themselves stay
    with the caller.
    """

    ridge: float = 1e-10
    adaptive: bool = False
    tau: float = 1e-5
    patience: int = 2
    gamma: float = 1.0
    keep: int = 0
    has_prior: bool = False

    def __post_init__(self) -> None:
        for name in ("ridge", "tau", "gamma"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
                raise TypeError(f"{name} must be a number, got {type(value).__name__}: {value!r}")
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f"{name} must be finite and >= 0, got {value}")
            object.__setattr__(self, name, float(value))
        object.__setattr__(self, "patience", check_int("patience", self.patience))
        object.__setattr__(self, "keep", check_int("keep", self.keep, minimum=0))
        object.__setattr__(self, "adaptive", bool(self.adaptive))
        object.__setattr__(self, "has_prior", bool(self.has_prior))


@dataclass(frozen=True, repr=False)
class PursuitResult:
    """The selection path for one query.

    Attributes
    ----------
    order : ndarray of intp, shape (n,)
        Positions of the selected candidates in entry order; every prefix is the answer for a
        smaller budget. ``n = min(k, P)`` unless adaptive stopping ended the path earlier.
    weights : ndarray of float64, shape (n,)
        Final simplex weights, aligned with ``order`` (>= 0, summing to 1; a selected memory
        may end with weight 0 and still stays in the path).
    losses : ndarray of float64, shape (n,)
        Squared residual ``|q - M_S^T alpha|^2`` after each step (ridge term excluded).
    gaps : ndarray of float64, shape (n,)
        Frank-Wolfe certificate after each step: an upper bound on the distance to the optimum
        over the whole candidate simplex; 0 iff that optimum is reached.
    stop_reason : str or None
        ``"adaptive"`` when adaptive stopping ended the path before the budget, else None.
    pool_size : int
        ``P``, the number of candidates.
    options : PursuitOptions
        The options the call ran with.
    """

    order: np.ndarray
    weights: np.ndarray
    losses: np.ndarray
    gaps: np.ndarray
    stop_reason: str | None = None
    pool_size: int = 0
    options: PursuitOptions = field(default_factory=PursuitOptions)

    @property
    def stopped_early(self) -> bool:
        return self.stop_reason is not None

    def __len__(self) -> int:
        return len(self.order)

    def __repr__(self) -> str:
        shown = ", ".join(map(str, self.order[:10].tolist()))
        more = ", ..." if len(self.order) > 10 else ""
        last = f", loss={self.losses[-1]:.4g}, gap={self.gaps[-1]:.3g}" if len(self.order) else ""
        stop = f", stopped={self.stop_reason!r}" if self.stop_reason else ""
        return f"PursuitResult(order=[{shown}{more}] of P={self.pool_size}{last}{stop})"


_NO_PRIOR = np.empty(0)


def _checked_prior(prior: Any, P: int, name: str = "prior") -> np.ndarray:
    if prior is None:
        return _NO_PRIOR
    arr = np.ascontiguousarray(prior, dtype=np.float64).reshape(-1)
    if arr.shape[0] != P:
        raise ValueError(f"{name} has {arr.shape[0]} scores but the pool has P={P} candidates")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def _empty(P: int, options: PursuitOptions) -> PursuitResult:
    z = np.empty(0)
    return PursuitResult(np.empty(0, dtype=np.intp), z, z.copy(), z.copy(), None, P, options)


def select(
    query: Any,
    candidates: Any,
    k: int,
    *,
    ridge: float = 1e-10,
    adaptive: bool = False,
    tau: float = 1e-5,
    patience: int = 2,
    prior: Any = None,
    gamma: float = 1.0,
    keep: int = 0,
) -> PursuitResult:
    """Select up to ``k`` candidates by fully corrective residual pursuit.

    Each step adds the candidate most correlated with what the selected memories still miss
    (the residual of the best convex reconstruction of the query), then refits all weights
    exactly on the simplex (warm-started active set).

    Parameters
    ----------
    query : array_like, shape (d,)
        Query embedding. Normalised to unit length (a zero or non-finite query is an error).
    candidates : array_like, shape (P, d)
        Candidate embeddings in the framework's native order; float32 or float64 are used as
        they are (read-only and non-contiguous arrays are accepted), other real dtypes are
        converted. Rows are normalised to unit length internally (no copy is made).
    k : int
        Budget, ``k >= 1``; ``k > P`` selects every candidate.
    ridge : float, default 1e-10
        Ridge ``lambda`` of the refit (the paper's value).
    adaptive : bool, default False
        Stop early after ``patience`` consecutive steps whose relative loss improvement is at
        most ``tau`` (the returned path keeps those steps' memories).
    tau : float, default 1e-5
    patience : int, default 2
    prior : array_like, shape (P,), optional
        Extension (not in the paper): a relevance score per candidate on the cosine scale (for
        example the framework's native ranking, see :mod:`mempursuit_core.policies`). The pick
        then maximises ``prior_i - gamma * (G_S alpha)_i`` instead of the residual correlation
        ``u_i = b_i - (G_S alpha)_i``; the refit is unchanged.
    gamma : float, default 1.0
        Weight of the redundancy term when ``prior`` is given.
    keep : int, default 0
        Extension: the first ``keep`` picks are the native positions ``0 .. keep - 1``.

    Returns
    -------
    PursuitResult
        ``order`` (entry order, ties to the lowest native index), ``weights``, ``losses``,
        ``gaps`` and ``stop_reason``. An empty pool (``P = 0``) gives an empty result.

    Raises
    ------
    ValueError
        On shape or dimension mismatch, NaN/infinite/zero query, a candidate row with zero
        norm or NaN/infinite values (its index is named), or a bad option.
    """
    k = check_k(k)
    opts = PursuitOptions(ridge, adaptive, tau, patience, gamma, keep, prior is not None)
    M = _as_matrix(candidates)
    P, d = M.shape
    prior_arr = _checked_prior(prior, P)
    if P == 0:
        if d:
            _as_vector(query, d)
        return _empty(0, opts)
    q = _as_vector(query, d)
    n = min(k, P)
    order = np.empty(n, dtype=np.int64)
    weights = np.empty(n)
    losses = np.empty(n)
    gaps = np.empty(n)
    t, stop, bad = _kernel._pursuit_one(
        M, q, n, opts.ridge, opts.adaptive, opts.tau, opts.patience,
        prior_arr, opts.gamma, opts.keep, order, weights, losses, gaps,
    )
    if bad >= 0:
        raise _bad_row_error(int(bad))
    return PursuitResult(
        order[:t].astype(np.intp, copy=False), weights[:t], losses[:t], gaps[:t],
        _STOP_NAMES[int(stop)], P, opts,
    )


def select_batch(
    queries: Any,
    pools: Any,
    k: int,
    *,
    ridge: float = 1e-10,
    adaptive: bool = False,
    tau: float = 1e-5,
    patience: int = 2,
    threads: int | None = None,
    priors: Any = None,
    gamma: float = 1.0,
    keep: int = 0,
) -> list[PursuitResult]:
    """:func:`select` for many queries at once, in parallel over queries.

    Parameters
    ----------
    queries : array_like, shape (B, d), or sequence of B arrays of shape (d,)
    pools : sequence of B arrays of shape (P_b, d), or one array of shape (P, d)
        Each query's own pool (ragged sizes allowed), or one pool shared by every query.
    k : int
        Budget for every query (capped at each pool's size).
    threads : int, optional
        Worker threads (default: numba's default, all cores; or ``MEMPURSUIT_THREADS``).
    priors : sequence of B arrays of shape (P_b,), optional
        Per-query ``prior`` (see :func:`select`); ``gamma`` and ``keep`` as there.

    Returns
    -------
    list of PursuitResult, length B

    Raises
    ------
    ValueError
        As :func:`select`; the message names the query whose pool is bad.
    """
    k = check_k(k)
    opts = PursuitOptions(ridge, adaptive, tau, patience, gamma, keep, priors is not None)
    if isinstance(queries, np.ndarray) and queries.ndim != 2:
        raise ValueError(f"queries must have shape (B, d), got {queries.shape}")
    qlist = list(queries)
    B = len(qlist)
    if isinstance(pools, np.ndarray) and pools.ndim == 2:
        shared = _as_matrix(pools, "pools")
        mats = [shared] * B
    else:
        shared = None
        pools = list(pools)
        if len(pools) != B:
            raise ValueError(f"got {B} queries but {len(pools)} pools")
        mats = [_as_matrix(p, f"pools[{b}]") for b, p in enumerate(pools)]
    if B == 0:
        return []
    dims = {m.shape[1] for m in mats if m.shape[0] > 0}
    if len(dims) > 1:
        raise ValueError(f"pools have different dimensions: {sorted(dims)}")
    if dims:
        d = dims.pop()
    else:  # every pool is empty: their width, else the first query's, says what d is
        widths = {m.shape[1] for m in mats if m.shape[1] > 0}
        if len(widths) > 1:
            raise ValueError(f"pools have different dimensions: {sorted(widths)}")
        try:
            d = widths.pop() if widths else _as_vector(qlist[0]).shape[0]
        except ValueError as exc:
            raise ValueError(f"queries[0]: {exc}") from None
    Q = np.empty((B, d))
    for bi, q in enumerate(qlist):
        try:
            Q[bi] = _as_vector(q, d)
        except ValueError as exc:
            raise ValueError(f"queries[{bi}]: {exc}") from None
    sizes = np.array([m.shape[0] for m in mats], dtype=np.int64)
    dtype = np.float32 if all(m.dtype == np.float32 for m in mats) else np.float64
    # A typed list of the pools themselves: no concatenation, nothing copied unless a pool's
    # dtype must change or it is empty (reshaped to (0, d)).
    pool_list = TypedList()
    for m in mats:
        pool_list.append(_readonly(m.astype(dtype, copy=False) if m.shape[0]
                                   else np.empty((0, d), dtype)))
    prior_list = TypedList()
    if priors is None:
        for _ in range(B):
            prior_list.append(_readonly(_NO_PRIOR))
    else:
        if shared is not None:
            raise ValueError("priors need one pool per query, not a shared pool")
        priors = list(priors)
        if len(priors) != B:
            raise ValueError(f"got {B} queries but {len(priors)} priors")
        for bi, p in enumerate(priors):
            prior_list.append(_readonly(_checked_prior(p, int(sizes[bi]), f"priors[{bi}]")))
    n = max(1, min(k, int(sizes.max())))
    order = np.zeros((B, n), dtype=np.int64)
    weights = np.zeros((B, n))
    losses = np.zeros((B, n))
    gaps = np.zeros((B, n))
    n_sel = np.zeros(B, dtype=np.int64)
    stop = np.zeros(B, dtype=np.int64)
    bad = np.full(B, -1, dtype=np.int64)
    if threads is None and os.environ.get("MEMPURSUIT_THREADS"):
        threads = _env_threads(os.environ["MEMPURSUIT_THREADS"])
    with _parallel_section(), _numba_threads(threads):
        _kernel._pursuit_batch(
            pool_list, Q, n, opts.ridge, opts.adaptive, opts.tau, opts.patience,
            prior_list, opts.gamma, opts.keep, order, weights, losses, gaps, n_sel, stop, bad,
        )
    out = []
    for bi in range(B):
        if bad[bi] >= 0:
            raise _bad_row_error(int(bad[bi]), f" of pools[{bi}]")
        t = int(n_sel[bi])
        out.append(PursuitResult(
            order[bi, :t].astype(np.intp), weights[bi, :t].copy(), losses[bi, :t].copy(),
            gaps[bi, :t].copy(), _STOP_NAMES[int(stop[bi])], int(sizes[bi]), opts,
        ))
    return out


def rank_prior(query: Any, candidates: Any) -> np.ndarray:
    """The native rank on the cosine scale.

    Parameters
    ----------
    query : array_like, shape (d,)
    candidates : array_like, shape (P, d), in native order

    Returns
    -------
    ndarray, shape (P,)
        ``prior[r]`` = the ``r``-th largest cosine between the query and the pool.
    """
    M = _as_matrix(candidates)
    if M.shape[0] == 0:
        return np.empty(0)
    q = _as_vector(query, M.shape[1])
    cos = _unit_rows(M) @ q
    return -np.sort(-cos)


def _readonly(a: np.ndarray) -> np.ndarray:
    """A read-only view (no copy): a typed list needs one array type, read-only or not."""
    v = a.view()
    v.flags.writeable = False
    return v


_PARALLEL_LOCK = threading.Lock()


def _serial_layer() -> bool:
    """True when numba's threading layer cannot run parallel regions from several threads at
    once (``workqueue`` aborts the process), or before the layer is chosen."""
    import numba

    try:
        return numba.threading_layer() == "workqueue"
    except ValueError:  # no parallel region has run yet: the layer is chosen on the first one
        return True


@contextmanager
def _parallel_section():
    """Callers' threads take turns in the parallel kernel where the layer needs it."""
    if _serial_layer():
        with _PARALLEL_LOCK:
            yield
    else:
        yield


def _env_threads(value: str) -> int:
    """``MEMPURSUIT_THREADS`` as a thread count, or one line naming the variable."""
    try:
        threads = int(value.strip())
    except ValueError:
        threads = 0
    if threads < 1:
        raise ValueError(f"MEMPURSUIT_THREADS={value!r}: expected a whole number of threads "
                         ">= 1; unset it to use every core")
    return threads


@contextmanager
def _numba_threads(threads: int | None):
    if threads is None:
        yield
        return
    import numba

    previous = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(previous)
