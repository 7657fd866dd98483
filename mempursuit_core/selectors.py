"""The selector interface and the paper's selectors.

A selector reorders a candidate pool that a framework retrieved (rows of ``candidates`` in the
framework's native order) and returns the first ``k`` positions to keep. Here: ``native`` (the
"w/o" baseline), ``mempursuit`` (the paper's rule; ``adaptive=true`` stops early) and ``mmr``;
the default read policy is in :mod:`mempursuit_core.policies`, the experiments that lost in
:mod:`mempursuit_eval.experimental`. Selectors are looked up by name through the plugin host
(:func:`mempursuit_core.get_selector`).

A plugin's selector subclasses :class:`PoolSelector`: it validates the five arguments once
(:func:`mempursuit_core.validation.check_pool`, the path every built-in takes) and calls
:meth:`PoolSelector._select` on checked arrays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .follow import Fetched, FollowRequest
from .pursuit import PursuitOptions, select, select_batch
from .validation import check_native_scores, check_pool, check_signals, unit_rows

__all__ = ["MMRSelector", "NativeSelector", "PoolSelector", "PursuitSelector", "Selection",
           "Selector"]


@dataclass(frozen=True)
class Selection:
    """A selector's answer for one pool.

    Attributes
    ----------
    order : ndarray of int, shape (n,)
        Positions in the pool (0-based, native order), most important first; ``n <= k``.
    weights : ndarray of float, shape (n,), or None
        Per-position weights where the policy has them (pursuit's simplex weights).
    stopped : str or None
        Why fewer than ``min(k, P)`` positions were returned (adaptive stopping), else None.
    info : dict
        Policy-specific diagnostics (losses, gaps, ...).
    extra : Fetched or None
        Candidates a second read added (:func:`mempursuit_core.follow.follow_pool`): positions
        ``P`` to ``P + len(extra) - 1`` of ``order`` are ``extra``'s rows, in its order.
    follow : FollowRequest or None
        What the policy would read next (the titles its first picks name), for the read
        path's second-read stage; the policy itself never reads a store.
    """

    order: np.ndarray
    weights: np.ndarray | None = None
    stopped: str | None = None
    info: dict = field(default_factory=dict)
    extra: Fetched | None = None
    follow: FollowRequest | None = None


class Selector:
    """Base class: override :meth:`select`; :meth:`select_batch` loops unless overridden.

    Parameters of :meth:`select`
    ----------------------------
    query : array_like, shape (d,)
    candidates : array_like, shape (P, d)
        The pool's stored embeddings in the framework's native order.
    k : int
        Budget; ``k > P`` returns every position.
    native_scores : array_like, shape (P,), optional
        The framework's own scores for the pool (higher is better), if it has them.
    signals : mapping, optional
        Extra per-pool signals a policy may use (e.g. ``"sparse"``: an ``(P, m)`` array of
        lexical features and ``"query_sparse"``: ``(m,)``). Unknown keys are ignored.
    """

    name = "selector"
    description = ""
    #: True when the ``k``-selection is always the first ``k`` of any larger one (the harness
    #: then runs the largest budget once and reads the smaller ones as prefixes).
    nested = False

    def select(
        self,
        query: Any,
        candidates: Any,
        k: int,
        *,
        native_scores: Any = None,
        signals: Mapping[str, Any] | None = None,
    ) -> Selection:
        raise NotImplementedError

    def select_batch(
        self,
        queries: Sequence[Any],
        pools: Sequence[Any],
        k: int,
        *,
        native_scores: Sequence[Any] | None = None,
        signals: Sequence[Mapping[str, Any] | None] | None = None,
    ) -> list[Selection]:
        n, ns, sg = _batch_lengths(queries, pools, native_scores, signals)
        return [
            self.select(q, c, k, native_scores=s, signals=g)
            for q, c, s, g in zip(queries, pools, ns, sg)
        ]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def _batch_lengths(queries, pools, native_scores, signals) -> tuple[int, list, list]:
    """``select_batch``'s arguments checked for one entry per query: (B, scores, signals)."""
    n = len(queries)
    if len(pools) != n:
        raise ValueError(f"got {n} queries but {len(pools)} pools")
    if isinstance(signals, Mapping):
        raise TypeError("select_batch takes signals as one mapping per pool (a list), got one "
                        "mapping; pass [signals] * len(queries) to share it")
    out = []
    for name, given in (("native_scores", native_scores), ("signals", signals)):
        if given is None:
            out.append([None] * n)
            continue
        try:
            given = list(given)
        except TypeError:
            raise TypeError(f"select_batch takes {name} as one entry per pool (a list), got "
                            f"{type(given).__name__}") from None
        if len(given) != n:
            raise ValueError(f"got {n} queries but {len(given)} {name}")
        out.append(given)
    return n, out[0], out[1]


class PoolSelector(Selector):
    """Base class of a selector that ranks the pool: :meth:`select` validates its five
    arguments once (:func:`mempursuit_core.validation.check_pool`) and calls :meth:`_select`
    on the checked arrays of a non-empty pool; an empty pool gives an empty order.

    Subclass it and implement ``_select(query, candidates, k, native_scores, signals)``:

    query : ndarray of float64, shape (d,)
        Unit length (with ``reads_embeddings = False``: as given, shape and dtype checked).
    candidates : ndarray of float32 or float64, shape (P, d), C-contiguous, P >= 1
        Rows as stored, not normalised (:func:`mempursuit_core.validation.unit_rows`).
    k : int, >= 1
    native_scores : ndarray of float64, shape (P,), or None
    signals : mapping or None
        Read per-candidate signals with :func:`mempursuit_core.validation.signal_values`.
    """

    #: False for a selector that never reads the embeddings (the query is then not normalised).
    reads_embeddings = True

    def select(self, query, candidates, k, *, native_scores=None, signals=None) -> Selection:
        q, M, k, scores, signals = check_pool(query, candidates, k, native_scores, signals,
                                              unit=self.reads_embeddings)
        if M.shape[0] == 0:
            return Selection(order=np.empty(0, dtype=np.intp))
        return self._select(q, M, k, scores, signals)

    def _select(self, query: np.ndarray, candidates: np.ndarray, k: int,
                native_scores: np.ndarray | None, signals: Mapping | None) -> Selection:
        raise NotImplementedError


class NativeSelector(PoolSelector):
    """Keep the framework's order: the first ``k`` of the pool (the paper's "w/o" baseline).

    The embeddings are not read, so a NaN or zero row is no error here; their shape is.
    """

    name = "native"
    description = "keep the framework's native order (the w/o baseline)"
    nested = True
    reads_embeddings = False

    def _select(self, query, candidates, k, native_scores, signals) -> Selection:
        return Selection(order=np.arange(min(k, candidates.shape[0]), dtype=np.intp))


class PursuitSelector(Selector):
    """Fully corrective residual pursuit (MemPursuit), fixed budget or adaptive stopping.

    Validates through :func:`mempursuit_core.select` / :func:`mempursuit_core.select_batch`,
    which use :func:`mempursuit_core.validation.check_pool`'s checks (and run the compiled
    kernel, in parallel over queries for a batch).
    """

    nested = True

    def __init__(self, *, adaptive: bool = False, ridge: float = 1e-10, tau: float = 1e-5,
                 patience: int = 2, threads: int | None = None):
        self.adaptive = adaptive
        self.options = PursuitOptions(ridge=ridge, adaptive=adaptive, tau=tau, patience=patience)
        self.threads = threads
        self.name = "mempursuit"
        self.description = (
            "MemPursuit with adaptive stopping (tau, patience)" if adaptive
            else "MemPursuit: simplex-constrained residual pursuit"
        )

    @staticmethod
    def _wrap(res) -> Selection:
        return Selection(
            order=res.order,
            weights=res.weights,
            stopped=res.stop_reason,
            info={"losses": res.losses, "gaps": res.gaps},
        )

    def select(self, query, candidates, k, *, native_scores=None, signals=None) -> Selection:
        # select() checks the query, the candidates and k with check_pool's own functions
        check_signals(signals)
        res = select(query, candidates, k, **self._kwargs())
        check_native_scores(native_scores, res.pool_size)
        return self._wrap(res)

    def select_batch(self, queries, pools, k, *, native_scores=None, signals=None):
        shared = isinstance(pools, np.ndarray) and pools.ndim == 2  # one pool for every query
        if not isinstance(queries, np.ndarray):
            queries = list(queries)
        pools = pools if shared else list(pools)
        _, scores, sigs = _batch_lengths(queries, [pools] * len(queries) if shared else pools,
                                         native_scores, signals)
        for g in sigs:
            check_signals(g)
        results = select_batch(queries, pools, k, threads=self.threads, **self._kwargs())
        for r, s in zip(results, scores):
            check_native_scores(s, r.pool_size)
        return [self._wrap(r) for r in results]

    def _kwargs(self) -> dict:
        o = self.options
        return dict(ridge=o.ridge, adaptive=o.adaptive, tau=o.tau, patience=o.patience)


class MMRSelector(PoolSelector):
    """Maximal marginal relevance (Carbonell & Goldstein, 1998) on cosine similarities.

    ``score_i = lam * cos(q, m_i) - (1 - lam) * max_{j in S} cos(m_i, m_j)``; ties go to the
    lowest native position. ``lam = 0.5`` is the paper's comparison.
    """

    name = "mmr"
    description = "maximal marginal relevance, lambda 0.5"
    nested = True

    def __init__(self, *, lam: float = 0.5):
        if not 0.0 <= lam <= 1.0:
            raise ValueError(f"lam must be in [0, 1], got {lam}")
        self.lam = float(lam)

    def _select(self, q, M, k, native_scores, signals) -> Selection:
        P = M.shape[0]
        M = unit_rows(M)
        n = min(k, P)
        rel = M @ q
        redundancy = np.full(P, -np.inf)
        taken = np.zeros(P, dtype=bool)
        order = np.empty(n, dtype=np.intp)
        for t in range(n):
            red = np.where(np.isfinite(redundancy), redundancy, 0.0) if t else 0.0
            score = self.lam * rel - (1.0 - self.lam) * red
            score[taken] = -np.inf
            j = int(np.argmax(score))  # argmax returns the first maximum: lowest position
            order[t] = j
            taken[j] = True
            redundancy = np.maximum(redundancy, M @ M[j])
        return Selection(order=order)
