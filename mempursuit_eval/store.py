"""The built-in plain store: exact search over numpy arrays, one matrix per group, in-process.

Native orders (``native=``):

* ``"dense"`` (default): cosine similarity descending; ties by insertion order.
* ``"hybrid"``: dense cosine and BM25, each min-max normalised over the group, added with equal
  weights (the shape of Mem0's combined semantic + keyword score); ties by insertion order.

Every pool carries lazily computed signals for read policies (:class:`PoolSignals`):
``"dense"`` (P,) cosine, ``"bm25"`` (P,) raw BM25, ``"sparse"`` (P, m) tf-idf rows,
``"query_sparse"`` (m,), ``"sparse_terms"`` (m column terms), ``"timestamps"`` and
``"session_ids"`` (lists, length P), ``"positions"`` (P,) each unit's index in its group's
write order, ``"texts"`` (list, length P), ``"query_text"``, ``"titles"`` (list, length P:
each unit's :attr:`~mempursuit_eval.base.MemoryUnit.title`, a str or None; only in groups where
some unit has a title, so dialogue benchmarks' pools have no such key), and for the
hybrid order ``"lexical"`` (the same BM25: the store's own keyword channel, which a dense-only
store does not have). Nothing is computed unless a policy reads it.
"""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from mempursuit_core.follow import Fetched, TitleIndex, TitleLookup
from mempursuit_core.signals import PoolSignals, minmax
from .base import Embedder, MemoryUnit, Pool, checked_pool_size, group_entry
from .cache import encode_with_progress
from mempursuit_core.lexical import LexicalIndex

__all__ = ["PlainStore", "PoolSignals", "NATIVE_ORDERS", "minmax"]

NATIVE_ORDERS = ("dense", "hybrid")


class _Group:
    __slots__ = ("rows", "vectors", "texts", "lexical", "uids", "titles", "lookup", "by_title")

    def __init__(self, rows: np.ndarray, vectors: np.ndarray, texts: list[str], uids: list[str],
                 titles: list[str | None] | None = None):
        self.rows = rows
        self.vectors = vectors
        self.texts = texts
        self.uids = uids
        # each unit's title, or None when no unit of the group has one (no ``titles`` signal)
        self.titles = titles if titles is not None and any(t is not None for t in titles) else None
        self.lexical: LexicalIndex | None = None
        self.lookup: TitleIndex | None = None  # the second read's title index, built on use
        self.by_title: dict[str, list[int]] | None = None


