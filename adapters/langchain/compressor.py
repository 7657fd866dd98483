"""MemPursuit for LangChain: a document compressor and a vector-store retriever.

* :class:`MemPursuitCompressor` is a ``BaseDocumentCompressor``: put it in a
  ``ContextualCompressionRetriever`` over a base retriever that fetches the pool, and it keeps
  the ``k`` documents the read policy picks, most useful first::

      ContextualCompressionRetriever(
          base_compressor=MemPursuitCompressor(k=10, vector_store=store),
          base_retriever=store.as_retriever(search_kwargs={"k": 200}))

* :class:`MemPursuitRetriever` does both steps over any ``VectorStore``: it asks the store for
  ``pool`` candidates (``similarity_search``, as MMR search does with ``fetch_k``) and returns
  ``k``: ``MemPursuitRetriever(vectorstore=store, k=10)`` in place of
  ``store.as_retriever(search_kwargs={"k": 10})``.

Where the vectors come from (:attr:`DocumentPool.sources` counts each):

1. ``"store"``: the documents' stored vectors, read by id from the vector store where it keeps
   them and says where: ``InMemoryVectorStore`` (``store.store[id]["vector"]``),
   ``langchain_qdrant.QdrantVectorStore`` (``client.retrieve(..., with_vectors=True)`` by the
   ``_id`` in the metadata), ``langchain_community`` ``FAISS`` (``index.reconstruct`` of the
   document's row) and ``langchain_chroma.Chroma`` (``get(ids, include=["embeddings"])``);
2. ``"embedded"``: otherwise the documents' text embedded with ``embeddings`` (default the
   store's), cached by content hash, with one warning per component saying why.

The query is embedded with the same ``embeddings``. Signals
(:func:`mempursuit_core.adapter.metadata_signals`): the texts, ``timestamps`` / ``speakers`` /
``session_ids`` from the metadata keys in ``metadata_keys`` when the documents have them, and
for documents ``titles`` (the ``title`` metadata, else the stem of ``source`` / ``file_name``:
what LangChain's loaders set) and ``session_ids`` (one per source document).

The second read (the default policy's ``follow``): with ``vector_store=`` an
``InMemoryVectorStore``, ``FAISS`` or ``Chroma``, the titles the first picks and the question name
that no retrieved document carries are fetched with one ``similarity_search_by_vector`` under the
store's own filter on the ``title`` metadata (a predicate on the document for the in-memory
store, on its metadata for FAISS, a ``$in`` filter for Chroma), their stored vectors read back; the store's titles are read once
(again when its size changes). Other stores: no second read (one log line).

Budget rule (all three readers): the candidates are the first ``max(pool, k)``; a ``k`` above
``pool`` is logged once per component.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np
from langchain_core.callbacks import (AsyncCallbackManagerForRetrieverRun,
                                      CallbackManagerForRetrieverRun)
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from mempursuit_core.adapter import (DEFAULT_METADATA_KEYS, CandidatePool, Fetched, ReadOptions,
                                    Reranker, TitleLookup, VectorResolver, aread_or_native,
                                    metadata_signals, pool_signals, read_or_native,
                                    register_vector_reader, warn_short_budget)

__all__ = ["DEFAULT_METADATA_KEYS", "DocumentPool", "MemPursuitCompressor", "MemPursuitRetriever"]

logger = logging.getLogger(__name__)

#: LangChain's own default ``k`` of a vector-store retriever (``as_retriever()``)
LANGCHAIN_K = 4


def _read_memory(store: Any, docs: Sequence[Document], **_: Any) -> List[Any]:
    return [store.store.get(d.id or "", {}).get("vector") for d in docs]


def _read_qdrant(store: Any, docs: Sequence[Document], **_: Any) -> List[Any]:
    ids = [d.metadata.get("_id") for d in docs]
    points = store.client.retrieve(store.collection_name, [i for i in ids if i is not None],
                                   with_vectors=True, with_payload=False)
    by_id = {str(p.id): p.vector for p in points}
    out = []
    for i in ids:
        vec = by_id.get(str(i))
        out.append(vec.get(store.vector_name) if isinstance(vec, dict) else vec)
    return out


def _read_faiss(store: Any, docs: Sequence[Document], **_: Any) -> List[Any]:
    rows = {doc_id: row for row, doc_id in store.index_to_docstore_id.items()}
    found = [rows.get(d.id) if d.id is not None else None for d in docs]
    return [None if r is None else store.index.reconstruct(int(r)).tolist() for r in found]


def _read_chroma(store: Any, docs: Sequence[Document], **_: Any) -> List[Any]:
    ids = [d.id for d in docs if d.id is not None]
    got = store._collection.get(ids=ids, include=["embeddings"]) if ids else {"ids": []}
    vecs = got.get("embeddings")
    by_id = dict(zip(got["ids"], vecs if vecs is not None else [None] * len(got["ids"])))
    return [None if by_id.get(d.id) is None else [float(x) for x in by_id[d.id]] for d in docs]


# the stores whose vectors are read back by id (the documents LangChain returns carry none)
for _path, _reader in (("langchain_core.vectorstores.in_memory.InMemoryVectorStore", _read_memory),
                       ("langchain_qdrant.qdrant.QdrantVectorStore", _read_qdrant),
                       ("langchain_qdrant.vectorstores.Qdrant", _read_qdrant),
                       ("langchain_community.vectorstores.faiss.FAISS", _read_faiss),
                       ("langchain_chroma.vectorstores.Chroma", _read_chroma)):
    register_vector_reader(_path, _reader, framework="langchain")


def _title_reader(store: Any, key: str) -> Optional[tuple]:
    """``(titles, size, filter_for)`` of a store the second read can filter by title, else
    None: every stored title, the store's size, and the store's filter for a list of titles."""
    from langchain_core.vectorstores import InMemoryVectorStore

    def predicate(names):
        wanted = set(names)
        return lambda doc: (doc.metadata or {}).get(key) in wanted

    if isinstance(store, InMemoryVectorStore):
        return ((lambda: [(r.get("metadata") or {}).get(key) for r in store.store.values()]),
                lambda: len(store.store), predicate)
    if type(store).__name__ == "FAISS" and hasattr(store, "docstore"):
        table = getattr(store.docstore, "_dict", None)
        if table is None:
            return None
        return ((lambda: [(d.metadata or {}).get(key) for d in table.values()]),
                lambda: len(table),
                lambda names: (lambda meta, wanted=set(names): (meta or {}).get(key) in wanted))
    if type(store).__module__.startswith("langchain_chroma"):
        return ((lambda: [(m or {}).get(key) for m in
                          store.get(include=["metadatas"])["metadatas"]]),
                lambda: store._collection.count(),
                lambda names: {key: {"$in": list(names)}})
    return None


class DocumentPool:
    """Builds the :class:`CandidatePool` of retrieved documents (shared by both components).

    Parameters
    ----------
    embeddings : Embeddings or None
        Embeds the query and documents whose vectors the store cannot return.
    vector_store : VectorStore or None
        Where stored vectors are read by id.
    metadata_keys : dict
        ``{signal: metadata key}``.
    """

    def __init__(self, embeddings: Any, vector_store: Any, metadata_keys: Mapping[str, str]):
        self.embeddings = embeddings
        self.vector_store = vector_store
        self.metadata_keys = dict(metadata_keys)
        self._vectors = VectorResolver(
            "langchain", log=logger, fix="Pass vector_store= (the store they were retrieved "
            "from: InMemoryVectorStore, FAISS, Chroma or Qdrant) to use the stored ones.")
        self._lookup: Any = None
        self._noted = False

    @property
    def sources(self) -> Dict[str, int]:
        """How many document vectors came from each source so far (``store``, ``embedded``)."""
        return self._vectors.sources

    def _model(self):
        model = self.embeddings
        if model is None and self.vector_store is not None:
            model = self.vector_store.embeddings
        if model is None:
            raise ValueError("no embeddings to embed the query with: pass embeddings= (or a "
                             "vector_store= that has them)")
        return model

    def _resolve(self, docs: list) -> dict:
        """What :meth:`VectorResolver.resolve` takes for ``docs`` besides the embedding call."""
        return dict(own=None, store=self.vector_store, keys=lambda rows: [docs[i] for i in rows],
                    texts=lambda rows: [docs[i].page_content for i in rows],
                    embedder=lambda: type(self._model()).__name__)

    def title_lookup(self, query_vector: Any, query: str) -> Optional[TitleLookup]:
        """The second read through ``vector_store`` (None where the store cannot filter by
        title, said once)."""
        store = self.vector_store
        key = self.metadata_keys.get("titles", "title")
        reader = _title_reader(store, key) if store is not None else None
        if reader is None:
            if not self._noted:
                self._noted = True
                logger.info("mempursuit: %s cannot be filtered by title here, so the second "
                            "read is off", "no vector_store= given" if store is None
                            else type(store).__name__)
            return None
        titles, size, filter_for = reader
        if self._lookup is None:
            self._lookup = TitleLookup(titles, None, version=size,
                                       framework=type(store).__name__)

        # FAISS filters only among its fetch_k nearest: ask it to look at every row
        wide = ({"fetch_k": int(store.index.ntotal)} if type(store).__name__ == "FAISS"
                else {})

        def fetch(names: List[str], limit: int) -> Fetched:
            found = store.similarity_search_by_vector(list(map(float, query_vector)), k=limit,
                                                      filter=filter_for(names), **wide)
            vectors = self._vectors.read(store, found) or [None] * len(found)
            docs = [d for d, v in zip(found, vectors) if v is not None]
            rows = [v for v in vectors if v is not None]
            dim = len(query_vector)
            return Fetched(docs, np.asarray(rows, dtype=np.float32).reshape(len(docs), dim),
                           {"texts": [d.page_content for d in docs],
                            **metadata_signals([d.metadata for d in docs], self.metadata_keys)})
        return self._lookup.with_fetch(fetch)

    def _pool(self, docs, vectors, query, query_vector) -> CandidatePool[Document]:
        texts = [d.page_content for d in docs]
        extra = metadata_signals([d.metadata for d in docs], self.metadata_keys)
        if "titles" in extra:
            lookup = self.title_lookup(query_vector, query)
            if lookup is not None:
                extra["title_lookup"] = lookup
        qv = np.asarray(query_vector, dtype=np.float32)
        return CandidatePool(docs, qv, np.asarray(vectors, dtype=np.float32).reshape(len(docs), -1)
                             if docs else np.empty((0, qv.shape[0]), dtype=np.float32),
                             signals=pool_signals(texts, query, **extra))

    def candidate_pool(self, docs: Sequence[Document], query: str) -> CandidatePool[Document]:
        """The documents (native order) with their vectors, the query vector and the signals."""
        docs = list(docs)
        vectors = self._vectors.resolve(len(docs), embed=self._model().embed_documents,
                                        **self._resolve(docs))
        return self._pool(docs, vectors, query, self._model().embed_query(query))

    async def acandidate_pool(self, docs: Sequence[Document], query: str
                              ) -> CandidatePool[Document]:
        """:meth:`candidate_pool` with the embeddings' async calls (store reads in a thread)."""
        docs = list(docs)
        vectors = await self._vectors.aresolve(
            len(docs), aembed=lambda texts: self._model().aembed_documents(texts),
            **self._resolve(docs))
        return self._pool(docs, vectors, query, await self._model().aembed_query(query))


