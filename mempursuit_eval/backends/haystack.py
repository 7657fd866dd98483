"""Haystack's ``InMemoryDocumentStore`` and ``InMemoryEmbeddingRetriever``, for
``mempursuit eval --framework haystack`` (a ``StoreBackend``).

Needs the ``[haystack]`` extra.

* ``build``: every unit is written by the store's own ``write_documents`` as one ``Document``
  (``id`` = the unit's uid, ``content`` = its text, ``embedding`` = the harness's embedder's
  vector, as a ``DocumentEmbedder`` would set it), with ``meta = {"session_id": group}`` (the
  scope a pipeline filters one user's memories by: the LoCoMo conversation, the LongMemEval
  haystack), plus ``{"title": title}`` for a unit with a title (the multi-hop document sets'
  paragraphs, as Haystack's converters keep a document's title). Timestamps, speakers and the
  benchmark's own sessions are not written: the LlamaIndex store keeps the same fields, so the
  two read paths see the same signals.
* ``pool``: the retriever's own read (``InMemoryEmbeddingRetriever.run`` with ``top_k = size``,
  ``return_embedding=True`` and the ``meta.session_id`` filter, cosine similarity), whose
  documents go to :meth:`mempursuit_haystack.MemPursuitRanker.candidate_pool`, the
  pool-building function the ranker itself uses: the documents' stored embeddings, the
  retriever's scores as the native scores, and only the signals the adapter hands over (texts,
  ``session_ids`` from the meta, ``titles`` where the documents have one, and the ranker's
  second read: ``filter_documents`` on ``meta.title`` within the group); ``dataset_signals``
  (``--dataset-signals``) puts the benchmark's own session ids and speakers over them.
* ``load_existing``: a finished build is reopened from the cache (the store's own
  ``save_to_disk`` JSON and ``units.json``), so a rerun reads the same store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from mempursuit_eval.base import (Embedder, MemoryUnit, Pool, checked_pool_size, embedded_batches,
                                  group_entry, pool_from_candidates, query_vector_for,
                                  read_manifest, units_by_group, write_manifest)

__all__ = ["HaystackBackend"]

_STORE = "haystack_store.json"


class HaystackBackend:
    """Haystack's in-memory document store and embedding retriever as an evaluation store.

    Parameters
    ----------
    batch_size : int
        Units embedded and written per batch.
    native : str, optional
        Only the retriever's own (dense cosine) order exists: ``"dense"`` or ``"haystack"``.
    dataset_signals : bool
        Put the benchmark's own ``session_ids`` and ``speakers`` over the adapter's
        (``--dataset-signals``).
    """

    loggers = ("haystack",)

    def __init__(self, *, batch_size: int = 256, native: str | None = None,
                 dataset_signals: bool = False):
        if native not in (None, "dense", "haystack"):
            raise ValueError("the haystack backend's native order is InMemoryEmbeddingRetriever's "
                             f"dense cosine search; got native={native!r}")
        self.batch_size = int(batch_size)
        self.dataset_signals = bool(dataset_signals)
        self.name = "haystack"
        self._units: dict[str, MemoryUnit] = {}
        self._groups: dict[str, int] = {}
        self._store = None
        self._embedder: Embedder | None = None
        self._ranker = None

    def _open(self, embedder: Embedder, store) -> None:
        from mempursuit_haystack import DEFAULT_METADATA_KEYS, MemPursuitRanker

        self._store, self._embedder = store, embedder
        # the adapter's pool function; policy="native": the harness applies the policies
        self._ranker = MemPursuitRanker(top_k=None, policy="native", strict=True,
                                        metadata_keys=dict(DEFAULT_METADATA_KEYS),
                                        document_store=store)

    def build(self, units: Sequence[MemoryUnit], *, embedder: Embedder, workdir: Path,
              progress: Callable[[int], None] | None = None) -> None:
        from haystack import Document
        from haystack.document_stores.in_memory import InMemoryDocumentStore

        path = Path(workdir) / _STORE
        if path.exists():
            raise ValueError(f"{path} exists; use a fresh workdir")
        store = InMemoryDocumentStore(embedding_similarity_function="cosine",
                                      index=f"mempursuit-eval-{id(self)}")
        self._open(embedder, store)
        self._units = {u.uid: u for u in units}
        for group, members in units_by_group(units).items():
            self._groups[group] = len(members)
            for chunk, vectors in embedded_batches(members, embedder, self.batch_size, progress):
                store.write_documents([
                    Document(id=u.uid, content=u.text, embedding=v.tolist(),
                             meta={"session_id": group, **({"title": u.title} if u.title
                                                           else {})})
                    for u, v in zip(chunk, vectors)])
        store.save_to_disk(str(path))
        write_manifest(workdir, self._groups)

    def load_existing(self, units: Sequence[MemoryUnit], *, embedder: Embedder,
                      workdir: Path) -> bool:
        """Reopen a store that ``build`` wrote into ``workdir`` (True when reused; False when
        its files are missing, unreadable or hold other units)."""
        from haystack.document_stores.in_memory import InMemoryDocumentStore

        path, saved = Path(workdir) / _STORE, read_manifest(workdir, units)
        if saved is None or not path.is_file():
            return False
        (groups,) = saved
        try:
            store = InMemoryDocumentStore.load_from_disk(str(path))
        except Exception:  # an unreadable file is rebuilt
            return False
        if {d.id for d in store.filter_documents()} != {u.uid for u in units}:
            return False
        self._open(embedder, store)
        self._groups, self._units = groups, {u.uid: u for u in units}
        return True

    def pool(self, group: str, query: str, size: int, *,
             query_vector: np.ndarray | None = None) -> Pool:
        """The retriever's own top-``size`` for ``query`` within ``group``, as the adapter's
        pool."""
        from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever

        size = checked_pool_size(self._store is not None, size)
        group_entry(self._groups, group)
        qv = query_vector_for(self._embedder, query, query_vector)
        scope = {"field": "meta.session_id", "operator": "==", "value": group}
        retriever = InMemoryEmbeddingRetriever(self._store, top_k=size, return_embedding=True,
                                               filters=scope)
        docs = retriever.run(query_embedding=qv.tolist())["documents"]
        pool = self._ranker.candidate_pool(query, docs, qv.tolist(), filters=scope)
        return pool_from_candidates(pool, [d.id for d in pool.items], units=self._units,
                                    dataset_signals=self.dataset_signals,
                                    uid_of=lambda d: d.id)

    def close(self) -> None:
        self._store = None
