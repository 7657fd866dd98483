"""MemPursuit as a LlamaIndex node postprocessor.

LlamaIndex reads memories and documents through ``node_postprocessors``: ``VectorMemoryBlock``
(the vector block of ``llama_index.core.memory.Memory``), every retriever query engine and chat
engine run them on the retrieved ``NodeWithScore`` list. :class:`MemPursuitPostprocessor` is one
of them: ask the store for a pool (``similarity_top_k=200``) and it keeps the ``k`` nodes the
read policy picks, most useful first::

    VectorMemoryBlock(vector_store=store, embed_model=embed_model, similarity_top_k=200,
                      node_postprocessors=[MemPursuitPostprocessor(k=10, vector_store=store)])
    index.as_query_engine(similarity_top_k=200,
                          node_postprocessors=[MemPursuitPostprocessor(k=10, index=index)])

A postprocessor is handed only the nodes and the query: ``index=`` gives it what
:class:`MemPursuitRetriever` takes from the retriever it wraps, the index's embed model, vector
store (FAISS rows read by the index's id map) and docstore (the second read).

Where the vectors come from, in this order (:attr:`MemPursuitPostprocessor.vector_sources`
counts each per read):

1. ``"nodes"``: the query bundle's ``embedding`` and each node's own ``embedding``;
2. ``"store"``: otherwise the nodes' stored vectors, read by node id from ``vector_store=``:
   the in-memory ``SimpleVectorStore`` (``get``), Chroma (``include=["embeddings"]``), FAISS
   (``reconstruct``, through :class:`MemPursuitRetriever`, which knows the index's id map), and
   any store whose integration implements ``get_nodes`` with vectors (Qdrant, LanceDB, ...);
   the sync read runs in a thread on the async path when the store has no async client;
3. ``"embedded"``: otherwise the nodes' text embedded with ``embed_model`` (default
   ``Settings.embed_model``), cached by content hash, with one warning per postprocessor
   saying why (no store given, the store cannot read by id, the ids are not in that store).

A query with no embedding (``VectorMemoryBlock`` passes only the text; a retriever or query
engine sets it) is embedded with ``embed_model``. Signals (:func:`mempursuit_core.adapter.
metadata_signals`): the texts, ``timestamps`` / ``speakers`` / ``session_ids`` from the metadata
keys in ``metadata_keys`` when the nodes have them (``VectorMemoryBlock`` stores
``session_id``), the role of a ``VectorMemoryBlock`` message (``<message role='user'>``) as the
speaker when no metadata names one, and for documents ``titles`` (the ``title`` metadata, else
the file name's stem: ``file_name`` / ``file_path`` as ``SimpleDirectoryReader`` sets them) and
``session_ids`` (one per source document: its ``file_path``, else the node's ``ref_doc_id``).

The second read (the default policy's ``follow``): with ``docstore=`` (the index's;
:class:`MemPursuitRetriever` takes it from the index) and a ``vector_store=`` that filters on
metadata, the titles the first picks and the question name that no retrieved node carries are
fetched with one ``vector_store.query`` under ``MetadataFilters`` ``title IN [...]`` ANDed with
the caller's scope, their stored vectors read back by id. A postprocessor cannot see the
query engine's filters, so it reads the store a second time only within ``filters=`` (the
engine's own), or everywhere when told the store holds one scope (``whole_store=True``);
:class:`MemPursuitRetriever` hands over its retriever's filters (a retriever without any reads
the whole store, and so may the second read; one limited to ``doc_ids`` / ``node_ids`` has no
second read). Otherwise the second read is off, and one warning says how to turn it on. The
titles are read from the docstore once, and again after a write through the docstore's or the
store's own methods, or five minutes; the lookup has ``follow_timeout`` seconds (default 0.5),
after which the first read's order stands. A store that cannot filter (FAISS) gives the first
read's order and one warning.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Any, Dict, List, Mapping, Optional

import numpy as np
from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from mempursuit_core.adapter import (DEFAULT_METADATA_KEYS, CandidatePool, Fetched, ReadOptions,
                                    ReadTrace, Reranker, TitleIndex, TitleLookup, VectorResolver,
                                    TraceSlot, metadata_signals, native_scores, pool_signals,
                                    register_vector_reader, vector_reader_for, write_version)

__all__ = ["MemPursuitPostprocessor", "DEFAULT_METADATA_KEYS"]

logger = logging.getLogger(__name__)

_ROLE = re.compile(r"^\s*<message role='([^']+)'>")


class MemPursuitPostprocessor(BaseNodePostprocessor):
    """Keep the ``k`` retrieved nodes a read policy picks, in its order.

    Parameters
    ----------
    k : int or None, default None
        Budget ``K``; None reorders every node it is given.
    pool : int, default 200
        ``P``: the first ``pool`` retrieved nodes are the candidates (set the retriever's
        ``similarity_top_k`` to it). A ``k`` above ``pool`` makes the first ``k`` the
        candidates, with one warning; never more nodes than the retriever gave are returned.
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
        ``Settings.embed_model``, resolved only when needed. Pass the index's embed model when
        you call ``postprocess_nodes(nodes, query_str=...)`` yourself (a query engine or
        :class:`MemPursuitRetriever` hands over the query's embedding).
    vector_store : BasePydanticVectorStore, optional
        Where nodes' stored vectors are read by id when the nodes come without them
        (``index.vector_store``, not the index).
    metadata_keys : dict, optional
        ``{signal: metadata key}``, default :data:`DEFAULT_METADATA_KEYS`.
    docstore : BaseDocumentStore, optional
        The index's docstore (``index.docstore``): the titles the second read can follow and
        the fetched nodes' text; without it there is no second read.
    filters : MetadataFilters, optional
        The retriever's own filters (one user's scope), ANDed with the second read's.
    whole_store : bool, default False
        The store holds one scope: the second read may read all of it without ``filters=``.
        False: no second read without ``filters=``.
    follow_timeout : float or None, default 0.5
        Seconds the second read may take; past them the first read's order stands (one
        warning). None: no limit.
    index : VectorStoreIndex, optional
        The index a query or chat engine reads: ``embed_model``, ``vector_store`` and
        ``docstore`` default to the index's, and FAISS rows are read by its node id map. The
        index is not kept as a field.
    """

    k: Optional[int] = Field(default=None)
    pool: int = Field(default=200)
    policy: Any = Field(default=None)
    policy_options: Dict[str, Any] = Field(default_factory=dict)
    strict: bool = Field(default=False)
    embed_model: Optional[Any] = Field(default=None, exclude=True)
    vector_store: Optional[Any] = Field(default=None, exclude=True)
    metadata_keys: Dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_METADATA_KEYS))
    docstore: Optional[Any] = Field(default=None, exclude=True)
    filters: Optional[Any] = Field(default=None, exclude=True)
    whole_store: bool = Field(default=False)

    _options: ReadOptions = PrivateAttr()
    _reranker: Reranker = PrivateAttr()
    _vectors: VectorResolver = PrivateAttr(default_factory=lambda: VectorResolver(
        "llamaindex", item="node", own="nodes", log=logger,
        fix="Pass index= (the index the nodes come from) or vector_store= (a store that "
        "returns vectors by id), or keep embeddings on the nodes, to use the stored ones."))
    _store_ids: Any = PrivateAttr(default=None)
    _index: Any = PrivateAttr(default=None)
    _noted: bool = PrivateAttr(default=False)
    _trace: TraceSlot = PrivateAttr(default_factory=TraceSlot)

    def __init__(self, *, k: Optional[int] = None, pool: Optional[int] = None,
                 policy: Any = None, policy_options: Optional[Mapping[str, Any]] = None,
                 strict: Optional[bool] = None, embed_model: Any = None, vector_store: Any = None,
                 metadata_keys: Optional[Mapping[str, str]] = None, docstore: Any = None,
                 filters: Any = None, whole_store: bool = False, index: Any = None,
                 **options: Any):
        if not isinstance(whole_store, bool):
            raise TypeError(f"MemPursuitPostprocessor: whole_store must be True or False, got "
                            f"{whole_store!r}")
        store_ids = None
        if index is not None:
            if not (hasattr(index, "index_struct") and hasattr(index, "vector_store")):
                raise TypeError("MemPursuitPostprocessor: index= takes a LlamaIndex vector index "
                                f"(VectorStoreIndex), got {type(index).__name__}")
            if vector_store is None:
                vector_store = index.vector_store
                store_ids = functools.partial(_store_ids, index)  # read at each read
            embed_model = embed_model if embed_model is not None else getattr(
                index, "_embed_model", None)
            docstore = docstore if docstore is not None else getattr(index, "docstore", None)
        built = ReadOptions.build("MemPursuitPostprocessor", k=k, pool=pool, policy=policy,
                                  policy_options=policy_options, strict=strict, own=self.__init__,
                                  **options)
        if vector_store is not None and hasattr(vector_store, "index_struct") and hasattr(
                vector_store, "vector_store"):
            raise ValueError(f"MemPursuitPostprocessor: vector_store= takes the index's store, "
                             f"got the {type(vector_store).__name__} itself: pass "
                             "vector_store=index.vector_store")
        super().__init__(k=built.k, pool=built.pool, policy=built.policy,
                         policy_options=dict(built.policy_options), strict=built.strict,
                         embed_model=embed_model, vector_store=vector_store,
                         metadata_keys=dict(DEFAULT_METADATA_KEYS if metadata_keys is None
                                            else metadata_keys),
                         docstore=docstore, filters=filters, whole_store=whole_store)
        self._options = built
        self._reranker = Reranker(built, framework="LlamaIndex", where="MemPursuitPostprocessor",
                                  ids=lambda n: n.node.node_id, trace=self._trace)
        self._store_ids = store_ids

    @classmethod
    def class_name(cls) -> str:
        return "MemPursuitPostprocessor"

    @property
    def _selector(self):
        return self._reranker.selector

    @property
    def last_trace(self) -> Optional[ReadTrace]:
        """What the last read on this thread did (a :class:`~mempursuit_core.trace.ReadTrace`:
        nodes by node id), or None."""
        return self._trace.last

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

        try:
            return Settings.embed_model
        except Exception as exc:  # LlamaIndex resolves its OpenAI default here
            raise ValueError(f"MemPursuitPostprocessor has no embed model ({type(exc).__name__}: "
                             f"{exc}): pass index= (the index the engine reads) or embed_model= "
                             "(the one given to the index), or use "
                             "MemPursuitRetriever(index.as_retriever(...)), which takes the "
                             "retriever's") from exc

    def _resolve(self, nodes: list) -> dict:
        """What :meth:`VectorResolver.resolve` takes for ``nodes`` besides the embedding call:
        the node's own vector, else the store's by node id, else its text embedded."""
        return dict(own=[n.node.embedding for n in nodes], store=self.vector_store,
                    keys=lambda rows: [nodes[i].node.node_id for i in rows],
                    texts=lambda rows: [nodes[i].node.get_content(
                        metadata_mode=MetadataMode.EMBED) for i in rows],
                    embedder=lambda: type(self._model()).__name__, store_ids=self._ids)

    def _ids(self) -> Optional[Mapping[str, Any]]:
        """node id -> the store's own id (FAISS rows), read from the index at each read."""
        return self._store_ids() if callable(self._store_ids) else self._store_ids

    def _finish(self, nodes: list, vectors: list, query: QueryBundle, query_vector: Any
                ) -> CandidatePool[NodeWithScore]:
        dim = len(query_vector)
        return CandidatePool(nodes, np.asarray(query_vector, dtype=np.float32),
                             np.asarray(vectors, dtype=np.float32).reshape(len(nodes), dim),
                             native_scores=native_scores([n.score for n in nodes]),
                             signals=self._signals(nodes, query.query_str, query_vector))

    def _off(self, why: str) -> None:
        if not self._noted:
            self._noted = True
            logger.warning("mempursuit: MemPursuitPostprocessor's second read (the titles its "
                           "picks name, fetched from the store) is off: %s", why)

    def _title_lookup(self, query_vector: Any, query_text: str) -> Optional[TitleLookup]:
        """The second read within the caller's scope (None without a docstore and a vector
        store, or without a scope unless ``whole_store=True``)."""
        docstore, store = self.docstore, self.vector_store
        if docstore is None or store is None:
            self._off("pass index= (the index the engine reads), or use MemPursuitRetriever")
            return None
        if self.filters is None and not self.whole_store:
            self._off("it cannot see the query engine's filters, and the index may hold other "
                      "users' nodes: pass filters= (the engine's own), or whole_store=True if "
                      "the index holds one scope")
            return None
        if self._index is None:
            key = self.metadata_keys.get("titles", "title")
            writes = [write_version(docstore, _DOCSTORE_WRITES),
                      write_version(store, _STORE_WRITES)]

            def titles():
                return [n.metadata.get(key) for n in docstore.docs.values()]
            self._index = TitleIndex(titles, version=lambda: tuple(w() for w in writes),
                                     framework=type(store).__name__)
        return TitleLookup(self._index,
                           lambda names, limit: self._fetch(names, limit, query_vector,
                                                            query_text),
                           key=lambda n: n.node.node_id, timeout=self._options.follow_timeout,
                           index_scoped=self.filters is None)

    def _fetch(self, names: list, limit: int, query_vector: Any, query_text: str) -> Fetched:
        from llama_index.core.vector_stores.types import VectorStoreQuery

        found = self.vector_store.query(VectorStoreQuery(
            query_embedding=list(map(float, query_vector)), similarity_top_k=limit,
            filters=_scoped(self.metadata_keys.get("titles", "title"), names, self.filters)))
        ids = list(found.ids or [n.node_id for n in found.nodes or []])
        nodes = list(found.nodes or []) or [self.docstore.get_node(i) for i in ids]
        ids, nodes = ids[:len(nodes)], nodes[:len(ids)]
        scores = list(found.similarities or [None] * len(ids))[:len(ids)]
        scores += [None] * (len(ids) - len(scores))
        vectors = self._vectors.read(self.vector_store, ids, store_ids=self._ids)
        if vectors is None:
            raise ValueError(f"{type(self.vector_store).__name__} cannot return stored vectors "
                             "by node id")
        kept = [i for i, v in enumerate(vectors) if v is not None]
        hits = [NodeWithScore(node=nodes[i], score=scores[i]) for i in kept]
        dim = len(query_vector)
        return Fetched(hits, np.asarray([vectors[i] for i in kept],
                                        dtype=np.float32).reshape(len(kept), dim),
                       self._signals(hits, query_text, follow=False))

    def _signals(self, nodes: list, query_text: str, query_vector: Any = None,
                 follow: bool = True):
        texts = [n.node.get_content() for n in nodes]
        extra = metadata_signals([n.node.metadata for n in nodes], self.metadata_keys,
                                 sources=[n.node.ref_doc_id for n in nodes])
        key = self.metadata_keys.get("speakers")
        if key is not None:
            speakers = [n.node.metadata.get(key) for n in nodes]
            speakers = [v if v is not None else _role(t) for v, t in zip(speakers, texts)]
            if any(v is not None for v in speakers):
                extra["speakers"] = speakers
        if follow and "titles" in extra and query_vector is not None:
            lookup = self._title_lookup(query_vector, query_text)
            if lookup is not None:
                extra["title_lookup"] = lookup
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
        nodes = self._reranker.candidates(nodes)
        vectors = self._vectors.resolve(
            len(nodes), embed=lambda texts: self._model().get_text_embedding_batch(texts),
            **self._resolve(nodes))
        query_vector = query_bundle.embedding
        if query_vector is None and nodes:
            query_vector = self._model().get_query_embedding(query_bundle.query_str)
        return self._finish(nodes, vectors, query_bundle, query_vector or [0.0])

    async def acandidate_pool(self, nodes: List[NodeWithScore], query_bundle: QueryBundle
                              ) -> CandidatePool[NodeWithScore]:
        """:meth:`candidate_pool` with the store's and the embed model's async calls."""
        nodes = self._reranker.candidates(nodes)
        vectors = await self._vectors.aresolve(
            len(nodes), aembed=lambda texts: self._model().aget_text_embedding_batch(texts),
            aread=_aread if _has_async_reader(self.vector_store) else None,
            **self._resolve(nodes))
        query_vector = query_bundle.embedding
        if query_vector is None and nodes:
            query_vector = await self._model().aget_query_embedding(query_bundle.query_str)
        return self._finish(nodes, vectors, query_bundle, query_vector or [0.0])

    # -- postprocessing ------------------------------------------------------------------------

    def _check_query(self, nodes: list, query_bundle: Optional[QueryBundle]) -> None:
        if query_bundle is None and nodes and not self._reranker.is_native:
            raise ValueError("MemPursuitPostprocessor needs the query (query_bundle= or "
                             "query_str=) to reorder nodes")

    def _postprocess_nodes(self, nodes: List[NodeWithScore],
                           query_bundle: Optional[QueryBundle] = None) -> List[NodeWithScore]:
        def build(candidates):
            self._check_query(candidates, query_bundle)
            return self.candidate_pool(candidates, query_bundle)

        return self._reranker.rerank(nodes, build, strict=self.strict,
                                     query=_query_text(query_bundle))

    async def _apostprocess_nodes(self, nodes: List[NodeWithScore],
                                  query_bundle: Optional[QueryBundle] = None
                                  ) -> List[NodeWithScore]:
        async def build(candidates):
            self._check_query(candidates, query_bundle)
            return await self.acandidate_pool(candidates, query_bundle)

        return await self._reranker.arerank(nodes, build, strict=self.strict,
                                            query=_query_text(query_bundle))


