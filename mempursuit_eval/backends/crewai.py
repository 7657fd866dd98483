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
from typing import Any

import numpy as np

from mempursuit_eval.backends.framework_store import TableStore, harness_model
from mempursuit_eval.base import Embedder, MemoryUnit, query_vector_for

__all__ = ["CrewAIBackend"]


class CrewAIBackend(TableStore):
    """CrewAI's LanceDB storage, one table per group, as an evaluation store, with the options
    of :class:`FrameworkStore` (only the storage's own (dense L2) order exists: ``native`` is
    ``"dense"`` or ``"crewai"``)."""

    framework, native_order = "crewai", "LanceDBStorage's dense search"
    folder = "lancedb"
    loggers = ("crewai", "lancedb")

    def _reset(self) -> None:
        self._tables: dict[str, str] = {}
        self._memories: dict[str, Any] = {}
        self._path: Path | None = None

    def _open(self, path: Path, tables: dict[str, str]) -> None:
        os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # before importing crewai
        os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")  # a save waits out its timeout
        self._path, self._tables = Path(path), dict(tables)
        from mempursuit_crewai import MemPursuitEmbedder

        self._crewai_embedder = harness_model(MemPursuitEmbedder, self._embedder, model="harness")
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

    def _count(self, group: str) -> int:
        return self._memory(group)._storage.count()

    def _write_batch(self, group: str, units: list[MemoryUnit], vectors: np.ndarray) -> None:
        from crewai.memory.types import MemoryRecord

        self._memory(group)._storage.save([
            MemoryRecord(content=u.text, embedding=v.tolist(), scope="/", categories=[],
                         importance=0.5, metadata=_metadata(u))
            for u, v in zip(units, vectors)])

    def _read(self, group: str, query: str, size: int, query_vector: np.ndarray | None):
        qv = query_vector_for(self._embedder, query, query_vector)
        return self._memory(group).candidate_pool(query, size, query_embedding=qv.tolist())

    def _uid(self, hit: Any) -> str:
        return hit[0].metadata["uid"]  # a (record, score) pair

    def _release(self) -> None:
        for memory in self._memories.values():
            memory.close()


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