class _ReadFields(BaseModel):
    """The options both classes share (pydantic fields), checked once, and the pool builder."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    k: Optional[int] = None
    pool: int = 200
    policy: Any = None
    policy_options: Dict[str, Any] = Field(default_factory=dict)
    strict: bool = False
    embeddings: Optional[Any] = None
    metadata_keys: Dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_METADATA_KEYS))

    _options: ReadOptions = PrivateAttr()
    _selector: Any = PrivateAttr()
    _pool_builder: DocumentPool = PrivateAttr()
    _reranker: Any = PrivateAttr(default=None)
    _warned_budget: bool = PrivateAttr(default=False)

    def _setup(self, where: str, k, pool, policy, policy_options, strict, options) -> dict:
        built = ReadOptions.build(where, k=k, pool=pool, policy=policy,
                                  policy_options=policy_options, strict=strict, **options)
        return {"k": built.k, "pool": built.pool, "policy": built.policy,
                "policy_options": dict(built.policy_options), "strict": built.strict}, built

    def _select(self, pool: CandidatePool, k: int) -> list:
        return pool.select(self._selector, k).items

    @property
    def vector_sources(self) -> Dict[str, int]:
        """How many document vectors came from each source so far (``store``, ``embedded``)."""
        return dict(self._pool_builder.sources)

    @property
    def is_native(self) -> bool:
        return self._options.is_native


class MemPursuitCompressor(_ReadFields, BaseDocumentCompressor):
    """Keep the ``k`` retrieved documents a read policy picks, in its order.

    Parameters
    ----------
    k : int or None, default None
        Budget ``K``; None reorders every document it is given.
    pool : int, default 200
        ``P``: the first ``pool`` documents are the candidates (the base retriever's ``k``).
    policy : str or Selector, default ``mempursuit_core.DEFAULT_POLICY``
        ``"native"`` keeps the first ``k`` documents as retrieved.
    policy_options : dict, optional
        Selector options; other keyword arguments are taken as selector options too.
    strict : bool, default False
        False: on any failure, one warning and the first ``k`` documents; True raises.
    embeddings : Embeddings, optional
        Embeds the query (and documents whose vectors the store cannot return); default the
        vector store's.
    vector_store : VectorStore, optional
        Where the documents' stored vectors are read by id.
    metadata_keys : dict, optional
        ``{signal: metadata key}``, default :data:`DEFAULT_METADATA_KEYS`.
    """

    vector_store: Optional[Any] = None

    def __init__(self, *, k: Optional[int] = None, pool: Optional[int] = None, policy: Any = None,
                 policy_options: Optional[Mapping[str, Any]] = None,
                 strict: Optional[bool] = None, embeddings: Any = None, vector_store: Any = None,
                 metadata_keys: Optional[Mapping[str, str]] = None, **options: Any):
        fields, built = self._setup("MemPursuitCompressor", k, pool, policy, policy_options,
                                    strict, options)
        keys = dict(DEFAULT_METADATA_KEYS if metadata_keys is None else metadata_keys)
        super().__init__(**fields, embeddings=embeddings, vector_store=vector_store,
                         metadata_keys=keys)
        self._reranker = Reranker(built, framework="LangChain", where="MemPursuitCompressor")
        self._options, self._selector = built, self._reranker.selector
        self._pool_builder = DocumentPool(embeddings, vector_store, keys)

    def candidate_pool(self, documents: Sequence[Document], query: str) -> CandidatePool[Document]:
        """The first ``pool`` documents as a :class:`CandidatePool` (see :class:`DocumentPool`)."""
        return self._pool_builder.candidate_pool(self._reranker.candidates(documents), query)

    def compress_documents(self, documents: Sequence[Document], query: str,
                           callbacks: Any = None) -> Sequence[Document]:
        return self._reranker.rerank(
            documents, lambda docs: self._pool_builder.candidate_pool(docs, query),
            strict=self.strict)

    async def acompress_documents(self, documents: Sequence[Document], query: str,
                                  callbacks: Any = None) -> Sequence[Document]:
        async def build(docs):
            return await self._pool_builder.acandidate_pool(docs, query)

        return await self._reranker.arerank(documents, build, strict=self.strict)


class MemPursuitRetriever(_ReadFields, BaseRetriever):
    """A retriever over any ``VectorStore``: ``pool`` candidates in, ``k`` out.

    Parameters
    ----------
    vectorstore : VectorStore
    k : int or None, default None
        Budget ``K``; None is ``search_kwargs["k"]`` when given, else LangChain's default
        retriever ``k`` (4).
    pool, policy, policy_options, strict, embeddings, metadata_keys
        As for :class:`MemPursuitCompressor`. ``policy="native"`` is exactly
        ``vectorstore.as_retriever(search_kwargs={"k": k, **search_kwargs})``.
    search_kwargs : dict, optional
        Passed to ``similarity_search`` (e.g. ``{"filter": ...}``). A ``"k"`` there is read as
        ``VectorStoreRetriever`` reads it: the number of documents returned (``k``); with
        ``k=`` given too, it is the number the store is asked for (``pool``). Where the store's
        search takes ``fetch_k`` (FAISS: candidates fetched before a filter), the pool read asks
        for at least ``pool``.

    Notes
    -----
    As with ``VectorStoreRetriever``, ``invoke(query, k=3, filter=...)`` sets ``k`` for that
    call and adds the other keyword arguments to ``search_kwargs``.
    """

    vectorstore: VectorStore
    search_kwargs: Dict[str, Any] = Field(default_factory=dict)

    def __init__(self, *, vectorstore: VectorStore, k: Optional[int] = None,
                 pool: Optional[int] = None, policy: Any = None,
                 policy_options: Optional[Mapping[str, Any]] = None,
                 strict: Optional[bool] = None, embeddings: Any = None,
                 search_kwargs: Optional[Mapping[str, Any]] = None,
                 metadata_keys: Optional[Mapping[str, str]] = None, **options: Any):
        search = dict(search_kwargs or {})
        k, pool = _k_from_search_kwargs(search.pop("k", None), k, pool)
        fields, built = self._setup("MemPursuitRetriever", k, pool, policy, policy_options,
                                    strict, options)
        keys = dict(DEFAULT_METADATA_KEYS if metadata_keys is None else metadata_keys)
        super().__init__(vectorstore=vectorstore, **fields, embeddings=embeddings,
                         search_kwargs=search, metadata_keys=keys)
        self._options, self._selector = built, built.selector()
        self._pool_builder = DocumentPool(embeddings, vectorstore, keys)

    def _sizes(self, k: Optional[int] = None) -> tuple[int, int]:
        if k is None:
            warn_short_budget(self, self._options, "MemPursuitRetriever")
            return self._options.sizes(LANGCHAIN_K if self._options.k is None else self._options.k)
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"MemPursuitRetriever: k must be a positive int, got {k!r}")
        return k, self._options.pool_size(k)  # a call's own k is the budget as given

    def _call(self, kwargs: Mapping[str, Any]) -> tuple[int, int, Dict[str, Any]]:
        """``(k, pool, search kwargs)`` of one call: ``invoke(query, k=..., filter=...)``
        overrides ``k`` and adds to ``search_kwargs``, as ``VectorStoreRetriever`` does."""
        extra = dict(kwargs)
        k, size = self._sizes(extra.pop("k", None))
        search = {**self.search_kwargs, **extra}
        search.pop("k", None)
        return k, size, search

    def _pool_search(self, size: int, search: Dict[str, Any]) -> Dict[str, Any]:
        """``search`` for the pool read: ``fetch_k`` raised to the pool where the store's
        search takes it (FAISS filters after fetching ``fetch_k``)."""
        if _takes(self.vectorstore.similarity_search, "fetch_k"):
            fetch_k = search.get("fetch_k")
            search = {**search, "fetch_k": max(size, fetch_k if isinstance(fetch_k, int) else 0)}
        return search

    def candidate_pool(self, query: str, **kwargs: Any) -> CandidatePool[Document]:
        """The store's top-``pool`` documents for ``query`` as a :class:`CandidatePool`."""
        _, size, search = self._call(kwargs)
        docs = self.vectorstore.similarity_search(query, k=size, **self._pool_search(size, search))
        return self._pool_builder.candidate_pool(docs, query)

    async def acandidate_pool(self, query: str, **kwargs: Any) -> CandidatePool[Document]:
        """:meth:`candidate_pool` through the store's and the embeddings' async calls."""
        _, size, search = self._call(kwargs)
        docs = await self.vectorstore.asimilarity_search(query, k=size,
                                                         **self._pool_search(size, search))
        return await self._pool_builder.acandidate_pool(docs, query)

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> List[Document]:
        k, _, search = self._call(kwargs)

        def native() -> List[Document]:
            return self.vectorstore.similarity_search(query, k=k, **search)

        if self.is_native:
            return native()
        return read_or_native(lambda: self._select(self.candidate_pool(query, **kwargs), k),
                              native, strict=self.strict, framework="LangChain")

    async def _aget_relevant_documents(self, query: str, *,
                                       run_manager: AsyncCallbackManagerForRetrieverRun,
                                       **kwargs: Any) -> List[Document]:
        k, _, search = self._call(kwargs)
        if self.is_native:
            return await self.vectorstore.asimilarity_search(query, k=k, **search)

        async def ours():
            return self._select(await self.acandidate_pool(query, **kwargs), k)

        async def native():
            return await self.vectorstore.asimilarity_search(query, k=k, **search)

        return await aread_or_native(ours, native, strict=self.strict, framework="LangChain")


def _k_from_search_kwargs(given: Any, k: Any, pool: Any) -> tuple[Any, Any]:
    """``(k, pool)`` with ``search_kwargs["k"]`` read as LangChain reads it: the ``k`` returned,
    or, with ``k=`` given too, the pool the store is asked for."""
    if given is None:
        return k, pool
    if isinstance(given, bool) or not isinstance(given, int) or given < 1:
        raise ValueError(f"MemPursuitRetriever: search_kwargs['k'] must be a positive int, got "
                         f"{given!r}")
    if k is None:
        return given, pool
    if pool is not None and pool != given:
        raise ValueError(f"MemPursuitRetriever: search_kwargs={{'k': {given}}} and pool={pool} "
                         "both set the pool: give it once (pool=)")
    return k, given


def _takes(method: Any, name: str) -> bool:
    try:
        return name in inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False
