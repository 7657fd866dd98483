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
from typing import Any, Callable, Sequence

import numpy as np

from mempursuit_eval.base import (Embedder, MemoryUnit, Pool, checked_pool_size, embedded_batches,
                                  group_entry, pool_from_candidates, read_manifest, units_by_group,
                                  write_manifest)

__all__ = ["AutoGenBackend"]


def _embedding_function(embedder: Embedder) -> Any:
    from mempursuit_autogen import MemPursuitEmbeddingFunction

    class HarnessEmbeddingFunction(MemPursuitEmbeddingFunction):
        def _model(self):
            return embedder

    return HarnessEmbeddingFunction(model="harness")


class AutoGenBackend:
    """AutoGen's Chroma memory, one collection per group, as an evaluation store.

    Parameters
    ----------
    batch_size : int
        Units embedded and written per batch.
    native : str, optional
        Only Chroma's own (dense) order exists: ``"dense"`` or ``"autogen"``.
    dataset_signals : bool
        Put the benchmark's own ``session_ids`` and ``speakers`` over the adapter's.
    """

    loggers = ("autogen_ext", "chromadb")

    def __init__(self, *, batch_size: int = 256, native: str | None = None,
                 dataset_signals: bool = False):
        if native not in (None, "dense", "autogen"):
            raise ValueError("the autogen backend's native order is Chroma's dense search; "
                             f"got native={native!r}")
        self.batch_size = int(batch_size)
        self.dataset_signals = bool(dataset_signals)
        self.name = "autogen"
        self._units: dict[str, MemoryUnit] = {}
        self._groups: dict[str, int] = {}
        self._memories: dict[str, Any] = {}
        self._embedder: Embedder | None = None
        self._loop = None

    def _run(self, coro):
        import asyncio

        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coro)

    def _open(self, embedder: Embedder, folder: Path, collections: dict[str, str]) -> None:
        """One memory per group over its collection in ``folder`` (created when missing)."""
        from autogen_ext.memory.chromadb import (CustomEmbeddingFunctionConfig,
                                                 PersistentChromaDBVectorMemoryConfig)

        from mempursuit_autogen import MemPursuitChromaDBVectorMemory

        self._embedder = embedder
        function = _embedding_function(embedder)
        for group, name in collections.items():
            config = PersistentChromaDBVectorMemoryConfig(
                collection_name=name, persistence_path=str(folder),
                embedding_function_config=CustomEmbeddingFunctionConfig(
                    function=lambda: function, params={}))
            # the adapter's pool function; policy="native": the harness applies the policies
            memory = MemPursuitChromaDBVectorMemory(config=config, policy="native", strict=True)
            memory._ensure_initialized()  # AutoGen's own client and collection
            self._memories[group] = memory

    def build(self, units: Sequence[MemoryUnit], *, embedder: Embedder, workdir: Path,
              progress: Callable[[int], None] | None = None) -> None:
        from autogen_core.memory import MemoryMimeType

        folder = Path(workdir) / "chroma"
        if folder.exists():
            raise ValueError(f"{folder} exists; use a fresh workdir")
        self._units = {u.uid: u for u in units}
        groups = units_by_group(units)
        collections = {group: f"group_{i}" for i, group in enumerate(groups)}
        self._open(embedder, folder, collections)
        for group, members in groups.items():
            self._groups[group] = len(members)
            collection = self._memories[group]._collection
            for chunk, vectors in embedded_batches(members, embedder, self.batch_size, progress):
                collection.add(
                    ids=[u.uid for u in chunk], documents=[u.text for u in chunk],
                    embeddings=list(vectors),
                    metadatas=[{"uid": u.uid, "mime_type": str(MemoryMimeType.TEXT),
                                **({"title": u.title} if u.title else {})} for u in chunk])
        write_manifest(workdir, self._groups, collections=collections)

    def load_existing(self, units: Sequence[MemoryUnit], *, embedder: Embedder,
                      workdir: Path) -> bool:
        """Reopen the Chroma folder ``build`` wrote into ``workdir`` (True when reused; False,
        and nothing held open, when its files are missing, unreadable or hold other units)."""
        folder, saved = Path(workdir) / "chroma", read_manifest(workdir, units, "collections")
        if saved is None or not folder.is_dir():
            return False
        groups, collections = saved
        try:
            self._open(embedder, folder, collections)
            ok = all(self._memories[g]._collection.count() == n for g, n in groups.items())
        except Exception:  # an unreadable folder is rebuilt
            ok = False
        if not ok:
            self.close()
            self._embedder = None
            return False
        self._groups, self._units = groups, {u.uid: u for u in units}
        return True

    def pool(self, group: str, query: str, size: int, *,
             query_vector: np.ndarray | None = None) -> Pool:
        """AutoGen's own top-``size`` for ``query`` within ``group``, as the adapter's pool."""
        size = checked_pool_size(self._embedder is not None, size)
        group_entry(self._groups, group)
        pool = self._run(self._memories[group].candidate_pool(query, size))
        return pool_from_candidates(pool, [m.metadata["uid"] for m in pool.items],
                                    units=self._units, dataset_signals=self.dataset_signals,
                                    uid_of=lambda m: m.metadata["uid"])

    def close(self) -> None:
        for memory in self._memories.values():
            self._run(memory.close())
        self._memories = {}
        if self._loop is not None:
            self._loop.close()
            self._loop = None