def _query_text(query_bundle: Optional[QueryBundle]) -> Optional[str]:
    """The text a blank query is told by: none where the query came as a vector (no text and
    an embedding given) or with texts of its own to embed."""
    if query_bundle is None or query_bundle.custom_embedding_strs:
        return None
    if not query_bundle.query_str and query_bundle.embedding is not None:
        return None
    return query_bundle.query_str


def _read_simple(store: Any, ids: list, **_: Any) -> list:
    table = store.data.embedding_dict
    return [table.get(i) for i in ids]


def _read_faiss(store: Any, ids: list, store_ids: Any = None, **_: Any) -> Optional[list]:
    """``store_ids``: ``() -> {node id: FAISS row}``, the map the index keeps (None without
    the index: the store alone cannot say which row holds a node)."""
    store_ids = store_ids() if callable(store_ids) else store_ids
    if store_ids is None:
        return None
    index = store._faiss_index
    rows = [store_ids.get(i) for i in ids]
    return [None if r is None else index.reconstruct(int(r)).tolist() for r in rows]


def _read_chroma(store: Any, ids: list, **_: Any) -> list:
    got = store._collection.get(ids=list(ids), include=["embeddings"])
    by_id = dict(zip(got["ids"], got["embeddings"] if got["embeddings"] is not None
                     else [None] * len(got["ids"])))
    return [None if by_id.get(i) is None else list(map(float, by_id[i])) for i in ids]


