"""LlamaIndex's ``VectorMemoryBlock`` over a local Qdrant folder, for
``mempursuit eval --framework llamaindex`` (a ``StoreBackend``).

Needs the ``[llamaindex]`` extra and ``llama-index-vector-stores-qdrant``.

* ``build``: every unit is written by the block's own ``aput``, one user message per unit, with
  ``session_id`` = the unit's group (LlamaIndex's memory session: the LoCoMo conversation, the
  LongMemEval haystack). The block stores ``<message role='user'>TEXT</message>`` with metadata
  ``{"session_id": group}`` and the harness's embedder as its embed model (vectors computed in
  batches first). Timestamps and the benchmark's own sessions are not stored: the block keeps no
  such fields. A unit with a title (the multi-hop document sets' paragraphs) also gets node
  metadata ``{"title": title}``, as a LlamaIndex document store keeps a document's title (the
  block itself writes only ``session_id``; the title is added to the node it writes, after its
  embedding, so the stored vector is the block's own).
* ``pool``: the block's own read (``VectorMemoryBlock.aget`` with ``similarity_top_k = size``,
  filtered to the group by ``session_id``), whose retrieved nodes go to
  :meth:`mempursuit_llamaindex.MemPursuitPostprocessor.acandidate_pool`, the pool-building
  function the postprocessor itself uses: the stored vectors read back from Qdrant by node id,
  Qdrant's scores as the native scores, and only the signals the adapter hands over (the texts,
  ``session_ids``, the message role as ``speakers``, and ``titles`` read from the node metadata
  ``title`` when the nodes have one); ``dataset_signals=True``
  (``--dataset-signals``) puts the benchmark's own session ids and speakers over them.
* ``load_existing``: a finished build is reopened from the cache (the Qdrant folder and
  ``units.json``, which maps each node id to its unit), so a rerun reads the same store.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from mempursuit_eval.backends.framework_store import FrameworkStore
from mempursuit_eval.base import (Embedder, MemoryUnit, Pool, checked_pool_size, group_entry,
                                  pool_from_candidates, read_manifest, write_manifest)

__all__ = ["LlamaIndexBackend"]


def _harness_embedding(embedder: Embedder):
    """The harness's embedder as a LlamaIndex ``BaseEmbedding`` with a prefilled cache."""
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.bridge.pydantic import PrivateAttr

    class HarnessEmbedding(BaseEmbedding):
        _embedder: Any = PrivateAttr()
        _cache: dict = PrivateAttr(default_factory=dict)

        def prefill(self, texts, vectors) -> None:
            for text, vec in zip(texts, np.asarray(vectors, dtype=np.float32)):
                self._cache[text] = vec.tolist()

        def clear(self) -> None:
            self._cache.clear()

        def _one(self, text: str) -> list:
            vec = self._cache.get(text)
            return vec if vec is not None else self._embedder.encode([text])[0].tolist()

        def _get_query_embedding(self, query):
            return self._one(query)

        async def _aget_query_embedding(self, query):
            return self._one(query)

        def _get_text_embedding(self, text):
            return self._one(text)

    model = HarnessEmbedding(model_name=getattr(embedder, "name", "harness"))
    model._embedder = embedder
    return model


def _recording_store(client):
    """A ``QdrantVectorStore`` that records the node ids the block writes (nothing else
    changes), so each node maps back to its unit."""
    from llama_index.core.bridge.pydantic import PrivateAttr
    from llama_index.vector_stores.qdrant import QdrantVectorStore

    class RecordingQdrantVectorStore(QdrantVectorStore):
        _added: list = PrivateAttr(default_factory=list)
        _title: Any = PrivateAttr(default=None)  # the title of the unit being written

        async def async_add(self, nodes, **kwargs):
            if self._title is not None:
                for node in nodes:
                    node.metadata["title"] = self._title
            ids = await super().async_add(nodes, **kwargs)
            self._added.extend(ids)
            return ids

    return RecordingQdrantVectorStore(collection_name="memories", aclient=client)


