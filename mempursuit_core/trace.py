"""What a component's last read did: :class:`ReadTrace`, built once in the core read path.

Every adapter's read runs inside :func:`~mempursuit_core.readpath.read_or_native` (or its
async twin), which opens a recorder for the read; the core records into it as the read goes:
:meth:`CandidatePool.select <mempursuit_core.readpath.CandidatePool.select>` the native pool,
the chosen order and the second read, :class:`~mempursuit_core.vectors.EmbeddedVectors`
where each vector came from, the fallback its reason. When the read returns, the trace is put
in the component's :class:`TraceSlot`, which the adapter shows as ``last_trace``::

    >>> ranker.run(query="...", documents=docs)
    >>> ranker.last_trace
    ReadTrace(policy='centered-fusion', k=5, native=['d3', 'd1', ...], final=['d1', ...],
              vectors={'documents': 40}, second_read={'named': 2, 'fetched': 1, 'ms': 0.4},
              fallback=None)

Items are shown by the short id the adapter gives (a document, node or memory id), else by
their position in the native pool (0-based; a fetched candidate's position counts on from
``P``).
"""

from __future__ import annotations

import contextvars
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

__all__ = ["ReadTrace", "TraceSlot", "note_final", "note_policy", "note_pool",
           "note_second_read", "note_stored_vectors", "note_tokens", "note_vectors", "recording"]


@dataclass(frozen=True)
class ReadTrace:
    """What one read did (a component's ``last_trace``).

    Attributes
    ----------
    policy : str or None
        The read policy's name (``"native"`` for a pass-through).
    k : int or None
        The budget ``K`` the policy was asked for.
    native : tuple
        The framework's own order of the candidates (ids or positions).
    final : tuple
        What the read returned, in order (ids or positions).
    vectors : mapping of str to int
        How many candidate vectors came from each place (``"store"``, ``"documents"``,
        ``"embedded"``, ...).
    second_read : mapping or None
        ``{"named": titles named, "fetched": candidates fetched, "ms": its time}`` where the
        policy read again by title; None where it did not.
    fallback : str or None
        Why the framework's own result was returned instead (``"TypeError: ..."``), or None.
    budget_tokens : int or None
        The token budget the read filled (``budget_tokens=``), or None.
    tokens : int or None
        The tokens the returned items count (with a token budget only).
    """

    policy: str | None = None
    k: int | None = None
    native: tuple = ()
    final: tuple = ()
    vectors: Mapping[str, int] = field(default_factory=dict)
    second_read: Mapping[str, Any] | None = None
    fallback: str | None = None
    budget_tokens: int | None = None
    tokens: int | None = None

    def __repr__(self) -> str:
        second = self.second_read
        if second is not None:
            second = {**second, "ms": round(float(second.get("ms", 0.0)), 1)}
        parts = [f"policy={self.policy!r}", f"k={self.k!r}", f"native={list(self.native)!r}",
                 f"final={list(self.final)!r}", f"vectors={dict(self.vectors)!r}",
                 f"second_read={second!r}", f"fallback={self.fallback!r}"]
        if self.budget_tokens is not None:
            parts += [f"budget_tokens={self.budget_tokens}", f"tokens={self.tokens}"]
        return f"ReadTrace({', '.join(parts)})"


class TraceSlot:
    """Where a component keeps the trace of its last read, one per thread (two threads reading
    through the same component each see their own)."""

    def __init__(self) -> None:
        self._local = threading.local()

    @property
    def last(self) -> ReadTrace | None:
        """The last read's trace on the calling thread, or None before the first read."""
        return getattr(self._local, "trace", None)

    def put(self, trace: ReadTrace) -> None:
        self._local.trace = trace


class _Recorder:
    """One read's trace as it is being built (mutable; :meth:`trace` freezes it)."""

    def __init__(self, ids: Callable[[Any], Any] | None) -> None:
        self.ids = ids
        self.policy: str | None = None
        self.k: int | None = None
        self.native: list | None = None
        self.pool: list | None = None
        self.final: list | None = None
        self.vectors: dict[str, int] = {}
        self.second_read: dict[str, Any] | None = None
        self.budget_tokens: int | None = None
        self.tokens: int | None = None
        self.fallback: str | None = None

    def short(self, item: Any) -> Any:
        if self.ids is not None:
            try:
                short = self.ids(item)
            except Exception:  # noqa: BLE001 - an item the id function cannot read: its position
                short = None
            if short is not None:
                return short
        for pool in (self.pool, self.native):
            for i, x in enumerate(pool or ()):
                if x is item:
                    return i
        return "?"

    def trace(self) -> ReadTrace:
        return ReadTrace(policy=self.policy, k=self.k,
                         native=tuple(self.short(x) for x in self.native or ()),
                         final=tuple(self.short(x) for x in self.final or ()),
                         vectors=dict(self.vectors), second_read=self.second_read,
                         fallback=self.fallback, budget_tokens=self.budget_tokens, tokens=self.tokens)


