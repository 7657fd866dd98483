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
from typing import Any, Callable, Sequence

import numpy as np

from mempursuit_eval.backends.framework_store import FrameworkStore
from mempursuit_eval.base import (Embedder, MemoryUnit, query_vector_for, read_manifest,
                                  write_manifest)

__all__ = ["HaystackBackend"]

_STORE = "haystack_store.json"


class HaystackBackend(FrameworkStore):
    """Haystack's in-memory document store and embedding retriever as an evaluation store, with
    the options of :class:`FrameworkStore` (only the retriever's own (dense cosine) order
    exists: ``native`` is ``"dense"`` or ``"haystack"``)."""

    framework, native_order = "haystack", "InMemoryEmbeddingRetriever's dense cosine search"
    loggers = ("haystack",)

    def _reset(self) -> None:
        self._store = self._ranker = None

    def _open(self, embedder: Embedder, store) -> None:
        from mempursuit_haystack import DEFAULT_METADATA_KEYS, MemPursuitRanker

        self._store, self._embedder = store, embedder
        # the adapter's pool function; policy="native": the harness applies the policies
        self._ranker = MemPursuitRanker(top_k=None, policy="native", strict=True,
                                        metadata_keys=dict(DEFAULT_METADATA_KEYS),
                                        document_store=store)

    def build(self, units: Sequence[MemoryUnit], *, embedder: Embedder, workdir: Path,
              progress: Callable[[int], None] | None = None) -> None:
        from haystack.document_stores.in_memory import InMemoryDocumentStore

        path = Path(workdir) / _STORE
        if path.exists():
            raise ValueError(f"{path} exists; use a fresh workdir")
        store = InMemoryDocumentStore(embedding_similarity_function="cosine",
                                      index=f"mempursuit-eval-{id(self)}")
        self._open(embedder, store)
        self._write_units(self._hold(units), embedder, progress)
        store.save_to_disk(str(path))
        write_manifest(workdir, self._groups)

    def _write_batch(self, group: str, units: list[MemoryUnit], vectors: np.ndarray) -> None:
        from haystack import Document

        self._store.write_documents([
            Document(id=u.uid, content=u.text, embedding=v.tolist(),
                     meta={"session_id": group, **({"title": u.title} if u.title else {})})
            for u, v in zip(units, vectors)])

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
        self._hold(units, groups)
        return True

    def _read(self, group: str, query: str, size: int, query_vector: np.ndarray | None):
        """The retriever's own top-``size`` within the group, pooled by the ranker."""
        from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever

        qv = query_vector_for(self._embedder, query, query_vector)
        scope = {"field": "meta.session_id", "operator": "==", "value": group}
        retriever = InMemoryEmbeddingRetriever(self._store, top_k=size, return_embedding=True,
                                               filters=scope)
        docs = retriever.run(query_embedding=qv.tolist())["documents"]
        return self._ranker.candidate_pool(query, docs, qv.tolist(), filters=scope)

    def _uid(self, doc: Any) -> str:
        return doc.id
