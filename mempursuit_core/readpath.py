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
out, never made up (``docs/adapters/README.md`` lists them per framework). An async read uses
:func:`aread_or_native`, whose fallback awaits the framework's own async call. Where the
vectors come from (the item, the store, the embedding model) is :mod:`mempursuit_core.vectors`.
:func:`stored_pool` takes the framework's items with the vectors read back and gives the
checked pool of those that have one, plus the unscored rest.
Adapters import all of it from :mod:`mempursuit_core.adapter`. Third-party adapters use these
two pieces the same way::

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
import inspect
import logging
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Generic, Mapping, Sequence, TypeVar

import numpy as np

from .signals import PoolSignals
from .trace import (TraceSlot, note_final, note_policy, note_pool, note_second_read,
                    note_stored_vectors, note_tokens, recording)
from .validation import checked_order

__all__ = ["CandidatePool", "PoolSelection", "StoredPool", "aread_or_native", "read_or_native",
           "stored_pool"]

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
        """The policy's ``k`` items from this pool, checked (:func:`checked_order`): the read's
        stages, choose, then the second read where the policy asks for one and the pool has a
        lookup (:func:`mempursuit_core.follow.follow_up`).

        Parameters
        ----------
        selector : Selector
            A built read policy (``ReadOptions.selector()``).
        k : int
            The budget ``K``.

        Returns
        -------
        PoolSelection
            With a token budget (a selector from ``ReadOptions(budget_tokens=B).selector()``):
            the longest prefix of the policy's ``K`` whose ``texts`` count at most ``B``
            tokens (:mod:`mempursuit_core.tokens`).
        """
        from .follow import follow_up

        note_policy(selector, k)
        note_pool(self.items)
        note_stored_vectors(len(self.items))
        if not self.items:
            note_final([])
            return PoolSelection([], np.empty(0, dtype=np.intp), None, self)
        selection = selector.select(self.query_vector, self.vectors, k,
                                    native_scores=self.native_scores, signals=self.signals)
        selection = follow_up(selection, self.query_vector, self.vectors, k,
                              native_scores=self.native_scores, signals=self.signals,
                              items=self.items)
        extra = getattr(selection, "extra", None)
        pool = self if extra is None else self.followed(extra)
        order = checked_order(selection, k, len(pool.items), selector)
        if len(order) < min(k, len(self.items)) and getattr(selection, "stopped", None) is None:
            # a read returns min(K, P) items unless the policy says why it stopped
            raise ValueError(f"selector {selector!r} returned {len(order)} of the "
                             f"{min(k, len(self.items))} items asked for without a stop reason")
        budget = getattr(selector, "budget_tokens", None)
        if budget is not None:  # the longest prefix whose texts fit (mempursuit_core.tokens)
            texts = pool.signals.get("texts") if pool.signals is not None else None
            if texts is None:
                raise ValueError("a token budget needs the pool's texts (the 'texts' signal)")
            n, used = selector.fit([texts[i] for i in order])
            order = order[:n]
            note_tokens(budget, used)
        chosen = [pool.items[i] for i in order]
        note_pool(self.items, pool.items)
        note_final(chosen)
        note_second_read((getattr(selection, "info", None) or {}).get("reorder", {}).get("follow"))
        return PoolSelection(chosen, order, selection, pool)

    def followed(self, fetched: Any) -> "CandidatePool[T]":
        """This pool followed by the candidates a second read fetched
        (:class:`mempursuit_core.follow.Fetched`), positions ``P`` onwards."""
        from .follow import extended_signals

        m = len(fetched)
        scores = self.native_scores
        if scores is not None:
            more = fetched.native_scores
            if more is None:  # below every candidate of the first read
                low = float(scores.min()) if scores.size else 0.0
                more = low - 1.0 - np.arange(m, dtype=np.float64)
            scores = np.concatenate([scores, np.asarray(more, dtype=np.float64)])
        vectors = np.concatenate([self.vectors, np.asarray(fetched.vectors,
                                                            dtype=self.vectors.dtype)])
        return CandidatePool(self.items + list(fetched.items), self.query_vector, vectors,
                             native_scores=scores,
                             signals=extended_signals(self.signals, len(self.items), fetched))