def _read_nodes(store: Any, ids: list, **_: Any) -> Optional[list]:
    """Any other vector store: its own ``get_nodes`` (None where it has none)."""
    try:
        return _by_id(ids, store.get_nodes(node_ids=ids))
    except NotImplementedError:
        return None


async def _aread(store: Any, ids: list, **_: Any) -> Optional[list]:
    try:
        return _by_id(ids, await store.aget_nodes(node_ids=ids))
    except NotImplementedError:
        return None


for _path, _reader in (("llama_index.core.vector_stores.simple.SimpleVectorStore", _read_simple),
                       ("llama_index.vector_stores.faiss.base.FaissVectorStore", _read_faiss),
                       ("llama_index.vector_stores.chroma.base.ChromaVectorStore", _read_chroma),
                       ("llama_index.core.vector_stores.types.BasePydanticVectorStore",
                        _read_nodes)):
    register_vector_reader(_path, _reader, framework="llamaindex")


#: the methods through which a docstore and a vector store change (the title index follows them)
_DOCSTORE_WRITES = ("add_documents", "async_add_documents", "delete_document",
                    "adelete_document", "delete_ref_doc", "adelete_ref_doc")
_STORE_WRITES = ("add", "async_add", "delete", "adelete", "delete_nodes", "adelete_nodes",
                 "clear", "aclear")


