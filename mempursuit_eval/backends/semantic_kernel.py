"""Semantic Kernel's ``InMemoryCollection``, read as ``MemPursuitCollection.search`` reads it, for
``mempursuit eval --framework semantic-kernel`` (a ``StoreBackend``).

Needs the ``[semantic-kernel]`` extra.

* ``build``: one ``InMemoryCollection`` per group (one user's memory: the LoCoMo conversation,
  the LongMemEval haystack); every unit is written by the collection's own ``upsert`` as one
  record of :class:`EvalMemory` (``key`` = the unit's uid, ``content`` = its text, ``vector`` =
  the harness's embedder's vector, as the collection's embedding generator would set it, and
  ``title`` for a unit with a title). Timestamps, speakers and the benchmark's own sessions are
  not written (as for Haystack, LlamaIndex and Agno), so the policies get the texts only.
* ``pool``: :meth:`mempursuit_semantic_kernel.MemPursuitCollection.candidate_pool`, the read the
  wrapper's ``search`` makes: the collection's own ``search(query, vector=..., top=size,
  include_vectors=True)`` (cosine, exact), its records' stored vectors and only the signals the
  adapter hands over; ``dataset_signals`` (``--dataset-signals``) puts the benchmark's own
  session ids and speakers over them.
* The store lives in memory: a rerun builds it again (from the harness's embedding cache).
"""

# no `from __future__ import annotations`: Semantic Kernel reads the record type's annotations
import asyncio
import copy
from dataclasses import dataclass
from typing import Annotated, Any, Callable, Sequence

import numpy as np
from semantic_kernel.data.vector import VectorStoreField, vectorstoremodel

from mempursuit_eval.backends.framework_store import FrameworkStore
from mempursuit_eval.base import Embedder, MemoryUnit, query_vector_for

__all__ = ["EvalMemory", "SemanticKernelBackend"]


@vectorstoremodel
@dataclass
class EvalMemory:
    """One harness unit as a Semantic Kernel record."""

    key: Annotated[str, VectorStoreField("key")]
    content: Annotated[str, VectorStoreField("data", is_full_text_indexed=True)]
    title: Annotated[str | None, VectorStoreField("data")] = None
    vector: Annotated[list[float] | None, VectorStoreField("vector", dimensions=384)] = None


class SemanticKernelBackend(FrameworkStore):
    """Semantic Kernel's ``InMemoryCollection``, one per group, as an evaluation store, with
    the options of :class:`FrameworkStore` (only the collection's own (dense cosine) order
    exists: ``native`` is ``"dense"`` or ``"semantic-kernel"``)."""

    framework, native_order = "semantic-kernel", "InMemoryCollection's dense cosine search"
    loggers = ("semantic_kernel",)

    def _reset(self) -> None:
        self._collections: dict[str, Any] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def _run(self, coro):
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coro)

    def build(self, units: Sequence[MemoryUnit], *, embedder: Embedder, workdir: Any = None,
              progress: Callable[[int], None] | None = None) -> None:
        from semantic_kernel.connectors.in_memory import InMemoryCollection

        from mempursuit_semantic_kernel import MemPursuitCollection

        dim = int(getattr(embedder, "dim", 0) or len(embedder.encode(["dimension"])[0]))
        definition = copy.deepcopy(EvalMemory.__kernel_vectorstoremodel_definition__)
        definition.vector_fields[0].dimensions = dim  # the harness's embedder's
        self._embedder = embedder
        by_group = self._hold(units)
        for i, group in enumerate(by_group):
            collection = InMemoryCollection(record_type=EvalMemory, definition=definition,
                                            collection_name=f"group_{i}")
            # the adapter's pool function; policy="native": the harness applies the policies
            self._collections[group] = MemPursuitCollection(collection, policy="native",
                                                            strict=True, text_field="content")
        self._write_units(by_group, embedder, progress)

    def _write_batch(self, group: str, units: list[MemoryUnit], vectors: np.ndarray) -> None:
        self._run(self._collections[group].collection.upsert([
            EvalMemory(key=u.uid, content=u.text, title=u.title, vector=v.tolist())
            for u, v in zip(units, vectors)]))

    def _read(self, group: str, query: str, size: int, query_vector: np.ndarray | None):
        qv = query_vector_for(self._embedder, query, query_vector)
        return self._run(self._collections[group].candidate_pool(query, vector=qv.tolist(),
                                                                 size=size))

    def _uid(self, result: Any) -> str:
        return result.record.key

    def _release(self) -> None:
        if self._loop is not None:
            self._loop.close()