@dataclass
class StoredPool(Generic[T]):
    """A framework's whole pool for one read: what it returned, the checked candidates that
    have a stored vector, and the rest (never dropped: they follow the picks).

    Attributes
    ----------
    native : list, length P0
        What the framework's own read returned, its order.
    candidates : CandidatePool, length P <= P0
        The items with a stored vector (:func:`stored_pool`).
    unscored : list
        The items without one, native order.
    """

    native: list[T]
    candidates: CandidatePool[T]
    unscored: list[T] = field(default_factory=list)

    def choose(self, selector: Any, k: int, offset: int = 0) -> list[T]:
        """The policy's first ``offset + k`` candidates, then the unscored ones, cut to
        ``[offset : offset + k]``; with a token budget the unscored ones are left out (the
        budget is filled from the policy's order)."""
        chosen = (self.candidates.select(selector, offset + k).items if len(self.candidates)
                  else [])
        rest = [] if getattr(selector, "budget_tokens", None) is not None else self.unscored
        out = (chosen + rest)[offset:offset + k]
        note_policy(selector, k)
        note_pool(self.native, self.native + [x for x in chosen if not any(
            x is y for y in self.native)])
        note_final(out)
        return out


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


_POOL_MESSAGES: dict[str, str | None] = {
    "none": "none of the {n} candidates has a stored {what}",
    "ragged": "the pool's stored {what} rows differ in dimension",
    "shape": "stored {what} rows of shape {shape} for a {d}-d query",
    "nonfinite": "a stored {what} has NaN or infinite values",
}


def stored_pool(items: Sequence[T], stored: Sequence[Any], query_vector: Any, *,
                native_scores: Sequence[float | None] | None = None,
                signals: Callable[[list[T]], Mapping[str, Any]] | None = None,
                error: type[Exception] = ValueError, what: str = "vector",
                messages: Mapping[str, str | None] | None = None
                ) -> tuple[CandidatePool[T], list[T]]:
    """The checked :class:`CandidatePool` of the ``items`` that have a stored vector, and the
    unscored rest: the steps every adapter that reads stored vectors shares.

    Parameters
    ----------
    items : sequence, length P
        The framework's pool, native order.
    stored : sequence, length P
        ``stored[i]``: the stored vector of ``items[i]``, shape (d,), or None where there is
        none (the item goes to ``unscored``).
    query_vector : array-like, shape (d,)
        The query embedding (made float32).
    native_scores : sequence of float or None, length P, optional
        The framework's scores, higher is better; handed to the pool only when every kept
        item's score is finite (a None or NaN one: no native scores).
    signals : callable, optional
        ``signals(kept)``: the kept items' signals, called once, after the checks.
    error : exception class
        What a bad pool raises: the adapter's own error type.
    what : str
        The noun of the default wording (``"fact_embedding"``).
    messages : mapping of str to str or None, optional
        The adapter's wording, put over the defaults: :meth:`str.format` templates for
        ``"none"`` (no item has a stored vector; None: return the empty pool instead),
        ``"ragged"``, ``"shape"`` and ``"nonfinite"``, with the fields ``what``, ``n`` (P),
        ``d`` (the query's dimension), ``shape`` / ``size`` (a stored row's shape / number of
        values) and ``item`` (the first kept item whose vector has NaN or infinite values).

    Returns
    -------
    pool : CandidatePool
        The kept items in native order, ``vectors`` float32 of shape (n, d).
    unscored : list
        The items without a stored vector, native order.

    Raises
    ------
    error
        When none of P > 0 items has a stored vector (unless ``messages["none"]`` is None), or
        the stored vectors differ in dimension, do not match the query's, or are not finite.
    """
    wording = {**_POOL_MESSAGES, **(messages or {})}
    if len(wording) != len(_POOL_MESSAGES):
        raise TypeError(f"unknown message keys {sorted(set(wording) - set(_POOL_MESSAGES))}")
    if len(stored) != len(items):
        raise ValueError(f"{len(stored)} stored entries for {len(items)} items")

    def fail(key: str, **fields: Any) -> Exception:
        return error(wording[key].format(what=what, **fields))  # type: ignore[union-attr]

    q = np.asarray(query_vector, dtype=np.float32).reshape(-1)
    d = q.shape[0]
    at = [i for i, v in enumerate(stored) if v is not None]
    kept = [items[i] for i in at]
    if items and not kept and wording["none"] is not None:
        raise fail("none", n=len(items))
    unscored = [x for x, v in zip(items, stored) if v is None]
    try:
        vectors = (np.asarray([stored[i] for i in at], dtype=np.float32) if at
                   else np.zeros((0, d), dtype=np.float32))
    except ValueError:  # ragged
        raise fail("ragged") from None
    if vectors.shape != (len(kept), d):
        raise fail("shape", shape=vectors.shape[1:], size=int(np.prod(vectors.shape[1:])), d=d)
    finite = np.isfinite(vectors).all(axis=1)
    if not finite.all():
        raise fail("nonfinite", item=kept[int(np.argmin(finite))])
    scores = None
    if native_scores is not None:
        scores = np.array([np.nan if native_scores[i] is None else native_scores[i] for i in at],
                          dtype=np.float64)
        scores = scores if np.isfinite(scores).all() else None
    pool = CandidatePool(kept, q, vectors, native_scores=scores,
                         signals=signals(kept) if signals is not None else {})
    return pool, unscored


