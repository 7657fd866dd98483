"""MemPursuit: fully corrective residual pursuit over a candidate pool (the public API).

Reference: Feng & Fan, "MemPursuit" (arXiv 2610.15642), Eqs. 2-6, Appendix A.1 and Theorem B.2.
"""

from __future__ import annotations

import math
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from numba.typed import List as TypedList

from . import _kernel

__all__ = ["PursuitResult", "select", "select_batch"]

_STOP_NAMES = {_kernel.STOP_BUDGET: None, _kernel.STOP_ADAPTIVE: "adaptive"}


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
    """

    order: np.ndarray
    weights: np.ndarray
    losses: np.ndarray
    gaps: np.ndarray
    stop_reason: str | None = None
    pool_size: int = 0
    options: dict[str, Any] = field(default_factory=dict)

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


def _as_matrix(candidates: Any, name: str = "candidates") -> np.ndarray:
    """A C-contiguous float32/float64 (P, d) view or copy; other real dtypes become float64."""
    M = np.asarray(candidates)
    if M.ndim == 1 and M.size == 0:
        M = M.reshape(0, 0)
    if M.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of shape (P, d), got shape {M.shape}")
    if M.dtype not in (np.float32, np.float64):
        if not (np.issubdtype(M.dtype, np.floating) or np.issubdtype(M.dtype, np.integer)
                or M.dtype == np.bool_):
            raise ValueError(f"{name} must hold real numbers, got dtype {M.dtype}")
        M = M.astype(np.float64)
    return np.ascontiguousarray(M)


def _as_vector(query: Any, d: int | None = None, name: str = "query") -> np.ndarray:
    """A unit float64 copy of a (d,) query; ValueError on bad shape, non-finite or zero."""
    q = np.asarray(query)
    if q.ndim == 2 and 1 in q.shape:
        q = q.reshape(-1)
    if q.ndim != 1:
        raise ValueError(f"{name} must be a 1-D vector of shape (d,), got shape {q.shape}")
    if not (np.issubdtype(q.dtype, np.floating) or np.issubdtype(q.dtype, np.integer)):
        raise ValueError(f"{name} must hold real numbers, got dtype {q.dtype}")
    if d is not None and q.shape[0] != d:
        raise ValueError(
            f"dimension mismatch: {name} has d={q.shape[0]} but the candidates have d={d}"
        )
    q = q.astype(np.float64)
    if not np.all(np.isfinite(q)):
        raise ValueError(f"{name} contains NaN or infinite values")
    norm = math.sqrt(float(np.dot(q, q)))
    if not norm > 0.0 or not math.isfinite(norm):
        raise ValueError(f"{name} has zero (or non-finite) norm; it cannot be normalised")
    return q / norm


def _check_options(k: Any, ridge: float, tau: float, patience: int) -> int:
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an int, got {type(k).__name__}")
    if k <= 0:
        raise ValueError(f"k must be >= 1, got {k}")
    if not (math.isfinite(ridge) and ridge >= 0.0):
        raise ValueError(f"ridge must be finite and >= 0, got {ridge}")
    if not (math.isfinite(tau) and tau >= 0.0):
        raise ValueError(f"tau must be finite and >= 0, got {tau}")
    if isinstance(patience, bool) or not isinstance(patience, (int, np.integer)) or patience < 1:
        raise ValueError(f"patience must be an int >= 1, got {patience!r}")
    return int(k)


def _unit_rows(M: np.ndarray) -> np.ndarray:
    """Rows of a (P, d) matrix scaled to unit length, float64; names the first bad row."""
    M = M.astype(np.float64, copy=False)
    norms = np.linalg.norm(M, axis=1)
    bad = np.flatnonzero(~(np.isfinite(norms) & (norms > 0)))
    if bad.size:
        raise _bad_row_error(int(bad[0]))
    return M / norms[:, None]


_NO_PRIOR = np.empty(0)


def _check_extensions(prior: Any, gamma: float, keep: int, P: int, name: str = "prior"):
    if not (math.isfinite(gamma) and gamma >= 0.0):
        raise ValueError(f"gamma must be finite and >= 0, got {gamma}")
    if isinstance(keep, bool) or not isinstance(keep, (int, np.integer)) or keep < 0:
        raise ValueError(f"keep must be an int >= 0, got {keep!r}")
    if prior is None:
        return _NO_PRIOR, float(gamma), int(keep)
    arr = np.ascontiguousarray(prior, dtype=np.float64).reshape(-1)
    if arr.shape[0] != P:
        raise ValueError(f"{name} has {arr.shape[0]} scores but the pool has P={P} candidates")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr, float(gamma), int(keep)


def _bad_row_error(row: int, where: str = "") -> ValueError:
    return ValueError(
        f"candidate row {row}{where} has zero norm or NaN/infinite values; MemPursuit normalises "
        "every candidate, so remove or repair that memory's embedding"
    )


def _empty(P: int, options: dict) -> PursuitResult:
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
    k = _check_options(k, ridge, tau, patience)
    M = _as_matrix(candidates)
    P, d = M.shape
    options = dict(ridge=ridge, adaptive=bool(adaptive), tau=tau, patience=int(patience))
    prior_arr, gamma, keep = _check_extensions(prior, gamma, keep, P)
    if P == 0:
        if d:
            _as_vector(query, d)
        return _empty(0, options)
    q = _as_vector(query, d)
    n = min(k, P)
    order = np.empty(n, dtype=np.int64)
    weights = np.empty(n)
    losses = np.empty(n)
    gaps = np.empty(n)
    t, stop, bad = _kernel._pursuit_one(
        M, q, n, float(ridge), bool(adaptive), float(tau), int(patience),
        prior_arr, gamma, keep, order, weights, losses, gaps,
    )
    if bad >= 0:
        raise _bad_row_error(int(bad))
    return PursuitResult(
        order[:t].astype(np.intp, copy=False), weights[:t], losses[:t], gaps[:t],
        _STOP_NAMES[int(stop)], P, options,
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
    k = _check_options(k, ridge, tau, patience)
    options = dict(ridge=ridge, adaptive=bool(adaptive), tau=tau, patience=int(patience))
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
    d = dims.pop() if dims else int(np.shape(qlist[0])[-1])
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
        gamma, keep = _check_extensions(None, gamma, keep, 0)[1:]
        for _ in range(B):
            prior_list.append(_readonly(_NO_PRIOR))
    else:
        if shared is not None:
            raise ValueError("priors need one pool per query, not a shared pool")
        priors = list(priors)
        if len(priors) != B:
            raise ValueError(f"got {B} queries but {len(priors)} priors")
        for bi, p in enumerate(priors):
            arr, gamma_, keep_ = _check_extensions(p, gamma, keep, int(sizes[bi]), f"priors[{bi}]")
            prior_list.append(_readonly(arr))
        gamma, keep = gamma_, keep_
    n = max(1, min(k, int(sizes.max())))
    order = np.zeros((B, n), dtype=np.int64)
    weights = np.zeros((B, n))
    losses = np.zeros((B, n))
    gaps = np.zeros((B, n))
    n_sel = np.zeros(B, dtype=np.int64)
    stop = np.zeros(B, dtype=np.int64)
    bad = np.full(B, -1, dtype=np.int64)
    if threads is None and os.environ.get("MEMPURSUIT_THREADS"):
        threads = int(os.environ["MEMPURSUIT_THREADS"])
    with _numba_threads(threads):
        _kernel._pursuit_batch(
            pool_list, Q, n, float(ridge), bool(adaptive), float(tau), int(patience),
            prior_list, gamma, keep, order, weights, losses, gaps, n_sel, stop, bad,
        )
    out = []
    for bi in range(B):
        if bad[bi] >= 0:
            raise _bad_row_error(int(bad[bi]), f" of pools[{bi}]")
        t = int(n_sel[bi])
        out.append(PursuitResult(
            order[bi, :t].astype(np.intp), weights[bi, :t].copy(), losses[bi, :t].copy(),
            gaps[bi, :t].copy(), _STOP_NAMES[int(stop[bi])], int(sizes[bi]), options,
        ))
    return out


def _readonly(a: np.ndarray) -> np.ndarray:
    """A read-only view (no copy): a typed list needs one array type, read-only or not."""
    v = a.view()
    v.flags.writeable = False
    return v


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