def _scoped(key: str, names: list, filters: Any) -> Any:
    """``key IN names`` ANDed with the caller's ``filters``: one flat ``MetadataFilters`` where
    the scope is a list of conditions under AND (the in-memory store takes no nested filters),
    nested otherwise."""
    from llama_index.core.vector_stores.types import (FilterCondition, FilterOperator,
                                                      MetadataFilter, MetadataFilters)

    wanted = MetadataFilter(key=key, value=list(names), operator=FilterOperator.IN)
    if filters is None:
        return MetadataFilters(filters=[wanted])
    if isinstance(filters, MetadataFilter):
        return MetadataFilters(filters=[wanted, filters], condition=FilterCondition.AND)
    parts = list(getattr(filters, "filters", []) or [])
    condition = getattr(filters, "condition", None)
    if (all(isinstance(f, MetadataFilter) for f in parts)
            and (condition in (None, FilterCondition.AND) or len(parts) <= 1)):
        return MetadataFilters(filters=[wanted, *parts], condition=FilterCondition.AND)
    return MetadataFilters(filters=[MetadataFilters(filters=[wanted]), filters],
                           condition=FilterCondition.AND)


def _store_ids(index: Any) -> Dict[str, Any]:
    """node id -> the vector store's own id, from the index's struct (FAISS rows)."""
    nodes = getattr(index.index_struct, "nodes_dict", None) or {}
    return {node_id: store_id for store_id, node_id in nodes.items()}


def _has_async_reader(store: Any) -> bool:
    """Whether the store is read through its own ``aget_nodes`` (an async client): its reader
    is the generic ``get_nodes`` one (the in-memory, FAISS and Chroma stores have readers of
    their own), and it holds an async client."""
    return (vector_reader_for(store, "llamaindex") is _read_nodes
            and getattr(store, "_aclient", True) is not None)  # e.g. Qdrant with a sync client


def _by_id(ids: list, found: list) -> list:
    """The stored vectors of ``found`` nodes in the order of ``ids`` (None where absent)."""
    by_id = {n.node_id: n.embedding for n in found or []}
    return [by_id.get(i) for i in ids]


def _role(text: str) -> Optional[str]:
    match = _ROLE.match(text)
    return match.group(1) if match else None
