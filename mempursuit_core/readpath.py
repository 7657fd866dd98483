"""What every adapter's read path hands a read policy, and the fallback every adapter shares.

An adapter turns the framework's native candidate pool for one query into a
:class:`CandidatePool` (the framework's own items in native order, their **stored** vectors,
the query vector, the native scores and the signals the framework really keeps), asks the
policy for ``K`` of them with :meth:`CandidatePool.select`, and wraps the whole read in
:func:`read_or_native`, so that any failure returns the framework's own result with one
warning (or raises under ``strict=True``).

The evaluation harness calls the same pool-building function an adapter's users call, so a
framework row measures what ships. Signals are what the framework's store really keeps (keys
read by the built-in policies: ``texts``, ``query_text``, ``timestamps``, ``session_ids``,
``speakers``, ``positions``, ``lexical``, ``sparse`` / ``query_sparse``); a missing one is left
out, never made up (``docs/adapters/README.md`` lists them per framework). Third-party adapters use these two pieces the same way::

    def search(query, k):
        def ours():
            pool = CandidatePool(items, query_vector, vectors, native_scores=scores,
                                 signals=pool_signals(texts, query))
            return pool.select(selector, k).items
        return read_or_native(ours, lambda: framework.search(query, limit=k),
                              strict=options.strict, framework="MyFramework")
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Mapping, Sequence, TypeVar

import numpy as np

from .signals import PoolSignals
from .validation import checked_order

__all__ = ["CandidatePool", "PoolSelection", "read_or_native"]

T = TypeVar("T")
R = TypeVar("R")

logger = logging.getLogger("mempursuit")


@dataclass
class CandidatePool(Generic[T]):
    """A framework's candidate pool for one query, in the framework's native order.

    Attributes
    ----------
    items : sequence, length P
        The framework's own objects (hits, records, nodes), native order first.
    query_vector : ndarray, shape (d,)
        The query embedding the framework computed (or would compute).
    vectors : ndarray, shape (P, d)
        The items' stored vectors, row ``i`` for ``items[i]`` (never re-embedded where the
        store keeps them).
    native_scores : ndarray, shape (P,), optional
        The framework's own scores, higher is better.
    signals : mapping, optional
        What the framework really stores about each item (see :mod:`mempursuit_core.signals`):
        ``texts``, ``timestamps``, ``session_ids``, ``speakers``, ``positions``, ...

    Raises
    ------
    ValueError
        When the shapes disagree (vectors not ``(P, d)``, scores not ``(P,)``).
    """

    items: Sequence[T]
    query_vector: np.ndarray
    vectors: np.ndarray
    native_scores: np.ndarray | None = None
    signals: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.items = list(self.items)
        self.query_vector = np.asarray(self.query_vector)
        if self.query_vector.ndim != 1:
            raise ValueError(f"the query vector must be 1-d, got shape {self.query_vector.shape}")
        d = self.query_vector.shape[0]
        vectors = np.asarray(self.vectors)
        if vectors.size == 0 and not self.items:
            vectors = vectors.reshape(0, d)
        if vectors.shape != (len(self.items), d):
            raise ValueError(f"a pool of {len(self.items)} items with {d}-d queries needs "
                             f"vectors of shape ({len(self.items)}, {d}), got {vectors.shape}")
        self.vectors = vectors
        if self.native_scores is not None:
            self.native_scores = np.asarray(self.native_scores, dtype=np.float64).reshape(-1)
            if self.native_scores.shape != (len(self.items),):
                raise ValueError(f"native scores must have shape ({len(self.items)},), got "
                                 f"{self.native_scores.shape}")

    def __len__(self) -> int:
        return len(self.items)

    def with_signals(self, values: Mapping[str, Any] | None = None, *,
                     producers: Mapping[str, Callable[[], Any]] | None = None
                     ) -> "CandidatePool[T]":
        """The same pool with ``values`` (and lazy ``producers``: key -> zero-argument callable)
        put over its signals, added or replacing a key.

        For callers that know more than the framework stores (the evaluation harness's
        ``--dataset-signals``); an adapter hands over only what its framework keeps.
        """
        base = self.signals
        if not isinstance(base, PoolSignals):
            base = PoolSignals(values=dict(base))
        signals = base.overlay(values, producers=producers)
        return dataclasses.replace(self, signals=signals)

    def select(self, selector: Any, k: int) -> "PoolSelection[T]":
        """The policy's ``k`` items from this pool, checked (:func:`checked_order`).

        Parameters
        ----------
        selector : Selector
            A built read policy (``ReadOptions.selector()``).
        k : int
            The budget ``K``.

        Returns
        -------
        PoolSelection
        """
        if not self.items:
            return PoolSelection([], np.empty(0, dtype=np.intp), None, self)
        selection = selector.select(self.query_vector, self.vectors, k,
                                    native_scores=self.native_scores, signals=self.signals)
        order = checked_order(selection, k, len(self.items), selector)
        return PoolSelection([self.items[i] for i in order], order, selection, self)


@dataclass
class PoolSelection(Generic[T]):
    """What a policy chose from a :class:`CandidatePool`.

    Attributes
    ----------
    items : list, length n <= K
        The chosen items, most useful first.
    order : ndarray of intp, shape (n,)
        Their positions in the pool (native ranks, 0-based).
    selection : Selection or None
        The policy's full answer (weights, info); None for an empty pool.
    pool : CandidatePool
        The pool it chose from.
    """

    items: list[T]
    order: np.ndarray
    selection: Any
    pool: CandidatePool[T]


def read_or_native(ours: Callable[[], R], native: Callable[[], R], *, strict: bool,
                   framework: str, log: logging.Logger | None = None,
                   on_fallback: Callable[[str], None] | None = None,
                   strict_error: Callable[[str], Exception] | None = None) -> R:
    """``ours()``; on any exception, the framework's own result ``native()`` and one warning.

    Parameters
    ----------
    ours : callable
        The adapter's read (pool, policy, result in the framework's format).
    native : callable
        The framework's own read for the caller's arguments.
    strict : bool
        Raise instead of falling back.
    framework : str
        Named in the warning.
    log : Logger, optional
        Where the warning goes (default the ``mempursuit`` logger).
    on_fallback : callable, optional
        Called with the reason (``"TypeError: ..."``) before ``native()`` runs.
    strict_error : callable, optional
        Under ``strict``, raise ``strict_error(reason)`` (chained) instead of the exception
        itself: an adapter's own error type.

    Raises
    ------
    Exception
        Whatever ``ours`` raised (or ``strict_error(reason)``), when ``strict``; whatever
        ``native`` raises, always.
    """
    try:
        return ours()
    except Exception as exc:  # the adapter must never cost the user the native result
        reason = f"{type(exc).__name__}: {exc}"
        if strict:
            if strict_error is None:
                raise
            raise strict_error(f"{reason} (strict=True; strict=False returns {framework}'s own "
                               "result with a warning)") from exc
        (log or logger).warning("mempursuit could not reorder this %s read (%s); returning %s's "
                                "own result (strict=True raises instead)", framework, reason,
                                framework)
        if on_fallback is not None:
            on_fallback(reason)
        return native()
