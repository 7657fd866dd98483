"""MemPursuit as a LlamaIndex node postprocessor.

LlamaIndex reads memories and documents through ``node_postprocessors``: ``VectorMemoryBlock``
(the vector block of ``llama_index.core.memory.Memory``), every retriever query engine and chat
engine run them on the retrieved ``NodeWithScore`` list. :class:`MemPursuitPostprocessor` is one
of them: ask the store for a pool (``similarity_top_k=200``) and it keeps the ``k`` nodes the
read policy picks, most useful first::

    VectorMemoryBlock(vector_store=store, embed_model=embed_model, similarity_top_k=200,
                      node_postprocessors=[MemPursuitPostprocessor(k=10, vector_store=store)])

Where the vectors come from, in this order (:attr:`MemPursuitPostprocessor.vector_sources`
counts each per read):

1. ``"nodes"``: the query bundle's ``embedding`` and each node's own ``embedding``;
2. ``"store"``: otherwise the nodes' stored vectors, read by node id with the vector store's
   ``get_nodes`` (Qdrant, Chroma, LanceDB, ... where the integration implements it; the
   in-memory ``SimpleVectorStore`` through its ``get``);
3. ``"embedded"``: otherwise the nodes' text embedded with ``embed_model`` (default
   ``Settings.embed_model``), cached by content hash, with one warning per postprocessor.

A query with no embedding (``VectorMemoryBlock`` passes only the text) is embedded with
``embed_model``. Signals: the texts, ``timestamps`` / ``speakers`` / ``session_ids`` from the
metadata keys in ``metadata_keys`` when the nodes have them (``VectorMemoryBlock`` stores
``session_id``), and the role of a ``VectorMemoryBlock`` message (``<message role='user'>``) as
the speaker when no metadata names one.
"""

from __future__ import annotations

import logging
import math
import re
from typing import Any, Dict, List, Mapping, Optional

import numpy as np
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from mempursuit_core.adapter import (CandidatePool, EmbeddedVectors, ReadOptions, aread_or_native,
                                    pool_signals, read_or_native)

__all__ = ["MemPursuitPostprocessor", "DEFAULT_METADATA_KEYS"]

logger = logging.getLogger(__name__)

#: signal -> the node metadata key it is read from
DEFAULT_METADATA_KEYS = {"timestamps": "timestamp", "speakers": "speaker",
                         "session_ids": "session_id"}
_ROLE = re.compile(r"^\s*<message role='([^']+)'>")