class LlamaIndexBackend(FrameworkStore):
    """LlamaIndex's ``VectorMemoryBlock`` (local Qdrant) as an evaluation store, with the
    options of :class:`FrameworkStore` (only the block's own (dense cosine) order exists:
    ``native`` is ``"dense"`` or ``"llamaindex"``)."""

    framework, native_order = "llamaindex", "VectorMemoryBlock's dense search"

    def _reset(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client = self._store = self._embed = self._block = None
        self._uid_of: dict[str, str] = {}

    def _run(self, coro):
        return self._loop.run_until_complete(coro)

    def _open(self, embedder: Embedder, path: Path) -> None:
        from qdrant_client import AsyncQdrantClient

        self._embedder = embedder
        self._loop = asyncio.new_event_loop()
        self._client = AsyncQdrantClient(path=str(path))
        self._store = _recording_store(self._client)
        self._embed = _harness_embedding(embedder)

    def build(self, units: Sequence[MemoryUnit], *, embedder: Embedder, workdir: Path,
              progress: Callable[[int], None] | None = None) -> None:
        from llama_index.core.memory import VectorMemoryBlock

        path = Path(workdir) / "llamaindex_qdrant"
        if path.exists() and any(path.iterdir()):
            raise ValueError(f"{path} is not empty; use a fresh workdir")
        self._open(embedder, path)
        self._block = VectorMemoryBlock(vector_store=self._store, embed_model=self._embed)
        self._write_units(self._hold(units), embedder, progress)
        write_manifest(workdir, self._groups, nodes=self._uid_of)

    @staticmethod
    def _stored_text(unit: MemoryUnit) -> str:
        """The text the block embeds for one user message (``VectorMemoryBlock._aput``)."""
        return f"<message role='user'>{unit.text}</message>"

    def _write_batch(self, group: str, units: list[MemoryUnit], vectors: np.ndarray) -> None:
        """One ``aput`` per unit (its vector prefilled), its node id mapped to the unit."""
        from llama_index.core.llms import ChatMessage

        self._embed.prefill([self._stored_text(u) for u in units], vectors)
        for u in units:
            self._store._title = u.title
            self._run(self._block.aput([ChatMessage(role="user", content=u.text)],
                                       session_id=group))
            self._uid_of[str(self._store._added[-1])] = u.uid
        self._embed.clear()
        self._store._title = None

    def load_existing(self, units: Sequence[MemoryUnit], *, embedder: Embedder,
                      workdir: Path) -> bool:
        """Reopen a store that ``build`` wrote into ``workdir`` (True when reused; False, and
        nothing held open, when its files are missing, unreadable or hold other units)."""
        path, saved = Path(workdir) / "llamaindex_qdrant", read_manifest(workdir, units, "nodes")
        if saved is None or not path.is_dir():
            return False
        groups, uid_of = saved
        if set(uid_of.values()) != {u.uid for u in units}:
            return False
        self._open(embedder, path)
        try:
            count = self._run(self._client.count("memories")).count
        except Exception:  # an unreadable folder is rebuilt
            count = -1
        if count != len(uid_of):
            self.close()
            return False
        self._hold(units, groups)
        self._uid_of = uid_of
        return True

    def pool(self, group: str, query: str, size: int, *,
             query_vector: np.ndarray | None = None) -> Pool:
        """The block's own top-``size`` for ``query`` within ``group``, as the adapter's pool."""
        from llama_index.core.llms import ChatMessage
        from llama_index.core.memory import VectorMemoryBlock
        from llama_index.core.postprocessor.types import BaseNodePostprocessor

        from mempursuit_llamaindex import DEFAULT_METADATA_KEYS, MemPursuitPostprocessor

        size = checked_pool_size(self._store is not None, size)
        group_entry(self._groups, group)
        # titles where the nodes have the metadata (a pool without any gets no titles signal)
        adapter = MemPursuitPostprocessor(policy="native", pool=size, strict=True,
                                          vector_store=self._store, embed_model=self._embed,
                                          metadata_keys={**DEFAULT_METADATA_KEYS,
                                                         "titles": "title"})
        seen = []

        class Capture(BaseNodePostprocessor):
            def _postprocess_nodes(self, nodes, query_bundle=None):
                raise NotImplementedError("VectorMemoryBlock reads asynchronously")

            async def _apostprocess_nodes(self, nodes, query_bundle=None):
                seen.append(await adapter.acandidate_pool(nodes, query_bundle))
                return nodes

        if query_vector is not None:
            self._embed.prefill([query], np.asarray(query_vector)[None, :])
        block = VectorMemoryBlock(vector_store=self._store, embed_model=self._embed,
                                  similarity_top_k=size, node_postprocessors=[Capture()])
        try:
            self._run(block.aget([ChatMessage(role="user", content=query)], session_id=group))
        finally:
            self._embed.clear()
        if not seen:  # the block returns before its postprocessors when nothing matched
            qv = np.asarray(self._embed.get_query_embedding(query) if query_vector is None
                            else query_vector, dtype=np.float32)
            return Pool([], vectors=np.empty((0, qv.shape[0]), dtype=np.float32),
                        query_vector=qv, signals={})
        pool = seen[0]
        return pool_from_candidates(pool, [self._uid_of[n.node.node_id] for n in pool.items],
                                    units=self._units, dataset_signals=self.dataset_signals)

    def _release(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            self._run(client.close())
        if self._loop is not None:
            self._loop.close()
