"""The read: one path every adapter and the evaluation harness go through, in stages.

An adapter turns the framework's native candidate pool for one query into a
:class:`CandidatePool` (the framework's own items in native order, their **stored** vectors,
the query vector, the native scores and the signals the framework really keeps) and asks for
``K`` of them with :meth:`CandidatePool.select` (:func:`select_pools` for many pools at
once). The stages:

1. **choose**: the read policy's order (:mod:`mempursuit_core.policies`; a policy never reads
   a store);
2. **follow**: where the policy asks for a second read and the pool has a lookup, the
   titles its first picks name are fetched inside the caller's scope and the policy chooses
   again over the pool and them (:func:`mempursuit_core.follow.follow_pool`);
3. **check**: distinct pool positions, at most ``K``, ``min(K, P)`` unless the policy says
   why it stopped (:func:`checked_order`);
4. **fit**: with a token budget, the longest prefix whose texts fit
   (:mod:`mempursuit_core.tokens`).

Around them, :func:`read_or_native` returns the framework's own result with one warning on any
failure (or raises under ``strict=True``), and records the read's trace
(:mod:`mempursuit_core.trace`); :class:`Reranker` is the whole read of an adapter handed items
already retrieved (a ranker, a postprocessor, a compressor); :func:`stored_pool` builds the
checked pool from items with their stored vectors read back.

The evaluation harness builds the same :class:`CandidatePool` through the adapter's own pool
function (its items the benchmark's unit ids) and reads it through :func:`select_pools`, so a
framework row measures what ships. Signals are what the framework's store really keeps (keys
read by the built-in policies: ``texts``, ``query_text``, ``timestamps``, ``session_ids``,
``speakers``, ``positions``, ``lexical``, ``sparse`` / ``query_sparse``); a missing one is left
out, never made up (``docs/adapters/README.md`` lists them per framework). Where the vectors
come from (the item, the store, the embedding model) is :mod:`mempursuit_core.vectors`.
Adapters import all of it from :mod:`mempursuit_core.adapter`. A third-party adapter::

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

from .options import ReadOptions, blank_query
from .signals import PoolSignals
from .trace import (ReadTrace, TraceSlot, note_final, note_policy, note_pool, note_second_read,
                    note_stored_vectors, note_tokens, recording)

__all__ = ["CandidatePool", "PoolSelection", "Reranker", "StoredPool", "aread_or_native",
           "checked_order", "read_or_native", "select_pools", "stored_pool",
           "warn_short_budget"]

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
        """The policy's ``k`` items from this pool: the read's stages (:func:`select_pools`).

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
        first = (selector.select(self.query_vector, self.vectors, k,
                                 native_scores=self.native_scores, signals=self.signals)
                 if self.items else None)
        return _stages(selector, self, first, k)

    def followed(self, fetched: Any) -> "CandidatePool[T]":
        """This pool followed by the candidates a second read fetched
        (:class:`mempursuit_core.follow.Fetched`), positions ``P`` onwards."""
        from .follow import widened

        return CandidatePool(self.items + list(fetched.items), self.query_vector,
                             *widened(self.vectors, self.native_scores, self.signals, fetched))


def select_pools(selector: Any, pools: Sequence[CandidatePool[T]], k: int
                 ) -> "list[PoolSelection[T]]":
    """:meth:`CandidatePool.select` for many pools (the evaluation harness): the policy chooses
    for all of them in one ``select_batch`` call, then each pool goes through the same stages.

    Parameters
    ----------
    selector : Selector
        A built read policy.
    pools : sequence of CandidatePool
    k : int
        The budget ``K``.

    Returns
    -------
    list of PoolSelection, one per pool
        ``order`` indexes ``pool``: the given pool, followed by what a second read fetched.

    Raises
    ------
    TypeError, ValueError
        As :meth:`CandidatePool.select`.
    """
    pools = list(pools)
    live = [p for p in pools if p.items]
    chosen = iter(selector.select_batch(
        [p.query_vector for p in live], [p.vectors for p in live], k,
        native_scores=[p.native_scores for p in live], signals=[p.signals for p in live])
        if live else ())
    return [_stages(selector, p, next(chosen) if p.items else None, k) for p in pools]


