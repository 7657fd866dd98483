"""AutoGen's ``ChromaDBVectorMemory`` over a local Chroma folder, read as
``MemPursuitChromaDBVectorMemory.query`` reads it, for ``mempursuit eval --framework autogen``
(a ``StoreBackend``).

Needs the ``[autogen]`` extra.

* ``build``: one memory (one Chroma collection) per group, one user's memory (the LoCoMo
  conversation, the LongMemEval haystack), in one ``PersistentChromaDBVectorMemoryConfig``
  folder; the collection's embedding function is the harness's embedder. Units are written in
  batches into the memory's collection with the harness's vectors (the rows AutoGen's ``add``
  writes: the text as the document, ``mime_type`` in the metadata), with ``{"uid": uid}`` in the
  metadata (how a pool maps back to the harness's units; no signal reads it) and a ``title``
  for a unit with one. Timestamps, speakers and the benchmark's sessions are not written (as for
  Haystack, LlamaIndex, Agno and Semantic Kernel): the policies get the texts only.
* ``load_existing``: the same folder reopened from the harness's cache (the collections named
  in its manifest, each holding as many rows as its group has units).
* ``pool``: :meth:`mempursuit_autogen.MemPursuitChromaDBVectorMemory.candidate_pool`, the read
  the memory's ``query`` makes (AutoGen's own query with ``k`` = size, the stored embeddings by
  id); ``dataset_signals`` puts the benchmark's own session ids and speakers over them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mempursuit_eval.backends.framework_store import TableStore, harness_model
from mempursuit_eval.base import Embedder, MemoryUnit

__all__ = ["AutoGenBackend"]


class AutoGenBackend(TableStore):
    """AutoGen's Chroma memory, one collection per group, as an evaluation store, with the
    options of :class:`FrameworkStore` (only Chroma's own (dense) order exists: ``native`` is
    ``"dense"`` or ``"autogen"``)."""

    framework, native_order = "autogen", "Chroma's dense search"
    folder, manifest_key = "chroma", "collections"
    loggers = ("autogen_ext", "chromadb")

    def _reset(self) -> None:
        self._memories: dict[str, Any] = {}
        self._loop = None

    def _run(self, coro):
        import asyncio

        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coro)

    def _open(self, folder: Path, collections: dict[str, str]) -> None:
        """One memory per group over its collection in ``folder`` (created when missing)."""
        from autogen_ext.memory.chromadb import (CustomEmbeddingFunctionConfig,
                                                 PersistentChromaDBVectorMemoryConfig)

        from mempursuit_autogen import MemPursuitChromaDBVectorMemory, MemPursuitEmbeddingFunction

        function = harness_model(MemPursuitEmbeddingFunction, self._embedder, model="harness")
        for group, name in collections.items():
            config = PersistentChromaDBVectorMemoryConfig(
                collection_name=name, persistence_path=str(folder),
                embedding_function_config=CustomEmbeddingFunctionConfig(
                    function=lambda: function, params={}))
            # the adapter's pool function; policy="native": the harness applies the policies
            memory = MemPursuitChromaDBVectorMemory(config=config, policy="native", strict=True)
            memory._ensure_initialized()  # AutoGen's own client and collection
            self._memories[group] = memory

    def _count(self, group: str) -> int:
        return self._memories[group]._collection.count()

    def _write_batch(self, group: str, units: list[MemoryUnit], vectors: np.ndarray) -> None:
        from autogen_core.memory import MemoryMimeType

        self._memories[group]._collection.add(
            ids=[u.uid for u in units], documents=[u.text for u in units],
            embeddings=list(vectors),
            metadatas=[{"uid": u.uid, "mime_type": str(MemoryMimeType.TEXT),
                        **({"title": u.title} if u.title else {})} for u in units])

    def _read(self, group: str, query: str, size: int, query_vector: np.ndarray | None):
        return self._run(self._memories[group].candidate_pool(query, size))

    def _uid(self, memory_content: Any) -> str:
        return memory_content.metadata["uid"]

    def _release(self) -> None:
        for memory in self._memories.values():
            self._run(memory.close())
        if self._loop is not None:
            self._loop.close()
