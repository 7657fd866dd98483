"""Argument checks shared by the core, the adapters, the harness and plugins (one wording
everywhere).

Every selector, built-in or plugin, takes ``(query, candidates, k, native_scores, signals)``;
:func:`check_pool` checks all five once (:class:`mempursuit_core.PoolSelector` calls it), and
the pieces are public for a selector that validates by hand: :func:`check_query`,
:func:`check_candidates`, :func:`check_k`, :func:`check_native_scores`, :func:`check_signals`,
:func:`signal_values` and :func:`unit_rows`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

__all__ = ["CheckedPool", "bad_row_error", "check_candidates", "check_int", "check_k",
           "check_native_scores", "check_pool", "check_query", "check_signals",
           "checked_row_norms", "row_norms", "signal_values", "unit_rows"]


def check_int(name: str, value: Any, *, minimum: int = 1, allow_none: bool = False) -> int | None:
    """``value`` as an ``int >= minimum`` (``None`` passes when ``allow_none``).

    Raises
    ------
    TypeError
        When ``value`` is not an integer (``bool`` is refused).
    ValueError
        When it is below ``minimum``.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}: {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_k(k: Any, name: str = "k") -> int:
    """A budget: an ``int >= 1``."""
    return check_int(name, k)


def check_candidates(candidates: Any, name: str = "candidates") -> np.ndarray:
    """The pool as a C-contiguous float32 / float64 array of shape (P, d), a view when it
    already is one; other real dtypes (integers, bool, float16) become float64.

    Raises
    ------
    ValueError
        When it is not 2-D (an empty 1-D array is the empty pool, shape (0, 0)) or does not
        hold real numbers (complex, object, strings).
    """
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


def check_query(query: Any, d: int | None = None, name: str = "query", *,
                unit: bool = True) -> np.ndarray:
    """The query as a float64 copy of shape (d,), scaled to unit length.

    Parameters
    ----------
    query : array_like, shape (d,) (or (1, d) / (d, 1))
    d : int, optional
        The candidates' dimension (a mismatch is an error).
    unit : bool
        Scale to unit length, refusing a zero, NaN or infinite query; False checks the shape,
        the dtype and ``d`` only (for a selector that never reads the embeddings).

    Raises
    ------
    ValueError
        On a bad shape or dtype, a dimension mismatch, or (``unit``) a zero / non-finite query.
    """
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
    if not unit:
        return q
    if not np.all(np.isfinite(q)):
        raise ValueError(f"{name} contains NaN or infinite values")
    with np.errstate(over="ignore", under="ignore"):
        norm = math.sqrt(float(np.dot(q, q)))
    if not 1e-140 < norm < 1e140:  # |q|^2 may have under- or overflowed
        norm = float(row_norms(q[None, :])[0]) if q.size else 0.0
    if not norm > 0.0 or not math.isfinite(1.0 / norm):
        raise ValueError(f"{name} has zero norm; it cannot be normalised")
    return q / norm


def row_norms(X: np.ndarray, norms: np.ndarray | None = None) -> np.ndarray:
    """Euclidean norms of the rows of a (P, d) array, float64, without under- or overflow.

    Rows whose squared norm leaves the float64 range (entries near 1e-160 or 1e160) are
    measured as ``max|x| * |x / max|x||``; a row with NaN or infinite entries gets NaN or inf.
    ``norms``, when given, are the plain norms already computed (only the odd rows are redone).
    """
    X = np.asarray(X, dtype=np.float64)
    if norms is None:
        with np.errstate(over="ignore", under="ignore"):
            norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    norms = np.array(norms, dtype=np.float64)
    odd = ~((norms > 1e-140) & (norms < 1e140))
    if odd.any():
        sub = X[odd]
        with np.errstate(all="ignore"):
            m = np.max(np.abs(sub), axis=1) if sub.shape[1] else np.zeros(len(sub))
            scaled = sub / m[:, None]
            norms[odd] = np.where(m > 0, m * np.sqrt(np.einsum("ij,ij->i", scaled, scaled)), 0.0)
    return norms


def unit_rows(M: np.ndarray) -> np.ndarray:
    """Rows of a (P, d) matrix scaled to unit length, float64; names the first bad row."""
    M = M.astype(np.float64, copy=False)
    with np.errstate(over="ignore", under="ignore"):
        norms = checked_row_norms(M, np.linalg.norm(M, axis=1))
    return M / norms[:, None]


def checked_row_norms(X: np.ndarray, norms: np.ndarray | None = None) -> np.ndarray:
    """:func:`row_norms`, or a ValueError naming the first row that cannot be normalised."""
    norms = row_norms(X, norms)
    with np.errstate(divide="ignore", over="ignore"):
        bad = np.flatnonzero(~(np.isfinite(norms) & (norms > 0) & np.isfinite(1.0 / norms)))
    if bad.size:
        raise bad_row_error(int(bad[0]))
    return norms


def bad_row_error(row: int, where: str = "") -> ValueError:
    """The error for a candidate row that cannot be normalised (``where``: e.g. " of pools[2]")."""
    return ValueError(
        f"candidate row {row}{where} has zero norm or NaN/infinite values (or a norm beyond the "
        "float64 range); MemPursuit normalises every candidate, so remove, repair or rescale "
        "that memory's embedding"
    )



def check_native_scores(native_scores: Any, P: int) -> np.ndarray | None:
    """The framework's own scores as float64 of shape (P,), or None when not given.

    Raises
    ------
    ValueError
        When they are not P numbers.
    """
    if native_scores is None:
        return None
    try:
        arr = np.asarray(native_scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"native_scores must be P={P} numbers (the framework's score of each "
                         f"candidate), got {type(native_scores).__name__}") from None
    if arr.size != P:  # any shape of P numbers: (P,), (1, P) as a search returns them
        raise ValueError(f"native_scores must be P={P} numbers (the framework's score of each "
                         f"candidate), got shape {arr.shape}")
    return arr.reshape(P)


def check_signals(signals: Any) -> Mapping | None:
    """``signals`` when it is None or a mapping (a ``dict`` or ``PoolSignals``) of name -> value.

    Raises
    ------
    TypeError
        For anything else (a list of signals belongs to ``select_batch``, one per pool).
    """
    if signals is None or isinstance(signals, Mapping):
        return signals
    raise TypeError(f"signals must be a mapping of name -> value (a dict or PoolSignals) or "
                    f"None, got {type(signals).__name__}"
                    + ("; select_batch takes one mapping per pool" if isinstance(signals, (list, tuple))
                       else ""))


def signal_values(signals: Mapping | None, key: str, P: int) -> list | None:
    """The per-candidate signal ``key`` as a list of length P; None when it is absent.

    A lazy mapping is read only here (``key in signals`` first, no ``len()``).

    Raises
    ------
    ValueError
        When the signal is not P values (None, a number, a string, the wrong length).
    """
    if signals is None or key not in signals:
        return None
    value = signals[key]
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
        raise ValueError(f"signals[{key!r}] must hold one value per candidate (P={P}), got "
                         f"{type(value).__name__}")
    values = list(value)
    if len(values) != P:
        raise ValueError(f"{key!r} has {len(values)} entries but the pool has P={P} "
                         f"(signals[{key!r}] needs one value per candidate)")
    return values


class CheckedPool(NamedTuple):
    """What :func:`check_pool` returns: every argument of ``select``, checked."""

    query: np.ndarray  # (d,) float64 (unit length unless unit=False)
    candidates: np.ndarray  # (P, d) float32 / float64, C-contiguous
    k: int
    native_scores: np.ndarray | None  # (P,) float64
    signals: Mapping | None


def check_pool(query: Any, candidates: Any, k: Any, native_scores: Any = None,
               signals: Any = None, *, unit: bool = True) -> CheckedPool:
    """Check a selector's arguments once: the one validation path of every selector.

    Parameters
    ----------
    query : array_like, shape (d,)
    candidates : array_like, shape (P, d)
    k : int, >= 1
    native_scores : array_like, shape (P,), optional
    signals : mapping, optional
    unit : bool
        See :func:`check_query` (False for a selector that never reads the embeddings).

    Returns
    -------
    CheckedPool
        For the empty pool of shape (0, 0) the query's shape and dtype only are checked.

    Raises
    ------
    ValueError, TypeError
        One line naming the argument and what it should be.
    """
    k = check_k(k)
    M = check_candidates(candidates)
    P, d = M.shape
    # an empty pool of width d > 0 checks the query as select() does; a (0, 0) pool cannot
    q = check_query(query, d if P or d else None, unit=unit and (P > 0 or d > 0))
    return CheckedPool(q, M, k, check_native_scores(native_scores, P), check_signals(signals))
