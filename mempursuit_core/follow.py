"""The second read: follow the titles the chosen evidence names into the store.

A pool of the ``P`` nearest passages often lacks the one a multi-hop question needs most: the
song's passage is in the pool, its performer's is not (nothing in the question is near it), but
the song's passage names her. Once a policy has chosen, it may say what it would read next (a
:class:`FollowRequest` on its :class:`~mempursuit_core.selectors.Selection`: the texts of its
first picks and the question); it never reads a store itself. This module is the stage of the
read path that does (:func:`follow_up`):

1. the store-wide :class:`TitleIndex` (built once per store version, in the background when a
   deadline is set) says which of the store's titles those texts name, less the titles the
   pool already has;
2. the read's :class:`TitleLookup` fetches their candidates through the framework's own filter,
   **inside the caller's scope**, in one round trip, their stored vectors read back (nothing is
   embedded);
3. what comes back is checked (:meth:`TitleLookup.read`): only candidates of a title that was
   asked for, none the pool already has, none twice, none outside the scope, at most the
   limit, finite vectors of the pool's dimension;
4. the policy chooses again over the pool and them (the request's ``then``).

Whatever goes wrong (a store error, junk, a lookup slower than its deadline) gives the first
read's order and one warning per store, never the framework's native order.

Titles and texts are compared in one Unicode normal form (NFC), so a text naming "Café" names a
title stored decomposed.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import inspect
import logging
import threading
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterable, Iterator, Sequence

import numpy as np

from .links import PoolTexts, TitleLinks, _occurs, _phrase, nfc, pool_texts
from .signals import PoolSignals
from .validation import checked_row_norms

__all__ = ["DEFAULT_FOLLOW_TIMEOUT", "Fetched", "FollowRequest", "ScopedTitleIndexes", "TitleIndex",
           "TitleLookup", "extended_signals", "follow_pool", "follow_up", "widened", "nfc", "note_write", "plain_match",
           "write_version", "PER_POOL_SIGNALS"]

logger = logging.getLogger("mempursuit")

#: Seconds the second read may take (building the store's title index, then the fetch) before
#: the first read's order stands; a read option (``follow_timeout``).
DEFAULT_FOLLOW_TIMEOUT = 0.5

#: Signals that describe the pool as a whole (not one value per candidate): kept as they are
#: when fetched candidates are added. ``"sparse"`` (a matrix over the pool's own vocabulary)
#: cannot be extended and is left out of the larger pool.
_SAID = 1 << 14  # texts whose named titles a title index keeps

PER_POOL_SIGNALS = frozenset({"query_text", "query_sparse", "sparse_terms"})
_DROPPED = frozenset({"sparse", "title_lookup"})

# the threads that run lookups under a deadline (a store call cannot be interrupted: a late one
# finishes in the background, and at most this many run at once)
_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="mempursuit-read")


class _Late(Exception):
    """The second read went past its deadline."""


@dataclass(frozen=True)
class FollowRequest:
    """What a policy would read next (its :class:`~mempursuit_core.selectors.Selection`'s
    ``follow``): the store's titles that ``said`` names, up to ``limit``, less ``exclude``.

    Attributes
    ----------
    said : tuple of str
        The texts followed: the first picks' texts, then the question.
    exclude : frozenset of str
        Titles the pool already has.
    limit : int
        How many candidates to fetch at most.
    then : Selector
        What chooses again over the pool and the fetched candidates.
    cased : bool
        A text names a title only where it capitalises what the title does.
    max_named : int or None
        A title that this many of the pool's texts name is a weak link (a hub: a country, a
        common word), not followed; None: every title is.
    """

    said: tuple[str, ...]
    exclude: frozenset
    limit: int
    then: Any
    cased: bool = False
    max_named: int | None = None


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

    @classmethod
    def of(cls, items: Sequence[Any], vectors: Any, signals: Mapping[str, Any], *,
           native_scores: Any = None) -> "Fetched":
        """Fetched candidates with the per-candidate values of ``signals``: the adapter's own
        pool signals built for ``items`` (as for a pool; the per-pool ones, ``"sparse"`` and
        any lookup are left out).

        Parameters
        ----------
        items : sequence, length m
        vectors : array-like, shape (m, d)
        signals : mapping
            E.g. :func:`~mempursuit_core.signals.pool_signals` of the items' texts.
        """
        items = list(items)
        kept = {key: signals[key] for key in signals
                if key not in PER_POOL_SIGNALS and key not in _DROPPED}
        matrix = np.asarray(vectors, dtype=np.float32)
        matrix = matrix.reshape(len(items), -1) if items else matrix.reshape(0, 0)
        return cls(items, matrix, kept, native_scores)

    def rows(self, keep: Sequence[int]) -> "Fetched":
        """The candidates at positions ``keep``, in that order (per-candidate signals too)."""
        n, keep = len(self.items), list(keep)
        signals = {key: (_take(value, keep) if _per_candidate(value, n) else value)
                   for key, value in _used(self.signals)}
        return Fetched([self.items[i] for i in keep], np.asarray(self.vectors)[keep]
                       if keep else np.asarray(self.vectors)[:0], signals,
                       None if self.native_scores is None
                       else np.asarray(self.native_scores, dtype=np.float64)[keep])


def _used(signals: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """The fetched signals a widened pool reads: the per-pool ones (the pool keeps its own)
    and the dropped ones are left unread, so a lazy mapping never computes them."""
    for key in signals:
        if key not in PER_POOL_SIGNALS and key not in _DROPPED:
            yield key, signals[key]


def _per_candidate(value: Any, n: int) -> bool:
    if isinstance(value, np.ndarray):
        return value.ndim >= 1 and value.shape[0] == n
    return isinstance(value, (list, tuple)) and len(value) == n


def _take(value: Any, keep: list[int]) -> Any:
    return value[keep] if isinstance(value, np.ndarray) else [value[i] for i in keep]


def write_version(store: Any, methods: Iterable[str]) -> Callable[[], int]:
    """A counter of the writes made through ``store``'s own ``methods`` (wrapped once on the
    instance, shared by every reader of that store): a title index rebuilt when it changes
    follows a delete plus an add, or a title rewritten in place, at no cost per read.

    Returns
    -------
    callable
        ``version()``: how many calls of those methods have finished (0 where none could be
        wrapped: the index then follows the store's count and its age only).
    """
    counter = getattr(store, "_mempursuit_writes", None)
    if not isinstance(counter, list):
        counter = [0]
        try:
            object.__setattr__(store, "_mempursuit_writes", counter)
        except (AttributeError, TypeError):
            return lambda: 0
    for name in methods:
        method = getattr(store, name, None)
        if not callable(method) or getattr(method, "_mempursuit_counts", None) is counter:
            continue
        wrapped = _counting(method, counter)
        try:
            object.__setattr__(store, name, wrapped)
        except (AttributeError, TypeError):
            continue
    return lambda: counter[0]


def note_write(store: Any) -> None:
    """Count a write to ``store`` made where :func:`write_version` cannot see it (a wrapper's
    batch of operations): every title index of the store reads its titles again."""
    counter = getattr(store, "_mempursuit_writes", None)
    if isinstance(counter, list):
        counter[0] += 1


def _counting(method: Callable, counter: list) -> Callable:
    if inspect.iscoroutinefunction(method):
        @functools.wraps(method)
        async def awrapped(*args, **kwargs):
            try:
                return await method(*args, **kwargs)
            finally:
                counter[0] += 1
        wrapped: Any = awrapped
    else:
        @functools.wraps(method)
        def wrapped(*args, **kwargs):
            try:
                return method(*args, **kwargs)
            finally:
                counter[0] += 1
    wrapped._mempursuit_counts = counter
    return wrapped


@dataclass
class _Built:
    raw: list[str]  # the titles in NFC
    links: TitleLinks
    seen: Any
    at: float
    forms: dict[str, list[str]]  # NFC title -> the forms the store holds it in
    said: dict = field(default_factory=dict)  # (text, cased) -> what it names, longest first

    def named(self, text: str, cased: bool) -> list[int]:
        """The titles ``text`` (NFC) names, longer phrases first; kept per text, as a store's
        passages are followed again and again while its titles stay the same."""
        key = (text, cased)
        found = self.said.get(key)
        if found is None:
            phrases = self.links.phrases
            found = sorted(self.links.named(text, cased), key=lambda j: (-len(phrases[j]), j))
            if len(self.said) >= _SAID:
                self.said.clear()
            self.said[key] = found
        return found


class TitleIndex:
    """A store's titles, indexed to find which ones a text names: built once per store
    version and shared by every read of that store (and scope).

    Parameters
    ----------
    titles : callable
        ``titles()``: every title the store (within the scope) holds: an iterable of str;
        repeats and None are ignored. Called again whenever ``version()`` changes.
    version : callable, optional
        ``version()``: anything that changes when the store's contents do, cheap (a count plus
        :func:`write_version`); without it the titles are read once (and after ``max_age``).
    max_age : float or None
        Seconds after which the titles are read again even with an unchanged version (writers
        the version cannot see: another process); None: never.
    framework : str
        Named in the warnings.
    """

    def __init__(self, titles: Callable[[], Iterable[Any]], *,
                 version: Callable[[], Any] | None = None, max_age: float | None = 300.0,
                 framework: str = "the store"):
        self._titles, self._version, self.max_age = titles, version, max_age
        self.framework = framework
        self._built: _Built | None = None
        self._stale = False
        self._building: concurrent.futures.Future | None = None
        self._lock = threading.Lock()
        self.warned: set[str] = set()
        self.builds = 0

    def invalidate(self) -> None:
        """Read the titles again at the next read (titles named by the index came back
        empty: the store changed where the version cannot see); at most once a second."""
        built = self._built
        if built is not None and time.monotonic() - built.at > 1.0:
            self._stale = True

    def _seen(self) -> Any:
        return self._version() if self._version is not None else None

    def _fresh(self, built: _Built | None, seen: Any) -> bool:
        return (built is not None and not self._stale and built.seen == seen
                and (self.max_age is None or time.monotonic() - built.at < self.max_age))

    def _build(self, seen: Any) -> _Built:
        forms: dict[str, list[str]] = {}
        for t in self._titles():
            if isinstance(t, str) and t:
                held = forms.setdefault(nfc(t), [])
                if t not in held:
                    held.append(t)
        raw = list(forms)
        built = _Built(raw, TitleLinks(raw), seen, time.monotonic(), forms)
        self._built, self.builds = built, self.builds + 1
        return built

    def current(self, timeout: float | None = None) -> _Built:
        """The index for the store as it is now, rebuilt when its version (or age) says so.

        With ``timeout``, a rebuild runs in the background and is waited for ``timeout``
        seconds: past it, the index as last built stands (or :class:`_Late` is raised when
        there is none yet), and the rebuild finishes for a later read.
        """
        seen = self._seen()
        built = self._built
        if self._fresh(built, seen):
            return built
        with self._lock:
            self._stale = False
            if timeout is None:
                return self._build(seen)
            if self._building is None or self._building.done():
                self._building = _POOL.submit(self._build, seen)
            building = self._building
        try:
            return building.result(timeout=max(timeout, 0.0))
        except concurrent.futures.TimeoutError:
            if built is not None:
                return built
            raise _Late(f"reading the titles of {self.framework} took longer than "
                        f"{timeout:.3g} s (the second read starts once they are read)") from None

    def forms(self, titles: Iterable[str]) -> list[str]:
        """``titles`` (NFC, as :meth:`named` gives them) in every form the store holds them
        in (a store filters on the exact string)."""
        built = self._built
        held = built.forms if built is not None else {}
        return list(dict.fromkeys(f for t in titles for f in held.get(t, [t])))

    def named(self, texts: Sequence[str], exclude: Iterable[Any] = (), limit: int | None = None,
              timeout: float | None = None, cased: bool = False,
              keep: Callable[[str], bool] | None = None) -> list[str]:
        """The store's titles that ``texts`` name, without ``exclude`` (the titles the pool
        already has): each text's first name, then each text's second, ... (within a text,
        longer phrases first), so that every text is followed before any text twice.

        Returns
        -------
        list of str, at most ``limit``, in NFC
        """
        built = self.current(timeout)
        raw = built.raw
        skip = {nfc(t) for t in exclude if isinstance(t, str)}
        queues = []
        for text in texts:
            queues.append([raw[j] for j in built.named(nfc(str(text)), cased)
                           if raw[j] not in skip])
        if keep is not None:  # each queue without the titles ``keep`` refuses, judged lazily
            judged: dict[str, bool] = {}

            def kept(title: str) -> bool:
                if title not in judged:
                    judged[title] = keep(title)
                return judged[title]
            queues = [_Lazy(t for t in queue if kept(t)) for queue in queues]
        out: dict[str, None] = {}
        turn = 0
        while any(turn < len(queue) for queue in queues):
            for queue in queues:
                if turn < len(queue) and queue[turn] not in out:
                    out[queue[turn]] = None
                    if limit is not None and len(out) >= limit:
                        return list(out)
            turn += 1
        return list(out)

    def warn(self, kind: str, message: str) -> None:
        """One RuntimeWarning per store and kind of failure."""
        if kind not in self.warned:
            self.warned.add(kind)
            warnings.warn(f"mempursuit: {message}", RuntimeWarning, stacklevel=5)


def plain_match(scope: Mapping[str, Any] | None) -> Callable[[Mapping | None], bool] | None:
    """A check that a fetched item's metadata (or value) agrees with the plain ``field: value``
    conditions of a filter dict (``{"user": "A"}``): the scope check of
    :class:`TitleLookup` (``in_scope``) for stores whose filters are dicts. Operators
    (``"$and"``, Mem0's ``"AND"`` / ``"OR"`` / ``"NOT"``, ``{"$gt": 1}``) are left to the
    store; None where nothing is plain.
    """
    plain = {k: v for k, v in (scope or {}).items()
             if not str(k).startswith("$") and k not in ("AND", "OR", "NOT")
             and not isinstance(v, Mapping)}
    if not plain:
        return None

    def inside(meta: Mapping | None) -> bool:
        meta = meta if isinstance(meta, Mapping) else {}
        return all(k in meta and meta[k] == v for k, v in plain.items())
    return inside


class ScopedTitleIndexes:
    """One store's :class:`TitleIndex` per scope (a user, a namespace, a filter), the newest
    ``size`` kept: what every adapter with a second read keeps per store.

    Each index's version is the store's :func:`write_version` over ``writes`` and, where given,
    its cheap ``count()``, so every index follows every write made through the store's methods.

    Parameters
    ----------
    store : object
        The store whose write methods are counted.
    writes : iterable of str
        Its write method names (``"add"``, ``"delete"``, ...).
    count : callable, optional
        ``count()``: the store's item count (cheap), or None.
    framework : str
        Named in the warnings.
    size : int
        How many scopes' indexes are kept (the oldest used goes first).
    """

    def __init__(self, store: Any, writes: Iterable[str], *,
                 count: Callable[[], Any] | None = None, framework: str | None = None,
                 size: int = 64):
        written = write_version(store, writes)
        self._version = (written if count is None else (lambda: (count(), written())))
        self.framework = framework or type(store).__name__
        self.size = size
        self._indexes: dict[Hashable, TitleIndex] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._indexes)

    def index(self, scope: Any, titles: Callable[[], Iterable[Any]]) -> TitleIndex:
        """The index of ``scope`` (any value; unhashable ones by their repr), made with
        ``titles`` (the store's titles within that scope) the first time it is asked for."""
        try:
            key: Hashable = (scope, hash(scope))
        except TypeError:
            key = repr(scope)
        with self._lock:
            index = self._indexes.pop(key, None)
            if index is None:
                index = TitleIndex(titles, version=self._version, framework=self.framework)
            self._indexes[key] = index
            while len(self._indexes) > self.size:
                self._indexes.pop(next(iter(self._indexes)))
        return index


class _Lazy:
    """A list read from an iterator as far as it is looked at (``len`` reads one more)."""

    def __init__(self, items: Iterable[Any]):
        self._items, self._seen = iter(items), []

    def _upto(self, n: int) -> None:
        while len(self._seen) < n:
            try:
                self._seen.append(next(self._items))
            except StopIteration:
                break

    def __getitem__(self, i: int) -> Any:
        self._upto(i + 1)
        return self._seen[i]

    def __len__(self) -> int:  # only ``turn < len(queue)`` is asked: one more than seen will do
        self._upto(len(self._seen) + 1)
        return len(self._seen)


def _not_a_hub(texts: PoolTexts, most: int) -> Callable[[str], bool]:
    """``keep(title)``: whether fewer than ``most`` of ``texts`` name ``title`` (in any case).
    Only the texts that hold the title's rarest word (:meth:`PoolTexts.holding`) are searched
    for its phrase, and none when fewer than ``most`` hold it."""
    def keep(title: str) -> bool:
        phrase, rare = _phrase(title)
        if not phrase:
            return True
        holding = texts.holding(rare) if rare else range(len(texts))
        if len(holding) < most:
            return True
        seen = 0
        for j in holding:
            if _occurs(phrase, texts.lowered(j)):
                seen += 1
                if seen >= most:
                    return False
        return True
    return keep


class TitleLookup:
    """One read's second read: the store's :class:`TitleIndex` and a fetch inside the read's
    scope (the per-pool signal ``"title_lookup"`` an adapter hands over).

    Parameters
    ----------
    index : TitleIndex
        The store's titles (within the same scope as ``fetch``).
    fetch : callable
        ``fetch(titles, limit)``: the store's candidates whose title is one of ``titles``
        (exact titles as the store holds them), within the caller's scope, as a
        :class:`Fetched` with a ``"titles"`` signal; one round trip.
    key : callable, optional
        ``key(item)``: an item's identity in the store (a document id), to drop fetched
        candidates the pool already has; default the item itself where it is hashable.
    in_scope : callable, optional
        ``in_scope(item)``: False for an item outside the caller's scope (a store that ignored
        the filter); such items are dropped.
    timeout : float or None
        Seconds for the index and the fetch together (:data:`DEFAULT_FOLLOW_TIMEOUT`); None
        waits as long as the store takes.
    index_scoped : bool
        The index holds the titles of the fetch's scope (not of a wider store): a title it
        names that the store no longer has makes it read the titles again.
    """

    def __init__(self, index: TitleIndex, fetch: Callable[[list[str], int], Fetched], *,
                 key: Callable[[Any], Hashable] | None = None,
                 in_scope: Callable[[Any], bool] | None = None,
                 timeout: float | None = DEFAULT_FOLLOW_TIMEOUT, index_scoped: bool = True):
        if not isinstance(index, TitleIndex):
            raise TypeError(f"TitleLookup takes a TitleIndex, got {type(index).__name__}")
        self.index, self._fetch = index, fetch
        self.key, self.in_scope, self.timeout = key, in_scope, timeout
        self.index_scoped = index_scoped

    @property
    def framework(self) -> str:
        return self.index.framework

    def with_fetch(self, fetch: Callable[[list[str], int], Fetched]) -> "TitleLookup":
        """The same index, key, scope check and deadline with another ``fetch``."""
        return TitleLookup(self.index, fetch, key=self.key, in_scope=self.in_scope,
                           timeout=self.timeout, index_scoped=self.index_scoped)

    def mapped(self, to: Callable[[Any], Any], *, timeout: Any = "same") -> "TitleLookup":
        """The same second read whose fetched items are ``to(item)`` (the evaluation harness's
        unit ids), checked against the scope before they are mapped; ``timeout`` replaces the
        deadline when given."""
        def fetch(titles: list[str], limit: int) -> Fetched:
            found = self._fetch(titles, limit)
            if not isinstance(found, Fetched):
                raise TypeError(f"a title lookup must return Fetched, got "
                                f"{type(found).__name__}")
            if self.in_scope is not None:
                found = found.rows([i for i, x in enumerate(found.items) if self.in_scope(x)])
            return dataclasses.replace(found, items=[to(x) for x in found.items])
        return TitleLookup(self.index, fetch, index_scoped=self.index_scoped,
                           timeout=self.timeout if timeout == "same" else timeout)

    def _ids(self, items: Sequence[Any]) -> set:
        """``{_id(x) for x in items}``; hashable items without a key at once."""
        if self.key is None:
            try:
                return set(items)
            except TypeError:
                pass
        return {self._id(x) for x in items}

    def _id(self, item: Any) -> Hashable:
        key = self.key(item) if self.key is not None else item
        try:
            hash(key)
        except TypeError:
            return id(item)
        return key

    def read(self, request: FollowRequest, pool_items: Sequence[Any] | None, dim: int,
             texts: Sequence[Any] | PoolTexts | None = None) -> tuple[list[str], Fetched]:
        """The titles ``request`` names and their candidates, checked.

        Raises
        ------
        Exception
            Whatever the store raised, ``_Late`` past the deadline, ValueError for junk (rows
            of another dimension, non-finite or zero vectors, signals of another length).
        """
        start = time.monotonic()
        left = (lambda: None) if self.timeout is None else (
            lambda: self.timeout - (time.monotonic() - start))
        keep = None
        if request.max_named is not None and texts is not None:
            keep = _not_a_hub(texts if isinstance(texts, PoolTexts) else PoolTexts(texts),
                              request.max_named)
        names = self.index.named(request.said, exclude=request.exclude, limit=request.limit,
                                 timeout=left(), cased=request.cased, keep=keep)
        if not names:
            return names, Fetched([], np.zeros((0, dim)))
        asked = self.index.forms(names)
        if self.timeout is None:
            found = self._fetch(asked, request.limit)
        else:
            future = _POOL.submit(self._fetch, asked, request.limit)
            try:
                found = future.result(timeout=max(left(), 0.0))
            except concurrent.futures.TimeoutError:
                raise _Late(f"the fetch took longer than {self.timeout:.3g} s") from None
        return names, self._checked(found, names, request.limit, pool_items, dim)

    def _checked(self, found: Any, names: list[str], limit: int,
                 pool_items: Sequence[Any] | None, dim: int) -> Fetched:
        if not isinstance(found, Fetched):
            raise TypeError(f"a title lookup must return Fetched, got {type(found).__name__}")
        n = len(found.items)
        vectors = np.asarray(found.vectors, dtype=np.float64)
        if n and vectors.shape != (n, dim):
            raise ValueError(f"the fetched vectors have shape {vectors.shape} for {n} "
                             f"candidates of a pool of {dim}-d vectors")
        for key, value in _used(found.signals):
            if not _per_candidate(value, n):
                raise ValueError(f"the fetched signal {key!r} has "
                                 f"{len(value) if hasattr(value, '__len__') else '?'} entries "
                                 f"for {n} candidates")
        titles = found.signals.get("titles")
        if n and titles is None:
            raise ValueError("the fetched candidates carry no 'titles' signal")
        asked = set(names)
        seen = self._ids(pool_items) if pool_items is not None else set()
        keep = []
        for i, item in enumerate(found.items):
            title = titles[i]
            ident = self._id(item)
            if (not isinstance(title, str) or nfc(title) not in asked or ident in seen
                    or (self.in_scope is not None and not self.in_scope(item))):
                continue
            seen.add(ident)
            keep.append(i)
            if len(keep) == limit:
                break
        out = found.rows(keep)
        if len(out):
            checked_row_norms(np.asarray(out.vectors, dtype=np.float64))
        if n == 0 and self.index_scoped:
            self.index.invalidate()  # titles the index named that the store no longer has
        return out

    def warn(self, exc: BaseException) -> None:
        """One warning per store and kind: the second read failed and the first read's order
        stands."""
        if isinstance(exc, _Late):
            self.index.warn("late", f"the second read through {self.framework} was slower than "
                            f"its deadline ({exc}); the first read's order is used (raise "
                            "follow_timeout= to wait longer)")
        else:
            self.index.warn(type(exc).__name__,
                            f"the second read through {self.framework} failed "
                            f"({type(exc).__name__}: {exc}); the first read's order is used")
        logger.debug("second read failed", exc_info=exc)


def follow_pool(first: Any, pool: Any, k: int) -> tuple[Any, Any]:
    """The second read of one selection: the stage between the policy's first choice and the
    read's answer.

    Parameters
    ----------
    first : Selection
        The policy's choice over ``pool``; its ``follow`` (a :class:`FollowRequest`, or None)
        says what it would read next.
    pool : CandidatePool, length P
        The pool it chose from; the read's :class:`TitleLookup` is its
        ``signals["title_lookup"]``.
    k : int

    Returns
    -------
    selection : Selection
        ``first`` when there is nothing to read, nothing came back or anything failed (one
        warning); else the policy's choice over the pool followed by the fetched candidates
        (``extra``, positions ``P`` onwards), ``info["reorder"]["follow"]`` saying what was
        read (``{"named", "fetched", "ms"}``).
    pool : CandidatePool
        ``pool``, followed by the fetched candidates where there are any
        (:meth:`~mempursuit_core.readpath.CandidatePool.followed`): what ``selection``'s
        order indexes.
    """
    return _second_read(first, pool, k, pool.items)


def follow_up(first: Any, query: np.ndarray, candidates: np.ndarray, k: int, *,
              native_scores: np.ndarray | None = None, signals: Mapping | None = None,
              items: Sequence[Any] | None = None) -> Any:
    """:func:`follow_pool` on bare arrays: the selection only.

    Parameters
    ----------
    first : Selection
    query : ndarray, shape (d,)
    candidates : ndarray, shape (P, d)
    k : int
    native_scores : ndarray, shape (P,), optional
    signals : mapping, optional
    items : sequence, length P, optional
        The pool's items (fetched candidates the pool already has are dropped); without them
        none is.
    """
    M = np.asarray(candidates)
    scores = (None if native_scores is None
              else np.asarray(native_scores, dtype=np.float64).reshape(-1))
    pool = _Arrays(list(items) if items is not None else list(range(M.shape[0])), query, M,
                   scores, signals or {})
    return _second_read(first, pool, k, items)[0]


@dataclass
class _Arrays:
    """A pool as bare arrays, for :func:`follow_up`."""

    items: list
    query_vector: np.ndarray
    vectors: np.ndarray
    native_scores: np.ndarray | None
    signals: Mapping

    def followed(self, fetched: "Fetched") -> "_Arrays":
        return _Arrays(self.items + list(fetched.items), self.query_vector,
                       *widened(self.vectors, self.native_scores, self.signals, fetched))


def widened(vectors: np.ndarray, native_scores: np.ndarray | None, signals: Mapping,
            fetched: "Fetched") -> tuple[np.ndarray, np.ndarray | None, "PoolSignals"]:
    """A pool's vectors, native scores and signals followed by the fetched candidates.

    Parameters
    ----------
    vectors : ndarray, shape (P, d)
    native_scores : ndarray, shape (P,), or None
    signals : mapping
    fetched : Fetched, length m

    Returns
    -------
    vectors : ndarray, shape (P + m, d)
        In the pool's dtype.
    native_scores : ndarray, shape (P + m,), or None
        The fetched candidates' own scores, else scores below every pool candidate's.
    signals : PoolSignals
        :func:`extended_signals`.
    """
    m = len(fetched)
    scores = native_scores
    if scores is not None:
        more = fetched.native_scores
        if more is None:  # below every candidate of the first read
            low = float(scores.min()) if scores.size else 0.0
            more = low - 1.0 - np.arange(m, dtype=np.float64)
        scores = np.concatenate([scores, np.asarray(more, dtype=np.float64)])
    wider = np.concatenate([vectors, np.asarray(fetched.vectors, dtype=vectors.dtype)])
    return wider, scores, extended_signals(signals, len(vectors), fetched)


def _second_read(first: Any, pool: Any, k: int, known: Sequence[Any] | None
                 ) -> tuple[Any, Any]:
    request = getattr(first, "follow", None)
    signals = pool.signals
    if request is None or signals is None or "title_lookup" not in signals:
        return first, pool
    lookup = signals["title_lookup"]
    if not isinstance(lookup, TitleLookup):
        return first, pool
    t0 = time.perf_counter()
    try:
        texts = (pool_texts(signals, signals["texts"])  # the policy's, where it read them
                 if request.max_named is not None and "texts" in signals else None)
        names, fetched = lookup.read(request, known, pool.vectors.shape[1], texts)
        if not len(fetched):
            return first, pool
        wider = pool.followed(fetched)
        second = request.then.select(wider.query_vector, wider.vectors, k,
                                     native_scores=wider.native_scores, signals=wider.signals)
    except Exception as exc:  # noqa: BLE001 - any failure: the first read's order
        lookup.warn(exc)
        return first, pool
    info = dict(second.info)
    info["reorder"] = {**info.get("reorder", {}),
                       "follow": {"named": len(names), "fetched": len(fetched),
                                  "ms": 1000 * (time.perf_counter() - t0)}}
    return dataclasses.replace(second, info=info, extra=fetched, follow=None), wider


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
    return PoolSignals(producers, extends=(signals, P) if isinstance(signals, PoolSignals)
                       else None)
