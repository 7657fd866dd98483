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

from mempursuit_eval.base import (Embedder, MemoryUnit, Pool, checked_pool_size, embedded_batches,
                                  group_entry, pool_from_candidates, query_vector_for,
                                  units_by_group)

__all__ = ["EvalMemory", "SemanticKernelBackend"]


@vectorstoremodel
@dataclass
class EvalMemory:
    """One harness unit as a Semantic Kernel record."""

    key: Annotated[str, VectorStoreField("key")]
    content: Annotated[str, VectorStoreField("data", is_full_text_indexed=True)]
    title: Annotated[str | None, VectorStoreField("data")] = None
    vector: Annotated[list[float] | None, VectorStoreField("vector", dimensions=384)] = None


class SemanticKernelBackend:
    """Semantic Kernel's ``InMemoryCollection``, one per group, as an evaluation store.

    Parameters
    ----------
    batch_size : int
        Units embedded and written per batch.
    native : str, optional
        Only the collection's own (dense cosine) order exists: ``"dense"`` or
        ``"semantic-kernel"``.
    dataset_signals : bool
        Put the benchmark's own ``session_ids`` and ``speakers`` over the adapter's
        (``--dataset-signals``).
    """

    loggers = ("semantic_kernel",)

    def __init__(self, *, batch_size: int = 256, native: str | None = None,
                 dataset_signals: bool = False):
        if native not in (None, "dense", "semantic-kernel"):
            raise ValueError("the semantic-kernel backend's native order is InMemoryCollection's "
                             f"dense cosine search; got native={native!r}")
        self.batch_size = int(batch_size)
        self.dataset_signals = bool(dataset_signals)
        self.name = "semantic-kernel"
        self._units: dict[str, MemoryUnit] = {}
        self._groups: dict[str, int] = {}
        self._collections: dict[str, Any] = {}
        self._embedder: Embedder | None = None
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
        self._units = {u.uid: u for u in units}
        for i, (group, members) in enumerate(units_by_group(units).items()):
            self._groups[group] = len(members)
            collection = InMemoryCollection(record_type=EvalMemory, definition=definition,
                                            collection_name=f"group_{i}")
            for chunk, vectors in embedded_batches(members, embedder, self.batch_size, progress):
                self._run(collection.upsert([
                    EvalMemory(key=u.uid, content=u.text, title=u.title, vector=v.tolist())
                    for u, v in zip(chunk, vectors)]))
            # the adapter's pool function; policy="native": the harness applies the policies
            self._collections[group] = MemPursuitCollection(collection, policy="native",
                                                            strict=True, text_field="content")

    def pool(self, group: str, query: str, size: int, *,
             query_vector: np.ndarray | None = None) -> Pool:
        """The collection's own top-``size`` for ``query`` within ``group``, as the adapter's
        pool."""
        size = checked_pool_size(self._embedder is not None, size)
        group_entry(self._groups, group)
        qv = query_vector_for(self._embedder, query, query_vector)
        pool = self._run(self._collections[group].candidate_pool(query, vector=qv.tolist(),
                                                                 size=size))
        return pool_from_candidates(pool, [r.record.key for r in pool.items], units=self._units,
                                    dataset_signals=self.dataset_signals,
                                    uid_of=lambda r: r.record.key)

    def close(self) -> None:
        self._collections = {}
        if self._loop is not None:
            self._loop.close()
            self._loop = None