_CURRENT: contextvars.ContextVar[_Recorder | None] = contextvars.ContextVar(
    "mempursuit_trace", default=None)


def _recorder() -> _Recorder | None:
    return _CURRENT.get()


def note_policy(policy: Any, k: int | None) -> None:
    """Record the policy (a name or a selector) and ``K`` of the read in progress."""
    rec = _CURRENT.get()
    if rec is not None:
        rec.policy = policy if isinstance(policy, str) or policy is None else getattr(
            policy, "name", type(policy).__name__)
        rec.k = k


def note_pool(native: Sequence[Any], pool: Sequence[Any] | None = None) -> None:
    """Record the framework's own order (``native``) and the pool positions refer to
    (``pool``: the native pool followed by what a second read fetched)."""
    rec = _CURRENT.get()
    if rec is not None:
        rec.native = list(native)
        rec.pool = list(pool) if pool is not None else rec.native


def note_final(items: Sequence[Any]) -> None:
    """Record what the read returns, in order."""
    rec = _CURRENT.get()
    if rec is not None:
        rec.final = list(items)


def note_second_read(follow: Mapping[str, Any] | None) -> None:
    rec = _CURRENT.get()
    if rec is not None and follow is not None:
        rec.second_read = dict(follow)


def note_vectors(source: str, n: int) -> None:
    """Count ``n`` candidate vectors read from ``source`` in the read in progress."""
    rec = _CURRENT.get()
    if rec is not None and n:
        rec.vectors[source] = rec.vectors.get(source, 0) + n


def note_stored_vectors(n: int) -> None:
    """Count ``n`` vectors read from the store unless the read has counted its vectors already
    (the default of a pool built from stored vectors)."""
    rec = _CURRENT.get()
    if rec is not None and n and not rec.vectors:
        rec.vectors["store"] = n


def note_tokens(budget: int | None, used: int | None) -> None:
    """Record the token budget and the tokens the returned items count."""
    rec = _CURRENT.get()
    if rec is not None:
        rec.budget_tokens, rec.tokens = budget, used


class recording:
    """``with recording(slot, ids, result_items) as r: ...; r.done(result)`` records the read
    inside into ``slot`` (a read nested in another records into the outer one; with no slot
    and no outer read, nothing is recorded)."""

    def __init__(self, slot: TraceSlot | None, ids: Callable[[Any], Any] | None = None,
                 result_items: Callable[[Any], Sequence[Any]] | None = None) -> None:
        self.slot, self.ids, self.result_items = slot, ids, result_items
        self.rec: _Recorder | None = None
        self.token = None

    def __enter__(self) -> "recording":
        outer = _CURRENT.get()
        if outer is None and self.slot is None:
            return self
        if outer is not None:
            self.rec = outer
            if self.ids is not None and outer.ids is None:
                outer.ids = self.ids
        else:
            self.rec = _Recorder(self.ids)
            self.token = _CURRENT.set(self.rec)
        return self

    def done(self, result: Any, fallback: str | None = None) -> None:
        """The read returns ``result`` (the framework's own after a fallback: ``fallback``, the
        reason): put the finished trace in the slot (a read nested in another: the outer
        read's trace records the fallback, and its slot gets it when the outer read is done).
        """
        rec = self.rec
        if rec is None:
            return
        if fallback is not None:
            rec.fallback = fallback
        returned = None
        if self.result_items is not None:
            try:
                returned = list(self.result_items(result))
            except Exception:  # noqa: BLE001 - a result the adapter's function cannot read
                returned = None
        if rec.fallback is not None:
            rec.final = returned if returned is not None else []
            if rec.native is None:
                rec.native = list(returned or [])
            rec.second_read = None
            rec.budget_tokens = rec.tokens = None
        elif returned is not None:
            rec.final = returned
            if rec.native is None:  # no pool was read: the framework's own read, passed through
                rec.native = returned
        if rec.policy is None:  # no policy ran
            rec.policy = "native"
        if self.slot is not None:
            self.slot.put(rec.trace())

    def __exit__(self, *exc: Any) -> None:
        if self.token is not None:
            _CURRENT.reset(self.token)
