"""A real LightMem store for ``mempursuit eval --framework lightmem`` (a ``StoreBackend``).

Needs LightMem itself (installed from its git repository).

* ``build``: one Qdrant collection per group (LightMem's retrieval has no user scoping), in one
  local Qdrant directory under ``workdir``, each written by LightMem's own
  ``LightMemory.offline_update`` from one ``MemoryEntry`` per unit (``memory = unit.text``,
  ``time_stamp`` / ``float_time_stamp`` / ``weekday`` from ``unit.timestamp``,
  ``speaker_name = unit.speaker``). The harness's embedder is LightMem's text embedder here (its
  vectors are computed in batches first, then handed to ``offline_update``), so stored and
  query vectors are the harness's vectors.
* ``pool``: :meth:`mempursuit_lightmem.MemPursuitLightMemory.pool`, i.e. the Qdrant query
  ``LightMemory.retrieve`` runs, with ``limit = size`` and the stored vectors.

The ``LightMemory`` instances are assembled from LightMem's own factories (text embedder and
Qdrant retriever) instead of ``LightMemory.__init__``, which also builds an LLM client and
downloads a tiktoken encoding; neither is used by writing entries or retrieving.

Signals: exactly what the adapter hands a policy (:func:`mempursuit_lightmem.adapter.lightmem_signals`:
``texts``, ``query_text``, ``timestamps`` = ``time_stamp``, ``speakers`` = ``speaker_name``,
tf-idf features). ``dataset_signals=True`` (``--dataset-signals``) puts the benchmark's own
session ids and speakers over them.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from mempursuit_eval.backends.framework_store import FrameworkStore
from mempursuit_eval.base import Embedder, MemoryUnit

from mempursuit_lightmem.adapter import MemPursuitLightMemory

__all__ = ["HarnessTextEmbedder", "LightMemBackend"]

_UID_NAMESPACE = uuid.UUID("3b0c7e52-8f43-4c55-9d1e-6c696768746d")


class HarnessTextEmbedder:
    """A harness :class:`Embedder` with LightMem's text-embedder surface (``embed(text)``).

    ``prefill(texts, vectors)`` stores vectors computed in a batch; ``embed`` returns them
    (and computes anything else one text at a time).
    """

    def __init__(self, embedder: Embedder):
        self.embedder = embedder
        self._cache: dict[str, np.ndarray] = {}
        self.total_calls = 0

    def prefill(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        for text, vec in zip(texts, np.asarray(vectors, dtype=np.float32)):
            self._cache[text] = vec

    def clear(self) -> None:
        self._cache.clear()

    def embed(self, text: str) -> list:
        self.total_calls += 1
        vec = self._cache.get(text)
        if vec is None:
            vec = np.asarray(self.embedder.encode([text]), dtype=np.float32)[0]
        return vec.tolist()

    def get_stats(self) -> dict:
        return {"total_calls": self.total_calls, "total_tokens": None}


def _parse_time(ts: str | None) -> datetime | None:
    if not ts:
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None


class LightMemBackend(FrameworkStore):
    """LightMem (local Qdrant through its own classes) as an evaluation store, with the options
    of :class:`FrameworkStore` (only LightMem's own (dense cosine) order exists: ``native`` is
    ``"dense"`` or ``"lightmem"``)."""

    framework, native_order = "lightmem", "LightMem's dense search"

    def _reset(self) -> None:
        self._client = None
        self._memories: dict[str, Any] = {}
        self._uid_of: dict[str, str] = {}
        self._text_embedder: HarnessTextEmbedder | None = None

    @staticmethod
    def collection_name(group: str) -> str:
        return "g_" + hashlib.sha1(group.encode("utf-8")).hexdigest()[:20]

    def _open(self, group: str, dim: int, path: Path):
        from lightmem.configs.base import BaseMemoryConfigs
        from lightmem.configs.logging.utils import get_logger
        from lightmem.factory.retriever.embeddingretriever.factory import (
            EmbeddingRetrieverFactory,
        )
        from lightmem.memory.lightmem import LightMemory

        config = BaseMemoryConfigs(
            index_strategy="embedding", retrieve_strategy="embedding",
            embedding_retriever={"model_name": "qdrant", "configs": {
                "collection_name": self.collection_name(group), "embedding_model_dims": dim,
                "client": self._client, "path": str(path), "on_disk": True}},
        )
        memory = LightMemory.__new__(LightMemory)
        memory.config = config
        memory.logger = get_logger("LightMemory")
        memory.token_stats = {}
        memory.retrieve_strategy = config.retrieve_strategy
        memory.text_embedder = self._text_embedder
        memory.embedding_retriever = EmbeddingRetrieverFactory.from_config(
            config.embedding_retriever)
        return memory

    def build(self, units: Sequence[MemoryUnit], *, embedder: Embedder, workdir: Path,
              progress: Callable[[int], None] | None = None) -> None:
        from qdrant_client import QdrantClient

        path = Path(workdir) / "lightmem_qdrant"
        if path.exists() and any(path.iterdir()):
            raise ValueError(f"{path} is not empty; use a fresh workdir")
        self._client = QdrantClient(path=str(path))
        self._embedder, self._text_embedder = embedder, HarnessTextEmbedder(embedder)
        by_group = self._hold(units)
        for group in by_group:
            self._memories[group] = self._open(group, int(embedder.dim), path)
        self._write_units(by_group, embedder, progress)

    def _write_batch(self, group: str, units: list[MemoryUnit], vectors: np.ndarray) -> None:
        """The batch's entries through ``offline_update``, embedded with ``vectors``."""
        from lightmem.memory.utils import MemoryEntry

        self._text_embedder.prefill([u.text for u in units], vectors)
        entries = []
        for u in units:
            when = _parse_time(u.timestamp)
            entries.append(MemoryEntry(
                id=str(uuid.uuid5(_UID_NAMESPACE, u.uid)),
                time_stamp=when.isoformat(timespec="milliseconds") if when else "",
                float_time_stamp=when.timestamp() if when else 0,
                weekday=when.strftime("%a") if when else "",
                memory=u.text, original_memory=u.text,
                speaker_name=u.speaker or "", speaker_id=u.speaker or "",
            ))
        self._memories[group].offline_update(entries)
        for u, e in zip(units, entries):  # offline_update may re-id a clashing entry
            self._uid_of[str(e.id)] = u.uid
        self._text_embedder.clear()

    def _read(self, group: str, query: str, size: int, query_vector: np.ndarray | None):
        """LightMem's native top-``size`` within ``group``, with stored vectors."""
        if query_vector is not None:
            self._text_embedder.prefill([query], np.asarray(query_vector)[None, :])
        try:
            return MemPursuitLightMemory(self._memories[group], policy="native",
                                         strict=True).pool(query, size=size)
        finally:
            self._text_embedder.clear()

    def _uid(self, hit: Any) -> str:
        return self._uid_of[str(hit["id"])]

    def _release(self) -> None:
        if self._client is not None:
            self._client.close()
