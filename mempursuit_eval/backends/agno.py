"""Agno's ``LanceDb`` vector db read as ``Knowledge.search`` reads it, for
``mempursuit eval --framework agno`` (a ``StoreBackend``).

Needs the ``[agno]`` extra.

* ``build``: one LanceDB table per group (one user's ``Knowledge``: the LoCoMo conversation, the
  LongMemEval haystack) in one local LanceDB folder; every unit is written by the vector db's
  own ``insert`` as one ``Document`` (``content`` = its text, ``embedding`` = the harness's
  embedder's vector, as ``Knowledge.insert`` would set it with that embedder), with
  ``meta_data = {"uid": uid}`` (how a pool maps back to the harness's units; no signal reads it)
  plus ``{"title": title}`` for a unit with a title. Timestamps, speakers and the benchmark's own
  sessions are not written (as for Haystack and LlamaIndex), and no ``content_id`` / ``name``,
  so the policies get the texts only.
* ``pool``: the read ``Knowledge.search`` makes with the reranker: ``LanceDb.search(query,
  limit=size)`` (dense cosine, exact: no index; the query embedded by the vector db's embedder,
  the harness's model; LanceDb drops repeated texts), whose documents go to
  :meth:`mempursuit_agno.MemPursuitReranker.candidate_pool`, the pool-building function the
  reranker itself uses: the documents' stored embeddings and only the signals the adapter hands
  over; ``dataset_signals`` (``--dataset-signals``) puts the benchmark's own session ids and
  speakers over them.
* ``load_existing``: a finished build is reopened from the cache (the LanceDB folder and
  ``units.json``), so a rerun reads the same store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mempursuit_eval.backends.framework_store import TableStore, harness_model
from mempursuit_eval.base import Embedder, MemoryUnit, query_vector_for

__all__ = ["AgnoBackend"]


class AgnoBackend(TableStore):
    """Agno's LanceDB vector db, one table per group, as an evaluation store, with the options
    of :class:`FrameworkStore` (only the vector db's own (dense cosine) order exists:
    ``native`` is ``"dense"`` or ``"agno"``)."""

    framework, native_order = "agno", "LanceDb's dense cosine search"
    folder = "lancedb"
    loggers = ("agno",)

    def _reset(self) -> None:
        self._tables: dict[str, str] = {}
        self._dbs: dict[str, Any] = {}
        self._reranker = self._uri = None

    def _open(self, uri: Path, tables: dict[str, str]) -> None:
        from mempursuit_agno import DEFAULT_METADATA_KEYS, MemPursuitEmbedder, MemPursuitReranker

        embedder = self._embedder
        self._uri, self._tables = str(uri), dict(tables)
        dim = getattr(embedder, "dim", None) or len(embedder.encode(["dimension"])[0])
        # what the vector db embeds queries with
        self._agno_embedder = harness_model(MemPursuitEmbedder, embedder, model="harness",
                                            dimensions=int(dim))
        self._dbs = {}
        # the adapter's pool function; policy="native": the harness applies the policies
        self._reranker = MemPursuitReranker(policy="native", strict=True,
                                            metadata_keys=dict(DEFAULT_METADATA_KEYS))

    def _db(self, group: str):
        from agno.vectordb.lancedb import LanceDb

        if group not in self._dbs:
            self._dbs[group] = LanceDb(table_name=self._tables[group], uri=self._uri,
                                       embedder=self._agno_embedder)
        return self._dbs[group]

    def _count(self, group: str) -> int:
        return self._db(group).get_count()

    def _write_batch(self, group: str, units: list[MemoryUnit], vectors: np.ndarray) -> None:
        from agno.knowledge.document import Document

        db = self._db(group)
        db.create()  # the group's table, before its first batch (then a no-op)
        db.insert(f"mempursuit-eval-{group}", [
            Document(content=u.text, embedding=v.tolist(),
                     meta_data={"uid": u.uid, **({"title": u.title} if u.title else {})})
            for u, v in zip(units, vectors)])

    def _read(self, group: str, query: str, size: int, query_vector: np.ndarray | None):
        qv = query_vector_for(self._embedder, query, query_vector)
        docs = self._db(group).search(query, limit=size)
        return self._reranker.candidate_pool(query, docs, qv.tolist())

    def _uid(self, doc: Any) -> str:
        return doc.meta_data["uid"]
