"""Per-pool signals that read policies may use, computed lazily.

Adapters hand selectors a :class:`PoolSignals` mapping: a value is computed the first time a
policy reads it (a policy that needs nothing costs nothing). Keys used by the built-in policies:
``"texts"`` and ``"timestamps"`` (lists, length P), ``"query_text"``, ``"session_ids"``,
``"speakers"`` (list, length P: who said each memory, str or None),
``"sparse"`` (P, m) tf-idf rows and ``"query_sparse"`` (m,) over the pool's vocabulary,
``"sparse_terms"``, ``"positions"`` (P,) integers: each memory's place in the store's write
order (``centered-fusion``'s ``adjacent``), and ``"lexical"`` (P,): the framework's own keyword
score (BM25) where its native order uses one. ``"titles"`` (list, length P, str or None): each
document's title or source name (``mempursuit_core.metadata.metadata_signals``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Hashable, Iterator, Sequence

import numpy as np

from .dates import epoch_utc
from .validation import signal_values

__all__ = ["PoolSignals", "derived", "pool_signals", "minmax", "time_buckets", "zscore"]


class PoolSignals(Mapping):
    """A read-only mapping whose values are computed on first access and then kept.

    ``producers`` maps keys to zero-argument callables; ``values`` holds signals that are
    already at hand (they count as read only once a policy reads them).
    """

    def __init__(self, producers: dict[str, Callable[[], Any]] | None = None, *,
                 values: dict[str, Any] | None = None,
                 optional: dict[str, Callable[[], Any]] | None = None,
                 extends: tuple["PoolSignals", int] | None = None):
        self._producers = dict(producers or {})
        self._ready = dict(values or {})
        # producers that may have nothing to give: a None result leaves the key absent, so
        # ``key in signals`` runs them (a policy that asks whether a signal exists pays for it)
        self._optional = dict(optional or {})
        keys = [self._producers.keys(), self._ready.keys(), self._optional.keys()]
        both = (keys[0] & keys[1]) | (keys[0] & keys[2]) | (keys[1] & keys[2])
        if both:
            raise ValueError(f"signals given more than once: {sorted(both)}")
        self._values: dict[str, Any] = {}
        self._derived: dict[Hashable, Any] = {}
        self._extends = extends  # (signals, P): these are that pool's, followed by more

    def __getitem__(self, key: str) -> Any:
        if key not in self._values:
            if key in self._ready:
                self._values[key] = self._ready[key]
            elif key in self._producers:
                self._values[key] = self._producers[key]()
            elif key in self._optional:
                self._values[key] = self._optional[key]()
            else:
                raise KeyError(key)
        value = self._values[key]
        if value is None and key in self._optional:
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        yield from self._ready
        yield from self._producers
        yield from (k for k in self._optional if k in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, key: object) -> bool:
        if key in self._optional:
            try:
                self[key]
            except KeyError:
                return False
            return True
        return key in self._ready or key in self._producers

    def with_optional(self, key: str, producer: Callable[[], Any]) -> "PoolSignals":
        """These signals plus ``key``, produced on first use; a producer that returns None
        leaves ``key`` absent. Values already computed are kept."""
        out = PoolSignals(self._producers, values=self._ready,
                          optional={**self._optional, key: producer})
        out._values = dict(self._values)
        return out

    def overlay(self, values: Mapping[str, Any] | None = None, *,
                producers: Mapping[str, Callable[[], Any]] | None = None) -> "PoolSignals":
        """These signals with ``values`` (and lazy ``producers``) put over them: added, or
        replacing the same keys; the others stay lazy and values already computed are kept."""
        values, producers = dict(values or {}), dict(producers or {})
        new = values.keys() | producers.keys()
        keep = lambda d: {k: v for k, v in d.items() if k not in new}  # noqa: E731
        out = PoolSignals({**keep(self._producers), **producers},
                          values={**keep(self._ready), **values}, optional=keep(self._optional))
        out._values = keep(self._values)
        return out

    def derived(self, key: Hashable, make: Callable[[], Any],
                extend: Callable[[Any, int], Any] | None = None) -> Any:
        """A value a policy derives from these signals (an index over the pool's texts, the
        query's term counts), made once by ``make()`` and kept with them; ``key`` names it
        with every option it depends on.

        For the signals of a pool followed by more candidates (``extends=(signals, P)``: the
        second read's), ``extend(value, P)`` makes it from the shorter pool's value where that
        one was made, so a policy reading both pools reads each first ``P`` candidates once.
        """
        if key not in self._derived:
            prior = (self._extends[0]._derived.get(key) if self._extends is not None
                     and extend is not None else None)
            self._derived[key] = make() if prior is None else extend(prior, self._extends[1])
        return self._derived[key]

    def computed(self) -> list[str]:
        """Keys read so far (what policies actually read)."""
        return list(self._values)

    def __repr__(self) -> str:
        return f"<PoolSignals {sorted(self)} computed={sorted(self._values)}>"


def derived(signals: Mapping | None, key: Hashable, make: Callable[[], Any],
            extend: Callable[[Any, int], Any] | None = None) -> Any:
    """:meth:`PoolSignals.derived` where ``signals`` keeps derived values; ``make()`` for any
    other mapping (a plain dict is read again each time)."""
    if isinstance(signals, PoolSignals):
        return signals.derived(key, make, extend)
    return make()


def pool_signals(texts: Sequence[str], query: str, *, timestamps: Sequence[Any] | None = None,
                 **extra: Any) -> PoolSignals:
    """Lazy signals for one pool from its texts (native order) and the query text.

    The lexical features are tf-idf over the pool's own vocabulary (BM25-style tokens, English
    stop words removed): what ``experimental/pursuit-joint`` needs where a framework keeps no
    sparse vectors.
    ``extra`` values are passed through as they are.
    """
    texts = list(texts)
    state: dict[str, Any] = {}

    def tfidf():
        if "tfidf" not in state:
            from .lexical import LexicalIndex

            state["tfidf"] = LexicalIndex(texts).tfidf(range(len(texts)), query)
        return state["tfidf"]

    producers: dict[str, Callable[[], Any]] = {
        "texts": lambda: texts,
        "query_text": lambda: query,
        "sparse": lambda: tfidf()[0],
        "query_sparse": lambda: tfidf()[1],
        "sparse_terms": lambda: tfidf()[2],
    }
    values = dict(extra)
    if timestamps is not None:
        values["timestamps"] = list(timestamps)
    return PoolSignals({k: f for k, f in producers.items() if k not in values}, values=values)


def minmax(x: np.ndarray) -> np.ndarray:
    """``(x - min) / (max - min)``; all zeros when the range is zero.

    Parameters
    ----------
    x : ndarray, shape (n,)

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    return _rescaled(x, lambda v: (v.min(), np.ptp(v)))


def zscore(x: np.ndarray) -> np.ndarray:
    """``(x - mean) / std`` over the pool; all zeros when the spread is zero.

    Parameters
    ----------
    x : ndarray, shape (n,)

    Returns
    -------
    ndarray of float64, shape (n,)
    """
    return _rescaled(x, lambda v: (v.mean(), v.std()))


def _rescaled(x, shift_and_scale) -> np.ndarray:
    """``(x - shift) / scale`` as float64; zeros when the scale is not positive (or NaN)."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return x
    shift, scale = (float(s) for s in shift_and_scale(x))
    if not scale > 0:
        return np.zeros_like(x)
    return (x - shift) / scale


def time_buckets(signals, P: int, bucket: str = "day") -> list | None:
    """One hashable bucket per candidate from the pool's signals, or None when there are none.

    The ``"time_buckets"`` signal, else ``"session_ids"``, else each ``"timestamps"``'s
    calendar day (``bucket="day"``) or the timestamp itself (``"exact"``); a candidate without
    one gets a bucket of its own.
    """
    if signals is None:  # no len(): lazy mappings stay lazy
        return None
    for key in ("time_buckets", "session_ids", "timestamps"):
        if key in signals and signals[key] is not None:
            values = signal_values(signals, key, P)
            if key == "timestamps":
                values = [_stamp(t, bucket) for t in values]
            break
    else:
        return None
    # Candidates without a time each get a bucket of their own (never grouped together).
    buckets = [("__none__", i) if v is None else v for i, v in enumerate(values)]
    try:
        set(buckets)
    except TypeError:
        raise ValueError(f"signals[{key!r}] must hold one hashable value (a session id, a "
                         "bucket name) per candidate") from None
    return buckets


def _stamp(t, bucket: str):
    """The bucket of one timestamp: its calendar day (``"day"``) or the value itself."""
    # an empty timestamp (LightMem stores "" for undated memories) is no timestamp
    if t is None or isinstance(t, bool) or not str(t).strip():
        return None
    if isinstance(t, (int, float, np.integer, np.floating)):  # seconds since the epoch, UTC
        stamp = epoch_utc(t)
        if stamp is None:
            return None
        t = stamp.isoformat()
    return str(t)[:10] if bucket == "day" else str(t)


