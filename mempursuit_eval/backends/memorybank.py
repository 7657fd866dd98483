"""MemoryBank's retrieval stage for ``mempursuit eval --framework memorybank`` (a ``StoreBackend``).

* ``build``: one FAISS ``IndexFlatL2`` per group, as MemoryBank keeps one index per user. Each
  unit becomes one MemoryBank turn document, ``<turn prefix of its date><unit text>`` (the date is
  the unit's ``timestamp[:10]``, or its ``session_id`` without one), in MemoryBank's document order
  (dates in first-seen order, units in order within a date). Units are single messages here, not
  ``{query, response}`` pairs, so the speaker labels of the pair template are left out.
* ``pool``: MemoryBank's search, top-``size`` by squared L2, native order = nearest first,
  ``native_scores = -distance``; the pool's vectors are read back from the index.

The harness scores the chosen units themselves: MemoryBank's neighbour expansion and merging
(which :class:`mempursuit_memorybank.MemoryBankStore` applies after the seed choice) are not part
of this evaluation. Signals: ``dense`` (cosine), ``texts``, ``timestamps``, ``session_ids``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from mempursuit_eval.base import Embedder, MemoryUnit, Pool, checked_pool_size, group_entry
from mempursuit_eval.cache import encode_with_progress

from mempursuit_memorybank.documents import get_templates
from mempursuit_memorybank.store import import_faiss

__all__ = ["MemoryBankBackend"]


class _Group:
    __slots__ = ("index", "units")

    def __init__(self, index, units: list[MemoryUnit]):
        self.index = index
        self.units = units


class MemoryBankBackend:
    """MemoryBank's FAISS L2 retrieval over harness units.

    Parameters
    ----------
    language : {"en", "cn"}
        Which turn prefix the documents get.
    native : {"dense"}
        MemoryBank has one native order (L2 distance); accepted for the harness's option.
    """

    def __init__(self, language: str = "en", native: str = "dense"):
        if native != "dense":
            raise ValueError(f"MemoryBank's native order is its L2 search ('dense'), got {native!r}")
        self.templates = get_templates(language)
        self.name = "memorybank"
        self._groups: dict[str, _Group] = {}
        self._embedder: Embedder | None = None

    def document_text(self, unit: MemoryUnit) -> str:
        date = unit.timestamp[:10] if unit.timestamp else unit.session_id
        return self.templates.turn_prefix.format(date=date) + unit.text

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
            date = u.timestamp[:10] if u.timestamp else u.session_id
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
        start = 0
        for g, members in ordered.items():
            index = faiss.IndexFlatL2(vecs.shape[1])
            index.add(vecs[start : start + len(members)])
            self._groups[g] = _Group(index, members)
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
        members = [g.units[i] for i in ids]
        qn = q / (np.linalg.norm(q) or 1.0)
        norms = np.linalg.norm(vectors, axis=1)
        dense = (vectors @ qn) / np.where(norms > 0, norms, 1.0)
        return Pool(
            uids=[u.uid for u in members],
            vectors=vectors,
            query_vector=q,
            native_scores=-dist.astype(np.float64),
            signals={
                "dense": dense.astype(np.float64),
                "texts": [u.text for u in members],
                "query_text": query,
                "timestamps": [u.timestamp for u in members],
                "session_ids": [u.session_id for u in members],
            },
        )

    def close(self) -> None:
        self._groups = {}
        self._embedder = None
