"""CrewAI's unified ``Memory`` over its ``LanceDBStorage``, read as
``MemPursuitMemory.recall(depth="shallow")`` reads it, for ``mempursuit eval --framework crewai``
(a ``StoreBackend``).

Needs the ``[crewai]`` extra.

* ``build``: one ``LanceDBStorage`` table per group (one user's memory: the LoCoMo conversation,
  the LongMemEval haystack) in one local LanceDB folder. Every unit is written by the storage's
  own ``save`` as one ``MemoryRecord``: the row ``Memory.remember(text, scope="/",
  categories=[], importance=0.5, metadata=...)`` writes without its LLM (``content`` = the text,
  ``embedding`` = the harness's vector), in batches rather than one encoding flow per turn (whose
  consolidation step would call an LLM on a near-exact repeat). The metadata carries the unit's
  ``speaker``, ``timestamp`` (the session's date) and ``session_id``, as an application
  remembering a conversation would pass them, plus ``{"uid": uid}`` (how a pool maps back to the
  harness's units; no signal reads it) and a ``title`` for a unit with one.
* ``pool``: :meth:`mempursuit_crewai.MemPursuitMemory.candidate_pool`, the pool each search of a
  ``recall`` hands the policy: the storage's own ``search(query_embedding, limit=size)`` (exact
  L2 over LanceDB, no index; CrewAI's score ``1 / (1 + distance)``) with the records' stored
  embeddings and the signals the adapter reads from their metadata; ``dataset_signals``
  (``--dataset-signals``) puts the benchmark's own session ids and speakers over them.
  CrewAI's recency / importance scoring, which orders the ``K`` a recall returns, does not change
  which ``K`` they are (the coverage measured here).
* ``load_existing``: a finished build is reopened from the cache (the LanceDB folder and
  ``units.json``), so a rerun reads the same store.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from mempursuit_eval.base import (Embedder, MemoryUnit, Pool, checked_pool_size, embedded_batches,
                                  group_entry, pool_from_candidates, query_vector_for,
                                  read_manifest, units_by_group, write_manifest)

__all__ = ["CrewAIBackend"]

_LANCE = "lancedb"


def _crewai_embedder(embedder: Embedder) -> Any:
    """The harness's embedder as CrewAI's embedding callable."""
    from mempursuit_crewai import MemPursuitEmbedder

    class HarnessEmbedder(MemPursuitEmbedder):
        def _model(self):
            return embedder

    return HarnessEmbedder(model="harness")


class CrewAIBackend:
    """CrewAI's LanceDB storage, one table per group, as an evaluation store.

    Parameters
    ----------
    batch_size : int
        Units embedded and written per batch.
    native : str, optional
        Only the storage's own (dense L2) order exists: ``"dense"`` or ``"crewai"``.
    dataset_signals : bool
        Put the benchmark's own ``session_ids`` and ``speakers`` over the adapter's
        (``--dataset-signals``).
    """

    loggers = ("crewai", "lancedb")

    def __init__(self, *, batch_size: int = 256, native: str | None = None,
                 dataset_signals: bool = False):
        if native not in (None, "dense", "crewai"):
            raise ValueError("the crewai backend's native order is LanceDBStorage's dense "
                             f"search; got native={native!r}")
        os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # before importing crewai
        os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")  # a save waits out its timeout
        self.batch_size = int(batch_size)
        self.dataset_signals = bool(dataset_signals)
        self.name = "crewai"
        self._units: dict[str, MemoryUnit] = {}
        self._groups: dict[str, int] = {}
        self._tables: dict[str, str] = {}
        self._memories: dict[str, Any] = {}
        self._embedder: Embedder | None = None
        self._path: Path | None = None

    def _open(self, embedder: Embedder, path: Path, tables: dict[str, str]) -> None:
        self._embedder, self._path, self._tables = embedder, Path(path), dict(tables)
        self._crewai_embedder = _crewai_embedder(embedder)
        self._memories = {}

    def _memory(self, group: str):
        """The group's memory: ``MemPursuitMemory`` over its table, ``policy="native"`` (the
        harness applies the policies to the adapter's pool)."""
        from crewai.memory.storage.lancedb_storage import LanceDBStorage

        from mempursuit_crewai import MemPursuitMemory

        if group not in self._memories:
            storage = LanceDBStorage(path=str(self._path), table_name=self._tables[group],
                                     compact_every=0)
            self._memories[group] = MemPursuitMemory(storage=storage,
                                                     embedder=self._crewai_embedder,
                                                     policy="native", strict=True)
        return self._memories[group]

    def build(self, units: Sequence[MemoryUnit], *, embedder: Embedder, workdir: Path,
              progress: Callable[[int], None] | None = None) -> None:
        from crewai.memory.types import MemoryRecord

        path = Path(workdir) / _LANCE
        if path.exists():
            raise ValueError(f"{path} exists; use a fresh workdir")
        groups = units_by_group(units)
        self._open(embedder, path, {g: f"group_{i}" for i, g in enumerate(groups)})
        self._units = {u.uid: u for u in units}
        for group, members in groups.items():
            self._groups[group] = len(members)
            storage = self._memory(group)._storage
            for chunk, vectors in embedded_batches(members, embedder, self.batch_size, progress):
                storage.save([
                    MemoryRecord(content=u.text, embedding=v.tolist(), scope="/", categories=[],
                                 importance=0.5, metadata=_metadata(u))
                    for u, v in zip(chunk, vectors)])
        write_manifest(workdir, self._groups, tables=self._tables)

    def load_existing(self, units: Sequence[MemoryUnit], *, embedder: Embedder,
                      workdir: Path) -> bool:
        """Reopen a store that ``build`` wrote into ``workdir`` (True when reused; False when
        its files are missing, unreadable or hold other units)."""
        path, saved = Path(workdir) / _LANCE, read_manifest(workdir, units, "tables")
        if saved is None or not path.is_dir():
            return False
        groups, tables = saved
        try:
            self._open(embedder, path, tables)
            if any(self._memory(g)._storage.count() != n for g, n in groups.items()):
                return False
        except Exception:  # an unreadable store is rebuilt
            return False
        self._groups, self._units = groups, {u.uid: u for u in units}
        return True

    def pool(self, group: str, query: str, size: int, *,
             query_vector: np.ndarray | None = None) -> Pool:
        """The storage's own top-``size`` for ``query`` within ``group``, as the adapter's
        pool."""
        size = checked_pool_size(self._embedder is not None, size)
        group_entry(self._groups, group)
        qv = query_vector_for(self._embedder, query, query_vector)
        pool = self._memory(group).candidate_pool(query, size, query_embedding=qv.tolist())
        return pool_from_candidates(pool, [r.metadata["uid"] for r, _ in pool.items],
                                    units=self._units, dataset_signals=self.dataset_signals,
                                    uid_of=lambda hit: hit[0].metadata["uid"])

    def close(self) -> None:
        for memory in self._memories.values():
            memory.close()
        self._memories = {}


def _metadata(unit: MemoryUnit) -> dict[str, Any]:
    """What an application remembering this unit would pass as ``metadata=``."""
    meta: dict[str, Any] = {"uid": unit.uid, "session_id": unit.session_id}
    if unit.speaker:
        meta["speaker"] = unit.speaker
    if unit.timestamp:
        meta["timestamp"] = unit.timestamp
    if unit.title:
        meta["title"] = unit.title
    return meta