class PlainStore:
    """Exact cosine (or hybrid) search per group over float32 numpy arrays.

    Parameters
    ----------
    native : {"dense", "hybrid"}
        The native order (see the module docstring).
    signals : bool
        Attach :class:`PoolSignals` to every pool (lazy: free unless read).
    k1, b : float
        BM25 parameters.
    """

    option_constraints = {"native": NATIVE_ORDERS}

    def __init__(self, native: str = "dense", *, signals: bool = True, k1: float = 1.2,
                 b: float = 0.75):
        if native not in NATIVE_ORDERS:
            raise ValueError(f"native order must be one of {NATIVE_ORDERS}, got {native!r}")
        self.native = native
        self.name = "plain" if native == "dense" else f"plain-{native}"
        self.with_signals = bool(signals)
        self.k1, self.b = float(k1), float(b)
        self._embedder: Embedder | None = None
        self._groups: dict[str, _Group] = {}
        self._units: list[MemoryUnit] = []

    # -- StoreBackend ---------------------------------------------------------------------------
    def build(self, units: Sequence[MemoryUnit], *, embedder: Embedder, workdir: Path | None = None,
              progress: Callable[[int], None] | None = None) -> None:
        """Embed every unit (through ``embedder``) and index it by group; ``workdir`` is unused."""
        units = list(units)
        seen: set[str] = set()
        for u in units:
            if u.uid in seen:
                raise ValueError(f"duplicate unit uid {u.uid!r}")
            seen.add(u.uid)
        texts = [u.text for u in units]
        vecs = encode_with_progress(embedder, texts, progress)
        vecs = np.ascontiguousarray(vecs, dtype=np.float32)
        if vecs.shape[0] != len(units):
            raise ValueError(f"embedder returned {vecs.shape[0]} vectors for {len(units)} units")
        bad = ~np.isfinite(vecs).all(axis=1) | (np.linalg.norm(vecs, axis=1) == 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"embedder gave a zero or non-finite vector for unit {units[i].uid!r}")
        by_group: dict[str, list[int]] = {}
        for i, u in enumerate(units):
            by_group.setdefault(u.group, []).append(i)
        self._groups = {}
        for g, rows in by_group.items():
            r = np.asarray(rows, dtype=np.int64)
            self._groups[g] = _Group(r, np.ascontiguousarray(vecs[r]), [texts[i] for i in rows],
                                     [units[i].uid for i in rows],
                                     [units[i].title for i in rows])
        self._units = units
        self._embedder = embedder

    def _lexical(self, g: _Group) -> LexicalIndex:
        if g.lexical is None:
            g.lexical = LexicalIndex(g.texts, k1=self.k1, b=self.b)
        return g.lexical

    def groups(self) -> list[str]:
        return list(self._groups)

    def pool(self, group: str, query: str, size: int, *,
             query_vector: np.ndarray | None = None) -> Pool:
        """The top ``size`` units of ``group`` for ``query`` in native order.

        ``query_vector`` (shape ``(d,)``) skips embedding the query.
        """
        size = checked_pool_size(self._embedder is not None, size)
        g = group_entry(self._groups, group)
        q = (np.asarray(query_vector, dtype=np.float32) if query_vector is not None
             else np.asarray(self._embedder.encode([query])[0], dtype=np.float32))
        dense = g.vectors @ q
        bm25_all: np.ndarray | None = None
        if self.native == "hybrid":
            bm25_all = self._lexical(g).bm25(query)
            scores = minmax(dense) + minmax(bm25_all)
        else:
            scores = dense.astype(np.float64)
        order = np.argsort(-scores, kind="stable")[:size]
        pool = Pool(
            items=[g.uids[i] for i in order],
            vectors=g.vectors[order],
            query_vector=q,
            native_scores=scores[order],
        )
        if self.with_signals:
            pool.signals = self._signals(g, order, query, dense, bm25_all)
            if g.titles is not None:
                pool.signals = pool.signals.overlay(
                    {"title_lookup": self._lookup(g, query, dense, bm25_all, scores)})
        return pool

    def _lookup(self, g: _Group, query: str, dense: np.ndarray, bm25_all: np.ndarray | None,
                scores: np.ndarray) -> TitleLookup:
        """The second read of one pool: the group's titles, and its units of a few titles with
        this query's scores and signals."""
        if g.lookup is None:
            titles = g.titles
            g.lookup = TitleIndex(lambda: titles, max_age=None, framework="the plain store")
            g.by_title = {}
            for i, t in enumerate(titles):
                if t is not None:
                    g.by_title.setdefault(t, []).append(i)

        units = self._units  # the pool's store as it was read (a fetch may come later)

        def fetch(titles: list[str], limit: int) -> Fetched:
            rows = [i for t in titles for i in g.by_title.get(t, ())][:limit]
            order = np.asarray(rows, dtype=np.int64)
            return Fetched([g.uids[i] for i in rows], g.vectors[order],
                           self._signals(g, order, query, dense, bm25_all, units), scores[order])
        return TitleLookup(g.lookup, fetch, timeout=None)

    def _signals(self, g: _Group, order: np.ndarray, query: str, dense: np.ndarray,
                 bm25_all: np.ndarray | None, units: list | None = None) -> PoolSignals:
        state: dict[str, Any] = {}

        def bm25():
            full = bm25_all if bm25_all is not None else self._lexical(g).bm25(query)
            return full[order]

        def tfidf():
            if "tfidf" not in state:
                state["tfidf"] = self._lexical(g).tfidf(order, query)
            return state["tfidf"]

        units = self._units if units is None else units
        rows = order.tolist()  # list indexing by Python ints: several times faster

        def of_units(name: str) -> Callable[[], list]:
            get = operator.attrgetter(name)
            return lambda: [get(units[r]) for r in np.asarray(g.rows)[rows].tolist()]
        native_lexical = {"lexical": bm25} if self.native == "hybrid" else {}
        # documents only: a group without titles (dialogue) gets no key, as before titles existed
        titled = ({"titles": lambda: [g.titles[i] for i in rows]} if g.titles is not None
                  else {})
        return PoolSignals({
            "dense": lambda: dense[order].astype(np.float64),
            "bm25": bm25,
            **native_lexical,
            "query_text": lambda: query,
            "sparse": lambda: tfidf()[0],
            "query_sparse": lambda: tfidf()[1],
            "sparse_terms": lambda: tfidf()[2],
            "timestamps": of_units("timestamp"),
            "session_ids": of_units("session_id"),
            "speakers": of_units("speaker"),
            "positions": lambda: order.astype(np.int64),
            "texts": lambda: [g.texts[i] for i in rows],
            **titled,
        })

    def close(self) -> None:
        self._groups = {}
        self._units = []
        self._embedder = None

    def __repr__(self) -> str:
        return f"<PlainStore native={self.native!r} groups={len(self._groups)}>"