def read_or_native(ours: Callable[[], R], native: Callable[[], R], *, strict: bool,
                   framework: str, log: logging.Logger | None = None,
                   on_fallback: Callable[[str], None] | None = None,
                   strict_error: Callable[[str], Exception] | None = None,
                   trace: TraceSlot | None = None, ids: Callable[[Any], Any] | None = None,
                   result_items: Callable[[R], Sequence[Any]] | None = None) -> R:
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
    trace : TraceSlot, optional
        Where the read's :class:`~mempursuit_core.trace.ReadTrace` goes (the component's
        ``last_trace``), recorded by the core as the read goes.
    ids : callable, optional
        ``ids(item)``: an item's short id in the trace (default its position in the pool).
    result_items : callable, optional
        ``result_items(result)``: the items a result holds, in order (the trace's ``final``,
        and ``native`` for a fallback with no pool read); default the policy's choice.

    Raises
    ------
    Exception
        Whatever ``ours`` raised (or ``strict_error(reason)``), when ``strict``; whatever
        ``native`` raises, always.
    """
    with recording(trace, ids, result_items) as record:
        try:
            result = ours()
        except Exception as exc:  # the adapter must never cost the user the native result
            reason = _failed(exc, strict, framework, log, on_fallback, strict_error)
            if reason is None:
                raise
            result = native()
            record.done(result, fallback=reason)
            return result
        record.done(result)
        return result


async def aread_or_native(ours: Callable[[], Awaitable[R]],
                          native: Callable[[], "Awaitable[R] | R"], *, strict: bool,
                          framework: str, log: logging.Logger | None = None,
                          on_fallback: Callable[[str], None] | None = None,
                          strict_error: Callable[[str], Exception] | None = None,
                          trace: TraceSlot | None = None,
                          ids: Callable[[Any], Any] | None = None,
                          result_items: Callable[[R], Sequence[Any]] | None = None) -> R:
    """:func:`read_or_native` for an async read: ``await ours()``; on any exception, the
    framework's own result ``native()`` (awaited when it returns an awaitable: use the
    framework's async call, so that the fallback never blocks the event loop) and one warning.

    Parameters and errors as for :func:`read_or_native`.
    """
    with recording(trace, ids, result_items) as record:
        try:
            result = await ours()
        except Exception as exc:  # the adapter must never cost the user the native result
            reason = _failed(exc, strict, framework, log, on_fallback, strict_error)
            if reason is None:
                raise
            result = native()
            result = await result if inspect.isawaitable(result) else result
            record.done(result, fallback=reason)
            return result
        record.done(result)
        return result


def _failed(exc: Exception, strict: bool, framework: str, log: logging.Logger | None,
            on_fallback: Callable[[str], None] | None,
            strict_error: Callable[[str], Exception] | None) -> str | None:
    """What both fallbacks do with a failed read: None when ``exc`` is to be re-raised as it
    is; raises ``strict_error(reason)``; else logs the one warning and returns the reason
    (fall back)."""
    reason = f"{type(exc).__name__}: {exc}"
    if strict:
        if strict_error is None:
            return None
        raise strict_error(f"{reason} (strict=True; strict=False returns {framework}'s own "
                           "result with a warning)") from exc
    (log or logger).warning("mempursuit could not reorder this %s read (%s); returning %s's "
                            "own result (strict=True raises instead)", framework, reason,
                            framework)
    if on_fallback is not None:
        on_fallback(reason)
    return reason