def _stages(selector: Any, pool: CandidatePool[T], first: Any, k: int) -> "PoolSelection[T]":
    """The stages after the policy's first choice ``first`` (None for an empty pool): follow,
    check, fit; each noted in the read's trace."""
    from .follow import follow_pool

    note_policy(selector, k)
    note_pool(pool.items)
    note_stored_vectors(len(pool.items))
    if first is None:
        note_final([])
        return PoolSelection([], np.empty(0, dtype=np.intp), None, pool)
    selection, wider = follow_pool(first, pool, k)
    order = checked_order(selection, k, len(wider.items), selector)
    if len(order) < min(k, len(pool.items)) and getattr(selection, "stopped", None) is None:
        # a read returns min(K, P) items unless the policy says why it stopped
        raise ValueError(f"selector {selector!r} returned {len(order)} of the "
                         f"{min(k, len(pool.items))} items asked for without a stop reason")
    order = _fit(selector, wider, order)
    chosen = [wider.items[i] for i in order]
    note_pool(pool.items, wider.items)
    note_final(chosen)
    note_second_read((getattr(selection, "info", None) or {}).get("reorder", {}).get("follow"))
    return PoolSelection(chosen, order, selection, wider)


def _fit(selector: Any, pool: CandidatePool, order: np.ndarray) -> np.ndarray:
    """The longest prefix of ``order`` whose texts fit the selector's token budget, if any."""
    budget = getattr(selector, "budget_tokens", None)
    if budget is None:
        return order
    texts = pool.signals.get("texts") if pool.signals is not None else None
    if texts is None:
        raise ValueError("a token budget needs the pool's texts (the 'texts' signal)")
    n, used = selector.fit([texts[i] for i in order])
    note_tokens(budget, used)
    return order[:n]


