"""MemoryBank's retrieval stage for ``mempursuit eval --framework memorybank`` (a ``StoreBackend``).

* ``build``: one FAISS ``IndexFlatL2`` per group, as MemoryBank keeps one index per user. Each
  unit becomes one MemoryBank turn document, ``<turn prefix of its date><unit text>`` (the date is
  the unit's ``timestamp[:10]``, or its ``session_id`` without one), in MemoryBank's document order
  (dates in first-seen order, units in order within a date). Units are single messages here, not
  ``{query, response}`` pairs, so the speaker labels of the pair template are left out.
* ``pool``: MemoryBank's search, top-``size`` by squared L2, native order = nearest first,
  ``native_scores = -distance``; the pool's vectors are read back from the index, and the pool
  is built by the adapter's own :func:`mempursuit_memorybank.store.memorybank_pool` (the read
  path of ``MemoryBankStore.read``).

The harness scores the chosen units themselves: MemoryBank's neighbour expansion and merging
(which :class:`mempursuit_memorybank.MemoryBankStore` applies after the seed choice) are not part
of this evaluation. Signals: exactly the adapter's (``texts`` = the documents' texts,
``query_text``, ``timestamps`` and ``session_ids`` = the documents' dates, ``positions`` = index
order, ``dense``, tf-idf features); ``dataset_signals=True`` (``--dataset-signals``) puts the
benchmark's own session ids and speakers over them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from mempursuit_eval.base import (Embedder, MemoryUnit, Pool, checked_pool_size, group_entry,
                                  pool_from_candidates)
from mempursuit_eval.cache import encode_with_progress

from mempursuit_memorybank.documents import get_templates
from mempursuit_memorybank.store import import_faiss, memorybank_pool

__all__ = ["MemoryBankBackend"]


class _Group:
    __slots__ = ("index", "units", "texts", "dates")

    def __init__(self, index, units: list[MemoryUnit], texts: list[str], dates: list[str]):
        self.index = index
        self.units = units
        self.texts = texts
        self.dates = dates


class MemoryBankBackend:
    """MemoryBank's FAISS L2 retrieval over harness units.

    Parameters
    ----------
    language : {"en", "cn"}
        Which turn prefix the documents get.
    native : {"dense"}
        MemoryBank has one native order (L2 distance); accepted for the harness's option.
    dataset_signals : bool
        Put the benchmark's own session ids and speakers over the adapter's signals.
    """

    def __init__(self, language: str = "en", native: str = "dense", dataset_signals: bool = False):
        if native != "dense":
            raise ValueError(f"MemoryBank's native order is its L2 search ('dense'), got {native!r}")
        self.templates = get_templates(language)
        self.dataset_signals = bool(dataset_signals)
        self.name = "memorybank"
        self._groups: dict[str, _Group] = {}
        self._units: dict[str, MemoryUnit] = {}
        self._embedder: Embedder | None = None

    @staticmethod
    def document_date(unit: MemoryUnit) -> str:
        return unit.timestamp[:10] if unit.timestamp else unit.session_id

    def document_text(self, unit: MemoryUnit) -> str:
        return self.templates.turn_prefix.format(date=self.document_date(unit)) + unit.text

    def build(self, units: Sequence[MemoryUnit], *, embedder: Embedder, workdir: Path | None = None,
              progress: Callable[[int], None] | None = None) -> None:
        """Embed every unit's document and index it in its group's ``IndexFlatL2``."""
        faiss = import_faiss()
        by_group: dict[str, dict[str, list[MemoryUnit]]] = {}
        seen: set[str] = set()
        for u in units:
            if u.uid in seen:
                raise ValueError(f"duplicate unit uid {u.uid!r}")
            seen.add(u.uid)
            date = self.document_date(u)
            by_group.setdefault(u.group, {}).setdefault(date, []).append(u)
        ordered = {g: [u for day in dates.values() for u in day] for g, dates in by_group.items()}
        flat = [u for g in ordered.values() for u in g]
        texts = [self.document_text(u).replace("\n", " ") for u in flat]
        vecs = np.ascontiguousarray(encode_with_progress(embedder, texts, progress), dtype=np.float32)
        if vecs.ndim != 2 or vecs.shape[0] != len(flat):
            raise ValueError(f"embedder returned shape {vecs.shape} for {len(flat)} units")
        if not np.isfinite(vecs).all():
            raise ValueError("embedder returned non-finite values")
        self._groups = {}
        self._units = {u.uid: u for u in flat}
        start = 0
        for g, members in ordered.items():
            index = faiss.IndexFlatL2(vecs.shape[1])
            index.add(vecs[start : start + len(members)])
            self._groups[g] = _Group(index, members, [self.document_text(u) for u in members],
                                     [self.document_date(u) for u in members])
            start += len(members)
        self._embedder = embedder

    def pool(self, group: str, query: str, size: int, *, query_vector: np.ndarray | None = None) -> Pool:
        """The top ``size`` units of ``group`` by squared L2, nearest first."""
        size = checked_pool_size(self._embedder is not None, size)
        g = group_entry(self._groups, group)
        q = (np.asarray(query_vector, dtype=np.float32) if query_vector is not None
             else np.asarray(self._embedder.encode([query.replace("\n", " ")])[0], dtype=np.float32))
        dist, ids = g.index.search(np.ascontiguousarray(q.reshape(1, -1)), min(size, g.index.ntotal))
        ids = ids[0][ids[0] >= 0]
        dist = dist[0][: len(ids)]
        vectors = np.asarray(g.index.reconstruct_batch(ids.astype(np.int64)), dtype=np.float32)
        pool = memorybank_pool(ids, dist, vectors, g.texts, g.dates, q, query)
        return pool_from_candidates(pool, [g.units[i].uid for i in pool.items],
                                    units=self._units,
                                    dataset_signals=self.dataset_signals)

    def close(self) -> None:
        self._groups = {}
        self._embedder = None
