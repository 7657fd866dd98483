"""Read policies behind one interface, looked up by name.

A selector reorders a candidate pool that a framework retrieved (rows of ``candidates`` in the
framework's native order) and returns the first ``k`` positions to keep. Built-ins: ``native``
(the "w/o" baseline), ``mempursuit``, ``mempursuit-adaptive`` and ``mmr``. Plugins add more
through the ``register_selectors`` hook.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .hookspecs import hookimpl
from .pursuit import _as_matrix, _as_vector, _unit_rows, select, select_batch

__all__ = [
    "Selection", "Selector", "checked_order", "get_selector", "list_selectors", "resolve_selector",
]


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


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an int, got {type(k).__name__}")
    if k <= 0:
        raise ValueError(f"k must be >= 1, got {k}")
    return int(k)


class NativeSelector(Selector):
    """Keep the framework's order: the first ``k`` of the pool (the paper's "w/o" baseline)."""

    name = "native"
    description = "keep the framework's native order (the w/o baseline)"

    def select(self, query, candidates, k, *, native_scores=None, signals=None) -> Selection:
        k = _check_k(k)
        n = len(candidates)
        return Selection(order=np.arange(min(k, n), dtype=np.intp))


class PursuitSelector(Selector):
    """Fully corrective residual pursuit (MemPursuit), fixed budget or adaptive stopping."""

    def __init__(self, *, adaptive: bool = False, ridge: float = 1e-10, tau: float = 1e-5,
                 patience: int = 2, threads: int | None = None):
        self.adaptive = adaptive
        self.options = dict(ridge=ridge, adaptive=adaptive, tau=tau, patience=patience)
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
        return self._wrap(select(query, candidates, k, **self.options))

    def select_batch(self, queries, pools, k, *, native_scores=None, signals=None):
        results = select_batch(queries, pools, k, threads=self.threads, **self.options)
        return [self._wrap(r) for r in results]


class MMRSelector(Selector):
    """Maximal marginal relevance (Carbonell & Goldstein, 1998) on cosine similarities.

    ``score_i = lam * cos(q, m_i) - (1 - lam) * max_{j in S} cos(m_i, m_j)``; ties go to the
    lowest native position. ``lam = 0.5`` is the paper's comparison.
    """

    name = "mmr"
    description = "maximal marginal relevance, lambda 0.5"

    def __init__(self, *, lam: float = 0.5):
        if not 0.0 <= lam <= 1.0:
            raise ValueError(f"lam must be in [0, 1], got {lam}")
        self.lam = float(lam)

    def select(self, query, candidates, k, *, native_scores=None, signals=None) -> Selection:
        k = _check_k(k)
        M = _as_matrix(candidates)
        q = _as_vector(query, M.shape[1])
        P = M.shape[0]
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


_BUILTIN_FACTORIES = {
    "native": (NativeSelector, NativeSelector.description),
    "mempursuit": (lambda **kw: PursuitSelector(adaptive=False, **kw),
                   "MemPursuit: simplex-constrained residual pursuit (paper defaults)"),
    "mempursuit-adaptive": (lambda **kw: PursuitSelector(adaptive=True, **kw),
                            "MemPursuit with adaptive stopping (tau=1e-5, patience=2)"),
    "mmr": (MMRSelector, MMRSelector.description),
}


@hookimpl
def register_selectors(register):
    from .policies import FACTORIES

    for name, (factory, description) in {**_BUILTIN_FACTORIES, **FACTORIES}.items():
        register(name, factory, description)


def list_selectors() -> dict[str, str]:
    """Registered selector names and one-line descriptions."""
    from .plugins import list_selector_factories

    return {name: desc for name, (_, desc) in sorted(list_selector_factories().items())}


def get_selector(name: str, **options: Any) -> Selector:
    """Build a registered selector by name, e.g. ``get_selector("mempursuit", ridge=1e-8)``.

    Raises
    ------
    UnknownNameError
        (a ``KeyError``) naming the registered selectors when ``name`` is unknown.
    """
    from .plugins import UnknownNameError, list_selector_factories

    factories = list_selector_factories()
    if name not in factories:
        raise UnknownNameError("selector", name, list(factories))
    selector = factories[name][0](**options)
    if not getattr(selector, "name", None) or selector.name == "selector":
        selector.name = name
    return selector


def resolve_selector(policy: Any, **options: Any) -> Selector:
    """A selector from a registered name (with ``options``) or a ready selector object.

    Raises
    ------
    UnknownNameError
        For an unknown name.
    TypeError
        For options given with an object, or an object without ``select``.
    """
    if isinstance(policy, str):
        return get_selector(policy, **options)
    if options:
        raise TypeError("policy options are only accepted with a policy name")
    if not callable(getattr(policy, "select", None)):
        raise TypeError(f"policy must be a selector name or a Selector, got {policy!r}")
    return policy


def checked_order(selection: Any, k: int, P: int, selector: Any = None) -> np.ndarray:
    """A selector's order as intp positions, checked before an adapter trusts it.

    Raises
    ------
    TypeError
        When the order is not integer.
    ValueError
        When it repeats a position, leaves ``range(P)`` or holds more than ``k`` positions.
    """
    order = np.asarray(getattr(selection, "order", selection)).reshape(-1)
    if order.size and not np.issubdtype(order.dtype, np.integer):
        raise TypeError(f"selector {selector!r} returned a non-integer order")
    order = order.astype(np.intp, copy=False)
    if (len(set(order.tolist())) != len(order) or len(order) > k
            or (len(order) and (order.min() < 0 or order.max() >= P))):
        raise ValueError(f"selector {selector!r} returned an invalid order {order}")
    return order