def checked_order(selection: Any, k: int, P: int, selector: Any = None) -> np.ndarray:
    """A selector's order as intp positions, checked before an adapter trusts it.

    Parameters
    ----------
    selection : Selection or array_like of int, shape (n,)
    k : int
        The budget the selector was given.
    P : int
        The pool size.
    selector : object, optional
        Named in the error message.

    Returns
    -------
    ndarray of intp, shape (n,), ``n <= min(k, P)``

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
    if (len(np.unique(order)) != len(order) or len(order) > k
            or (len(order) and (order.min() < 0 or order.max() >= P))):
        raise ValueError(f"selector {selector!r} returned an invalid order {order}")
    return order


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


class Reranker:
    """What a rerank-style adapter does with the items it is given, framework-free.

    Parameters
    ----------
    options : ReadOptions
        The adapter's checked options (``ReadOptions.build``).
    framework : str
        Named in the warnings (``"LlamaIndex"``).
    where : str, optional
        The adapter's class name, named in the budget warning.
    log : Logger, optional
        Where the fallback warning goes (default the ``mempursuit`` logger).
    ids : callable, optional
        ``ids(item)``: an item's short id in :attr:`last_trace` (a document or node id;
        default its position in the given items).
    trace : TraceSlot, optional
        Where the reads' traces go (default a slot of its own; an adapter that builds a new
        reranker per read passes its own slot).

    Notes
    -----
    The budget rule every adapter shares: the candidates are the first ``max(pool, K)`` items,
    the result at most ``K`` of them; a ``K`` above ``pool`` is logged once per reranker (the
    read returns what the retriever gave, never more: raise the retriever's top-k).
    """

    def __init__(self, options: ReadOptions, *, framework: str, where: str = "",
                 log: logging.Logger | None = None, ids: Callable[[Any], Any] | None = None,
                 trace: TraceSlot | None = None):
        self.options = options
        self.ids = ids
        self.trace = trace if trace is not None else TraceSlot()
        self.selector = options.selector()
        self.framework = framework
        self.where = where or framework
        self.log = log
        self._warned_budget = False

    @property
    def last_trace(self) -> ReadTrace | None:
        """The :class:`~mempursuit_core.trace.ReadTrace` of the last read on this thread."""
        return self.trace.last

    @property
    def is_native(self) -> bool:
        """``policy="native"``: every read passes the items through."""
        return self.options.is_native

    def sizes(self, available: int) -> tuple[int, int]:
        """``(K, P)`` for ``available`` items: ``K`` at most ``available`` (all of them when
        ``k`` is None), ``P = max(pool, K)``; warns once when ``k`` is above ``pool``."""
        warn_short_budget(self, self.options, self.where)
        return self.options.sizes(max(available, 1))

    def candidates(self, items: Sequence[T]) -> list[T]:
        """The first ``P`` items: the pool the policy chooses from."""
        return list(items)[: self.sizes(len(items))[1]]

    def passthrough(self, items: Sequence[T]) -> list[T] | None:
        """The first ``K`` items as given when nothing is to be reordered (``policy="native"``
        without a token budget, or no items), else None."""
        if (self.is_native and self.options.budget_tokens is None) or not items:
            kept = list(items)[: self.sizes(len(items))[0]]
            note_policy("native" if self.is_native else self.selector, len(kept))
            note_pool(items)
            note_final(kept)
            return kept
        return None

    def rerank(self, items: Sequence[T], build: Callable[[list[T]], CandidatePool[T]], *,
               strict: bool | None = None, query: Any = None) -> list[T]:
        """The policy's ``K`` of ``items``; any failure returns the first ``K`` and one warning,
        and so does an empty or blank ``query`` (:func:`~mempursuit_core.options.blank_query`).

        Parameters
        ----------
        items : sequence, length n
            The retrieved items, native order.
        build : callable
            ``build(candidates) -> CandidatePool`` over the first ``P`` items.
        strict : bool, optional
            Default the options' ``strict``: raise instead of falling back.
        query : str, optional
            The read's query text, checked for blankness (not checked when not given).

        Returns
        -------
        list, length <= K
        """
        items = list(items)
        k = self.sizes(len(items))[0]
        if not self.is_native and blank_query(query, self.where, log=self.log):
            return items[:k]

        def ours():
            kept = self.passthrough(items)
            return kept if kept is not None else build(self.candidates(items)).select(
                self.selector, k).items

        return read_or_native(ours, lambda: items[:k], framework=self.framework, log=self.log,
                              strict=self.options.strict if strict is None else strict,
                              trace=self.trace, ids=self.ids, result_items=list)

    async def arerank(self, items: Sequence[T],
                      build: Callable[[list[T]], Awaitable[CandidatePool[T]]], *,
                      strict: bool | None = None, query: Any = None) -> list[T]:
        """:meth:`rerank` with an async ``build``."""
        items = list(items)
        k = self.sizes(len(items))[0]
        if not self.is_native and blank_query(query, self.where, log=self.log):
            return items[:k]

        async def ours():
            kept = self.passthrough(items)
            if kept is not None:
                return kept
            return (await build(self.candidates(items))).select(self.selector, k).items

        return await aread_or_native(ours, lambda: items[:k], framework=self.framework,
                                     log=self.log,
                                     strict=self.options.strict if strict is None else strict,
                                     trace=self.trace, ids=self.ids, result_items=list)


def warn_short_budget(owner: Any, options: ReadOptions, where: str) -> None:
    """Log once per ``owner`` that ``k`` is above ``pool`` (the pool read grows to ``K``)."""
    if options.k is None or options.k <= options.pool or getattr(owner, "_warned_budget", False):
        return
    try:
        owner._warned_budget = True
    except Exception:  # an owner that takes no new attribute: warn every time rather than never
        pass
    logger.warning("mempursuit: %s k=%d is above pool=%d: the candidates are the first %d "
                   "retrieved (never more than the retriever returns); set pool >= k, and the "
                   "retriever's top-k to the pool", where, options.k, options.pool, options.k)


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