class MemPursuitPostprocessor(BaseNodePostprocessor):
    """Keep the ``k`` retrieved nodes a read policy picks, in its order.

    Parameters
    ----------
    k : int or None, default None
        Budget ``K``; None reorders every node it is given.
    pool : int, default 200
        ``P``: the first ``pool`` retrieved nodes are the candidates (set the retriever's
        ``similarity_top_k`` to it).
    policy : str or Selector, default ``mempursuit_core.DEFAULT_POLICY``
        ``"native"`` returns the first ``k`` nodes as retrieved (what ``similarity_top_k=k``
        returns without this postprocessor).
    policy_options : dict, optional
        Selector options; other keyword arguments are taken as selector options too.
    strict : bool, default False
        False: on any failure (no embed model, a store error) log one warning and return the
        first ``k`` nodes; True raises.
    embed_model : BaseEmbedding, optional
        Embeds the query (and nodes whose vectors cannot be read); default
        ``Settings.embed_model``, resolved only when needed.
    vector_store : BasePydanticVectorStore, optional
        Where nodes' stored vectors are read by id when the nodes come without them.
    metadata_keys : dict, optional
        ``{signal: metadata key}``, default :data:`DEFAULT_METADATA_KEYS`.
    """

    k: Optional[int] = Field(default=None)
    pool: int = Field(default=200)
    policy: Any = Field(default=None)
    policy_options: Dict[str, Any] = Field(default_factory=dict)
    strict: bool = Field(default=False)
    embed_model: Optional[Any] = Field(default=None, exclude=True)
    vector_store: Optional[Any] = Field(default=None, exclude=True)
    metadata_keys: Dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_METADATA_KEYS))

    _options: ReadOptions = PrivateAttr()
    _selector: Any = PrivateAttr()
    _vectors: EmbeddedVectors = PrivateAttr(default_factory=EmbeddedVectors)
    _warned: bool = PrivateAttr(default=False)

    def __init__(self, *, k: Optional[int] = None, pool: Optional[int] = None,
                 policy: Any = None, policy_options: Optional[Mapping[str, Any]] = None,
                 strict: Optional[bool] = None, embed_model: Any = None, vector_store: Any = None,
                 metadata_keys: Optional[Mapping[str, str]] = None, **options: Any):
        built = ReadOptions.build("MemPursuitPostprocessor", k=k, pool=pool, policy=policy,
                                  policy_options=policy_options, strict=strict, **options)
        super().__init__(k=built.k, pool=built.pool, policy=built.policy,
                         policy_options=dict(built.policy_options), strict=built.strict,
                         embed_model=embed_model, vector_store=vector_store,
                         metadata_keys=dict(DEFAULT_METADATA_KEYS if metadata_keys is None
                                            else metadata_keys))
        self._options = built
        self._selector = built.selector()

    @classmethod
    def class_name(cls) -> str:
        return "MemPursuitPostprocessor"

    @property
    def vector_sources(self) -> Dict[str, int]:
        """How many node vectors came from each source so far: ``nodes``, ``store``,
        ``embedded``."""
        return dict(self._vectors.sources)

    # -- the pool ------------------------------------------------------------------------------

    def _model(self):
        if self.embed_model is not None:
            return self.embed_model
        from llama_index.core import Settings

        return Settings.embed_model

    def _start(self, nodes: List[NodeWithScore]) -> tuple[list, list, list]:
        """The candidates, their vectors so far (None where missing) and the missing ids."""
        nodes = list(nodes)[: self._options.pool]
        vectors = [n.node.embedding for n in nodes]
        self._vectors.count("nodes", sum(v is not None for v in vectors))
        return nodes, vectors, [i for i, v in enumerate(vectors) if v is None]

    def _store_reader(self):
        """``(get_nodes, aget_nodes)`` of the vector store, or None when it cannot read by id."""
        store = self.vector_store
        if store is None:
            return None
        from llama_index.core.vector_stores.simple import SimpleVectorStore

        if isinstance(store, SimpleVectorStore):
            def get(ids):
                return [store.get(i) for i in ids]

            async def aget(ids):
                return get(ids)

            return get, aget

        def get(ids):
            return _by_id(ids, store.get_nodes(node_ids=ids))

        async def aget(ids):
            return _by_id(ids, await store.aget_nodes(node_ids=ids))

        return get, aget

    def _put(self, vectors: list, missing: list, found: list, source: str) -> list:
        for i, v in zip(missing, found):
            vectors[i] = v
        self._vectors.count(source, sum(v is not None for v in found))
        return [i for i in missing if vectors[i] is None]

    def _to_embed(self, nodes: list, missing: list) -> list:
        """The texts of the ``missing`` nodes; says once that nodes are being embedded."""
        if not self._warned:
            self._warned = True
            logger.warning(
                "mempursuit: %d retrieved nodes came without their vectors and %s; embedding "
                "their text with %s (cached by content hash). Keep embeddings on the nodes or "
                "pass vector_store= (a store that returns vectors by id) to use the stored ones.",
                len(missing), "no vector_store= was given" if self.vector_store is None else
                f"{type(self.vector_store).__name__} did not return them by id",
                type(self._model()).__name__)
        return [nodes[i].node.get_content(metadata_mode=MetadataMode.EMBED) for i in missing]

    def _finish(self, nodes: list, vectors: list, query: QueryBundle, query_vector: Any
                ) -> CandidatePool[NodeWithScore]:
        scores = [n.score for n in nodes]
        native = None if any(s is None or math.isnan(s) for s in scores) else np.asarray(scores)
        dim = len(query_vector)
        return CandidatePool(nodes, np.asarray(query_vector, dtype=np.float32),
                             np.asarray(vectors, dtype=np.float32).reshape(len(nodes), dim),
                             native_scores=native, signals=self._signals(nodes, query.query_str))

    def _signals(self, nodes: list, query_text: str):
        texts = [n.node.get_content() for n in nodes]
        extra = {}
        for signal, key in self.metadata_keys.items():
            values = [n.node.metadata.get(key) for n in nodes]
            if signal == "speakers":
                values = [v if v is not None else _role(t) for v, t in zip(values, texts)]
            if any(v is not None for v in values):
                extra[signal] = values
        return pool_signals(texts, query_text, **extra)

    def candidate_pool(self, nodes: List[NodeWithScore], query_bundle: QueryBundle
                       ) -> CandidatePool[NodeWithScore]:
        """The first ``pool`` nodes with their vectors, the query vector and the signals.

        Returns
        -------
        CandidatePool
            ``items`` the ``NodeWithScore`` objects (native order), ``vectors`` (P, d),
            ``query_vector`` (d,), ``native_scores`` (P,) the retrieval scores.
        """
        nodes, vectors, missing = self._start(nodes)
        reader = self._store_reader()
        if missing and reader is not None:
            missing = self._put(vectors, missing, reader[0]([nodes[i].node.node_id
                                                             for i in missing]), "store")
        if missing:
            texts = self._to_embed(nodes, missing)
            new = self._vectors.to_embed(texts)
            self._vectors.fill(vectors, missing, texts, new,
                               self._model().get_text_embedding_batch(new) if new else [])
        query_vector = query_bundle.embedding
        if query_vector is None and nodes:
            query_vector = self._model().get_query_embedding(query_bundle.query_str)
        return self._finish(nodes, vectors, query_bundle, query_vector or [0.0])

    async def acandidate_pool(self, nodes: List[NodeWithScore], query_bundle: QueryBundle
                              ) -> CandidatePool[NodeWithScore]:
        """:meth:`candidate_pool` with the store's and the embed model's async calls."""
        nodes, vectors, missing = self._start(nodes)
        reader = self._store_reader()
        if missing and reader is not None:
            missing = self._put(vectors, missing, await reader[1]([nodes[i].node.node_id
                                                                   for i in missing]), "store")
        if missing:
            texts = self._to_embed(nodes, missing)
            new = self._vectors.to_embed(texts)
            self._vectors.fill(vectors, missing, texts, new,
                               await self._model().aget_text_embedding_batch(new) if new else [])
        query_vector = query_bundle.embedding
        if query_vector is None and nodes:
            query_vector = await self._model().aget_query_embedding(query_bundle.query_str)
        return self._finish(nodes, vectors, query_bundle, query_vector or [0.0])

    # -- postprocessing ------------------------------------------------------------------------

    def _budget(self, nodes: list) -> int:
        return self._options.budget(max(len(nodes), 1))

    def _native(self, nodes: list, query_bundle: Optional[QueryBundle]) -> Optional[list]:
        """The first ``k`` nodes when no reordering is possible or asked for, else None."""
        if self._options.is_native or not nodes:
            return list(nodes)[: self._budget(nodes)]
        if query_bundle is None:
            raise ValueError("MemPursuitPostprocessor needs the query (query_bundle= or "
                             "query_str=) to reorder nodes")
        return None

    def _postprocess_nodes(self, nodes: List[NodeWithScore],
                           query_bundle: Optional[QueryBundle] = None) -> List[NodeWithScore]:
        k = self._budget(nodes)

        def ours():
            kept = self._native(nodes, query_bundle)
            if kept is not None:
                return kept
            return self.candidate_pool(nodes, query_bundle).select(self._selector, k).items

        return read_or_native(ours, lambda: list(nodes)[:k], strict=self.strict,
                              framework="LlamaIndex")

    async def _apostprocess_nodes(self, nodes: List[NodeWithScore],
                                  query_bundle: Optional[QueryBundle] = None
                                  ) -> List[NodeWithScore]:
        k = self._budget(nodes)

        async def ours():
            kept = self._native(nodes, query_bundle)
            if kept is not None:
                return kept
            pool = await self.acandidate_pool(nodes, query_bundle)
            return pool.select(self._selector, k).items

        return await aread_or_native(ours, lambda: list(nodes)[:k], strict=self.strict,
                                     framework="LlamaIndex")


def _by_id(ids: list, found: list) -> list:
    """The stored vectors of ``found`` nodes in the order of ``ids`` (None where absent)."""
    by_id = {n.node_id: n.embedding for n in found}
    return [by_id.get(i) for i in ids]


def _role(text: str) -> Optional[str]:
    match = _ROLE.match(text)
    return match.group(1) if match else None
