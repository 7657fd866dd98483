"""The selector interface and the paper's selectors.

A selector reorders a candidate pool that a framework retrieved (rows of ``candidates`` in the
framework's native order) and returns the first ``k`` positions to keep. Here: ``native`` (the
"w/o" baseline), ``mempursuit`` (the paper's rule), ``mempursuit-adaptive`` and ``mmr``; the
policies that keep the native signal are in :mod:`mempursuit_core.policies`. Selectors are
looked up by name through the plugin host (:func:`mempursuit_core.get_selector`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .pursuit import PursuitOptions, _as_matrix, _as_vector, _unit_rows, select, select_batch
from .validation import check_k

__all__ = ["MMRSelector", "NativeSelector", "PursuitSelector", "Selection", "Selector"]


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
    """

    order: np.ndarray
    weights: np.ndarray | None = None
    stopped: str | None = None
    info: dict = field(default_factory=dict)


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
        n = len(queries)
        if len(pools) != n:
            raise ValueError(f"got {n} queries but {len(pools)} pools")
        ns = native_scores if native_scores is not None else [None] * n
        sg = signals if signals is not None else [None] * n
        return [
            self.select(q, c, k, native_scores=s, signals=g)
            for q, c, s, g in zip(queries, pools, ns, sg)
        ]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class NativeSelector(Selector):
    """Keep the framework's order: the first ``k`` of the pool (the paper's "w/o" baseline)."""

    name = "native"
    description = "keep the framework's native order (the w/o baseline)"
    nested = True

    def select(self, query, candidates, k, *, native_scores=None, signals=None) -> Selection:
        k = check_k(k)
        n = len(candidates)
        return Selection(order=np.arange(min(k, n), dtype=np.intp))


class PursuitSelector(Selector):
    """Fully corrective residual pursuit (MemPursuit), fixed budget or adaptive stopping."""

    nested = True

    def __init__(self, *, adaptive: bool = False, ridge: float = 1e-10, tau: float = 1e-5,
                 patience: int = 2, threads: int | None = None):
        self.adaptive = adaptive
        self.options = PursuitOptions(ridge=ridge, adaptive=adaptive, tau=tau, patience=patience)
        self.threads = threads
        self.name = "mempursuit-adaptive" if adaptive else "mempursuit"
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
        return self._wrap(select(query, candidates, k, **self._kwargs()))

    def select_batch(self, queries, pools, k, *, native_scores=None, signals=None):
        results = select_batch(queries, pools, k, threads=self.threads, **self._kwargs())
        return [self._wrap(r) for r in results]

    def _kwargs(self) -> dict:
        o = self.options
        return dict(ridge=o.ridge, adaptive=o.adaptive, tau=o.tau, patience=o.patience)


class MMRSelector(Selector):
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

    def select(self, query, candidates, k, *, native_scores=None, signals=None) -> Selection:
        k = check_k(k)
        M = _as_matrix(candidates)
        P = M.shape[0]
        if P == 0:  # like every other selector: an empty pool gives an empty order
            if M.shape[1]:
                _as_vector(query, M.shape[1])
            return Selection(order=np.empty(0, dtype=np.intp))
        q = _as_vector(query, M.shape[1])
        M = _unit_rows(M)
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
