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
from typing import Any, Callable, Sequence

import numpy as np

from mempursuit_eval.base import (Embedder, MemoryUnit, Pool, checked_pool_size, embedded_batches,
                                  group_entry, pool_from_candidates, query_vector_for,
                                  read_manifest, units_by_group, write_manifest)

__all__ = ["AgnoBackend"]

_LANCE = "lancedb"


def _agno_embedder(embedder: Embedder, dim: int) -> Any:
    """The harness's embedder as an Agno ``Embedder`` (what the vector db embeds queries with)."""
    from mempursuit_agno import MemPursuitEmbedder

    class HarnessEmbedder(MemPursuitEmbedder):
        def _model(self):
            return embedder

    return HarnessEmbedder(model="harness", dimensions=dim)


class AgnoBackend:
    """Agno's LanceDB vector db, one table per group, as an evaluation store.

    Parameters
    ----------
    batch_size : int
        Units embedded and written per batch.
    native : str, optional
        Only the vector db's own (dense cosine) order exists: ``"dense"`` or ``"agno"``.
    dataset_signals : bool
        Put the benchmark's own ``session_ids`` and ``speakers`` over the adapter's
        (``--dataset-signals``).
    """

    loggers = ("agno",)

    def __init__(self, *, batch_size: int = 256, native: str | None = None,
                 dataset_signals: bool = False):
        if native not in (None, "dense", "agno"):
            raise ValueError("the agno backend's native order is LanceDb's dense cosine search; "
                             f"got native={native!r}")
        self.batch_size = int(batch_size)
        self.dataset_signals = bool(dataset_signals)
        self.name = "agno"
        self._units: dict[str, MemoryUnit] = {}
        self._groups: dict[str, int] = {}
        self._tables: dict[str, str] = {}
        self._dbs: dict[str, Any] = {}
        self._embedder: Embedder | None = None
        self._reranker = None
        self._uri: str | None = None

    def _open(self, embedder: Embedder, uri: Path, tables: dict[str, str]) -> None:
        from mempursuit_agno import DEFAULT_METADATA_KEYS, MemPursuitReranker

        self._embedder, self._uri, self._tables = embedder, str(uri), dict(tables)
        dim = getattr(embedder, "dim", None) or len(embedder.encode(["dimension"])[0])
        self._agno_embedder = _agno_embedder(embedder, int(dim))
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

    def build(self, units: Sequence[MemoryUnit], *, embedder: Embedder, workdir: Path,
              progress: Callable[[int], None] | None = None) -> None:
        from agno.knowledge.document import Document

        uri = Path(workdir) / _LANCE
        if uri.exists():
            raise ValueError(f"{uri} exists; use a fresh workdir")
        groups = units_by_group(units)
        self._open(embedder, uri, {g: f"group_{i}" for i, g in enumerate(groups)})
        self._units = {u.uid: u for u in units}
        for group, members in groups.items():
            self._groups[group] = len(members)
            db = self._db(group)
            db.create()
            for chunk, vectors in embedded_batches(members, embedder, self.batch_size, progress):
                db.insert(f"mempursuit-eval-{group}", [
                    Document(content=u.text, embedding=v.tolist(),
                             meta_data={"uid": u.uid, **({"title": u.title} if u.title else {})})
                    for u, v in zip(chunk, vectors)])
        write_manifest(workdir, self._groups, tables=self._tables)

    def load_existing(self, units: Sequence[MemoryUnit], *, embedder: Embedder,
                      workdir: Path) -> bool:
        """Reopen a store that ``build`` wrote into ``workdir`` (True when reused; False when
        its files are missing, unreadable or hold other units)."""
        uri, saved = Path(workdir) / _LANCE, read_manifest(workdir, units, "tables")
        if saved is None or not uri.is_dir():
            return False
        groups, tables = saved
        try:
            self._open(embedder, uri, tables)
            if any(self._db(g).get_count() != n for g, n in groups.items()):
                return False
        except Exception:  # an unreadable store is rebuilt
            return False
        self._groups, self._units = groups, {u.uid: u for u in units}
        return True

    def pool(self, group: str, query: str, size: int, *,
             query_vector: np.ndarray | None = None) -> Pool:
        """The vector db's own top-``size`` for ``query`` within ``group``, as the adapter's
        pool."""
        size = checked_pool_size(self._reranker is not None, size)
        group_entry(self._groups, group)
        qv = query_vector_for(self._embedder, query, query_vector)
        docs = self._db(group).search(query, limit=size)
        pool = self._reranker.candidate_pool(query, docs, qv.tolist())
        return pool_from_candidates(pool, [d.meta_data["uid"] for d in pool.items],
                                    units=self._units, dataset_signals=self.dataset_signals)

    def close(self) -> None:
        self._dbs = {}
        self._reranker = None
