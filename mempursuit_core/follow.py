"""The second read: follow the titles the chosen evidence names into the store.

A pool of the ``P`` nearest passages often lacks the one a multi-hop question needs most: the
song's passage is in the pool, its performer's is not (nothing in the question is near it), but
the song's passage names her. Once the first picks are chosen, the titles they (and the
question) name that no candidate carries are looked up in the store by title, through the
framework's own filter, their stored vectors read back (nothing is embedded), and the policy
chooses again over the larger pool (``centered-fusion``'s ``follow``).

A store offers the second read by handing the policy a :class:`TitleLookup` as the per-pool
signal ``"title_lookup"``: the titles it holds (read once, and again when its ``version``
changes) and a ``fetch`` that returns the candidates of a few titles as a :class:`Fetched`.
Which titles a text names is decided here, over the store's own titles
(:class:`~mempursuit_core.links.TitleLinks`: the title's phrase between word boundaries), so
every store answers the same question: "these exact titles, please".
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .links import TitleLinks
from .signals import PoolSignals

__all__ = ["Fetched", "TitleLookup", "extended_signals", "PER_POOL_SIGNALS"]

logger = logging.getLogger("mempursuit")

#: Signals that describe the pool as a whole (not one value per candidate): kept as they are
#: when fetched candidates are added. ``"sparse"`` (a matrix over the pool's own vocabulary)
#: cannot be extended and is left out of the larger pool.
PER_POOL_SIGNALS = frozenset({"query_text", "query_sparse", "sparse_terms"})
_DROPPED = frozenset({"sparse", "title_lookup"})


@dataclass
class Fetched:
    """The candidates a second read brought back, in the order they were asked for.

    Attributes
    ----------
    items : list, length m
        The store's own objects (ids, nodes, documents).
    vectors : ndarray, shape (m, d)
        Their stored vectors.
    signals : mapping
        One value per fetched candidate for the pool's per-candidate signals the store keeps
        (``texts`` and ``titles`` at least); a key the pool has and this lacks is filled with
        None (lists) or the pool's lowest value (scores).
    native_scores : ndarray, shape (m,), optional
        The store's own scores for them, when it has them.
    """

    items: list
    vectors: np.ndarray
    signals: Mapping[str, Any] = field(default_factory=dict)
    native_scores: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.items)


class TitleLookup:
    """A store's second read: which titles it holds, and their candidates fetched by title.

    Parameters
    ----------
    titles : callable
        ``titles()``: every title the store holds (an iterable of str; repeats and None are
        ignored). Called once, and again whenever ``version()`` changes.
    fetch : callable
        ``fetch(titles, limit)``: the store's candidates whose title is one of ``titles`` (a
        list of exact titles as ``titles()`` gave them), at most ``limit``, as a
        :class:`Fetched`; one round trip.
    version : callable, optional
        ``version()``: anything that changes when the store's contents do (a count); without
        it the titles are read once.
    framework : str
        Named in the warning when a lookup fails.
    """

    def __init__(self, titles: Callable[[], Iterable[Any]],
                 fetch: Callable[[list[str], int], Fetched], *,
                 version: Callable[[], Any] | None = None, framework: str = "the store"):
        self._titles, self._fetch, self._version = titles, fetch, version
        self.framework = framework
        self._index: TitleLinks | None = None
        self._raw: list[str] = []
        self._seen: Any = object()
        self._owner = self  # who keeps the index (shared by with_fetch copies)
        self.warned = False

    def with_fetch(self, fetch: Callable[[list[str], int], Fetched]) -> "TitleLookup":
        """The same store's titles (one index, shared) with another ``fetch``: a read path that
        fetches for one query (its scores, its signals) builds one of these per read."""
        other = TitleLookup(self._titles, fetch, version=self._version,
                            framework=self.framework)
        other._owner = self._owner
        return other

    def index(self) -> TitleLinks:
        """The store's titles indexed (rebuilt when ``version()`` changes)."""
        owner = self._owner
        seen = owner._version() if owner._version is not None else None
        if owner._index is None or seen != owner._seen:
            raw = list(dict.fromkeys(t for t in owner._titles() if isinstance(t, str) and t))
            owner._raw, owner._index, owner._seen = raw, TitleLinks(raw), seen
        return owner._index

    def named(self, texts: Sequence[str], exclude: Iterable[Any] = (), limit: int | None = None
              ) -> list[str]:
        """The store's titles that ``texts`` name, without ``exclude`` (the titles the pool
        already has): each text's first name, then each text's second, ... (within a text,
        longer phrases first), so that every text is followed before any text twice.

        Returns
        -------
        list of str, at most ``limit``
        """
        index = self.index()
        raw = self._owner._raw
        skip = {t for t in exclude if isinstance(t, str)}
        queues = []
        for text in texts:
            found = sorted(index.named(text), key=lambda j: (-len(index.phrases[j]), j))
            queues.append([raw[j] for j in found if raw[j] not in skip])
        out: dict[str, None] = {}
        for turn in range(max(map(len, queues), default=0)):
            for queue in queues:
                if turn < len(queue) and queue[turn] not in out:
                    out[queue[turn]] = None
                    if limit is not None and len(out) >= limit:
                        return list(out)
        return list(out)

    def fetch(self, titles: list[str], limit: int) -> Fetched:
        """The candidates of ``titles`` (at most ``limit``), checked."""
        found = self._fetch(list(titles), int(limit))
        if not isinstance(found, Fetched):
            raise TypeError(f"a title lookup must return Fetched, got {type(found).__name__}")
        found.items = list(found.items)[:limit]
        found.vectors = np.asarray(found.vectors)[:limit]
        return found

    def warn(self, exc: BaseException) -> None:
        """One warning per store: the second read failed and the first read's order stands."""
        if not self._owner.warned:
            self._owner.warned = True
            warnings.warn(f"mempursuit: the second read through {self.framework} failed "
                          f"({type(exc).__name__}: {exc}); the first read's order is used",
                          RuntimeWarning, stacklevel=4)
        logger.debug("second read failed", exc_info=exc)


def extended_signals(signals: Mapping, P: int, fetched: Fetched) -> PoolSignals:
    """The pool's signals for the pool followed by the fetched candidates, lazily.

    Per-candidate lists get the fetched values (or None), 1-d scores the fetched scores (or the
    pool's lowest), per-pool signals (:data:`PER_POOL_SIGNALS`) stay as they are; ``"sparse"``
    and the lookup itself are left out.
    """
    m = len(fetched)
    more = fetched.signals

    def joined(key: str) -> Callable[[], Any]:
        def value():
            base = signals[key]
            if key in more:
                extra = more[key]
            elif isinstance(base, np.ndarray) and base.ndim == 1 and base.size:
                extra = np.full(m, base.min(), dtype=base.dtype)
            else:
                extra = [None] * m
            if isinstance(base, np.ndarray) and base.ndim == 1:
                return np.concatenate([base, np.asarray(extra, dtype=base.dtype)])
            return list(base) + list(extra)
        return value

    producers: dict[str, Callable[[], Any]] = {}
    for key in signals:
        if key in _DROPPED:
            continue
        if key in PER_POOL_SIGNALS:
            producers[key] = (lambda k: lambda: signals[k])(key)
        else:
            producers[key] = joined(key)
    for key in more:
        if key not in producers and key not in _DROPPED and key not in PER_POOL_SIGNALS:
            producers[key] = (lambda k: lambda: [None] * P + list(more[k]))(key)
    return PoolSignals(producers)
