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
store, on its metadata for FAISS, a ``$in`` filter for Chroma) ANDed with the caller's scope,
their stored vectors read back. The retriever's scope is its own ``filter`` (none: the whole
store, as its first read); the compressor cannot see its base retriever's, so it reads the store
a second time only within ``filter=`` (the base retriever's, in the store's format), or
everywhere when told the store holds one scope (``whole_store=True``); otherwise the second
read is off and one warning says how to turn it on. The store's titles within the scope are
indexed once, and again after a write through the store's own methods, a change of its size, or
five minutes; the lookup has ``follow_timeout`` seconds (default 0.5), after which the first
read's order stands. Other stores: no second read (one log line).

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

from mempursuit_core.adapter import (CandidatePool, DEFAULT_METADATA_KEYS, Fetched, ReadOptions,
                                     ReadTrace, Reranker, TitleIndex, TitleLookup, TraceSlot,
                                     VectorResolver, aread_or_native, blank_query,
                                     metadata_signals, pool_signals, read_or_native,
                                     register_vector_reader, warn_short_budget, write_version)

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


#: the methods through which a LangChain vector store changes (the title index follows them)
_WRITES = ("add_documents", "aadd_documents", "add_texts", "aadd_texts", "add_embeddings",
           "delete", "adelete", "upsert", "aupsert", "merge_from")
#: search keyword arguments the second read keeps (its own filter is ANDed with ``filter``)
_KEPT = frozenset({"filter", "fetch_k", "score_threshold", "lambda_mult"})


def _title_reader(store: Any, key: str, scope: Any) -> "tuple | str":
    """``(titles, version, filter_for, in_scope)`` of a store the second read can filter by
    title within ``scope`` (the caller's ``filter``, None: the whole store), else why not:
    the store's titles within the scope, a cheap version, the store's filter for a list of
    titles ANDed with the scope, and a check that a document is inside it (or None)."""
    from langchain_core.vectorstores import InMemoryVectorStore

    name = type(store).__name__
    if isinstance(store, InMemoryVectorStore):
        if scope is not None and not callable(scope):
            return f"{name}'s filter is a function of the document, got {type(scope).__name__}"

        def inside(record: Mapping) -> bool:
            return scope is None or bool(scope(Document(
                id=record.get("id"), page_content=record.get("text", ""),
                metadata=record.get("metadata") or {})))
        writes = write_version(store, _WRITES)
        return ((lambda: [(r.get("metadata") or {}).get(key) for r in list(store.store.values())
                          if inside(r)]),
                lambda: (len(store.store), writes()),
                lambda names: (lambda doc, w=set(names): (
                    (doc.metadata or {}).get(key) in w and (scope is None or scope(doc)))),
                None if scope is None else (lambda doc: bool(scope(doc))))
    if name == "FAISS" and hasattr(store, "docstore"):
        table = getattr(store.docstore, "_dict", None)
        if table is None:
            return f"{name}'s docstore cannot list its documents"
        try:
            check = None if scope is None else store._create_filter_func(scope)
        except Exception as exc:  # noqa: BLE001 - a filter FAISS cannot read
            return f"{name} cannot read the filter {scope!r} ({exc})"
        writes = write_version(store, _WRITES)
        return ((lambda: [(d.metadata or {}).get(key) for d in list(table.values())
                          if check is None or check(d.metadata or {})]),
                lambda: (len(table), writes()),
                lambda names: (lambda meta, w=set(names): (
                    (meta or {}).get(key) in w and (check is None or check(meta or {})))),
                None if check is None else (lambda doc: bool(check(doc.metadata or {}))))
    if type(store).__module__.startswith("langchain_chroma"):
        if scope is not None and not isinstance(scope, dict):
            return f"{name}'s filter is a dict, got {type(scope).__name__}"
        writes = write_version(store, _WRITES)
        return ((lambda: [(m or {}).get(key) for m in
                          store.get(where=scope, include=["metadatas"])["metadatas"]]),
                lambda: (store._collection.count(), writes()),
                lambda names: ({key: {"$in": list(names)}} if scope is None
                               else {"$and": [scope, {key: {"$in": list(names)}}]}),
                None)
    return f"{name} cannot be filtered by title here"


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

    def __init__(self, embeddings: Any, vector_store: Any, metadata_keys: Mapping[str, str], *,
                 whole_store: bool = False, follow_timeout: Optional[float] = None,
                 where: str = "MemPursuitRetriever"):
        self.embeddings = embeddings
        self.vector_store = vector_store
        self.metadata_keys = dict(metadata_keys)
        self.whole_store, self.follow_timeout, self.where = whole_store, follow_timeout, where
        self._vectors = VectorResolver(
            "langchain", log=logger, fix="Pass vector_store= (the store they were retrieved "
            "from: InMemoryVectorStore, FAISS, Chroma or Qdrant) to use the stored ones.")
        self._indexes: Dict[str, Any] = {}
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

    def _off(self, why: str, warn: bool = True) -> None:
        if not self._noted:
            self._noted = True
            (logger.warning if warn else logger.info)(
                "mempursuit: %s's second read (the titles its picks name, fetched from the "
                "store) is off: %s", self.where, why)

    def title_lookup(self, query_vector: Any, query: str, scope: Any = None,
                     unkept: Sequence[str] = ()) -> Optional[TitleLookup]:
        """The second read through ``vector_store`` within ``scope`` (the caller's ``filter``;
        None: the whole store, only with ``whole_store``); None where the store cannot filter
        by title or the scope cannot be kept (said once)."""
        store = self.vector_store
        if store is None:
            self._off("pass vector_store= (InMemoryVectorStore, FAISS or Chroma)")
            return None
        if scope is None and not self.whole_store:
            self._off("it cannot see the base retriever's filter, and vector_store= may hold "
                      "other users' documents: pass filter= (the base retriever's, in the "
                      "store's format), or whole_store=True if the store holds one scope")
            return None
        if unkept:
            self._off(f"it cannot keep search_kwargs {sorted(unkept)} in a lookup by title")
            return None
        key = self.metadata_keys.get("titles", "title")
        scope_key = repr(scope) if not callable(scope) else f"callable:{id(scope)}"
        if scope_key not in self._indexes:
            reader = _title_reader(store, key, scope)
            if len(self._indexes) >= 64:  # one per scope (user): keep the newest 64
                self._indexes.pop(next(iter(self._indexes)))
            self._indexes[scope_key] = reader if isinstance(reader, str) else (
                TitleIndex(reader[0], version=reader[1], framework=type(store).__name__),
                reader[2], reader[3])
        reader = self._indexes[scope_key]
        if isinstance(reader, str):
            self._off(reader, warn=scope is not None)
            return None
        index, filter_for, in_scope = reader

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
                            "titles": [(d.metadata or {}).get(key) for d in docs],
                            **metadata_signals([d.metadata for d in docs], self.metadata_keys)})
        return TitleLookup(index, fetch, key=lambda d: d.id or d.page_content,
                           in_scope=in_scope, timeout=self.follow_timeout)

    def _pool(self, docs, vectors, query, query_vector, scope=None, unkept=()
              ) -> CandidatePool[Document]:
        texts = [d.page_content for d in docs]
        extra = metadata_signals([d.metadata for d in docs], self.metadata_keys)
        if "titles" in extra:
            lookup = self.title_lookup(query_vector, query, scope, unkept)
            if lookup is not None:
                extra["title_lookup"] = lookup
        qv = np.asarray(query_vector, dtype=np.float32)
        return CandidatePool(docs, qv, np.asarray(vectors, dtype=np.float32).reshape(len(docs), -1)
                             if docs else np.empty((0, qv.shape[0]), dtype=np.float32),
                             signals=pool_signals(texts, query, **extra))

    def candidate_pool(self, docs: Sequence[Document], query: str, scope: Any = None,
                       unkept: Sequence[str] = ()) -> CandidatePool[Document]:
        """The documents (native order) with their vectors, the query vector and the signals
        (the second read within ``scope``, the caller's ``filter``)."""
        docs = list(docs)
        vectors = self._vectors.resolve(len(docs), embed=self._model().embed_documents,
                                        **self._resolve(docs))
        return self._pool(docs, vectors, query, self._model().embed_query(query), scope, unkept)

    async def acandidate_pool(self, docs: Sequence[Document], query: str, scope: Any = None,
                              unkept: Sequence[str] = ()) -> CandidatePool[Document]:
        """:meth:`candidate_pool` with the embeddings' async calls (store reads in a thread)."""
        docs = list(docs)
        vectors = await self._vectors.aresolve(
            len(docs), aembed=lambda texts: self._model().aembed_documents(texts),
            **self._resolve(docs))
        return self._pool(docs, vectors, query, await self._model().aembed_query(query), scope,
                          unkept)


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
    _trace: TraceSlot = PrivateAttr(default_factory=TraceSlot)

    def _setup(self, where: str, k, pool, policy, policy_options, strict, options) -> dict:
        built = ReadOptions.build(where, k=k, pool=pool, policy=policy,
                                  policy_options=policy_options, strict=strict, own=self.__init__,
                                  **options)
        return {"k": built.k, "pool": built.pool, "policy": built.policy,
                "policy_options": dict(built.policy_options), "strict": built.strict}, built

    def _select(self, pool: CandidatePool, k: int) -> list:
        return pool.select(self._selector, k).items

    @property
    def last_trace(self) -> Optional[ReadTrace]:
        """What the last read on this thread did (a :class:`~mempursuit_core.trace.ReadTrace`:
        documents by ``Document.id``, else by position), or None."""
        return self._trace.last

    def _traced(self) -> dict:
        """The keywords of :func:`read_or_native` that record this read's trace."""
        return {"trace": self._trace, "ids": _doc_id, "result_items": list}

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
    filter : optional
        The base retriever's scope, in the store's own filter format (its ``search_kwargs``'
        ``filter``): the second read stays inside it.
    whole_store : bool, default False
        The store holds one scope: the second read may read all of it without ``filter=``.
        False: no second read without ``filter=``.
    follow_timeout : float or None, default 0.5
        Seconds the second read may take; past them the first read's order stands (one
        warning). None: no limit.
    """

    vector_store: Optional[Any] = None
    filter: Optional[Any] = None
    whole_store: bool = False

    def __init__(self, *, k: Optional[int] = None, pool: Optional[int] = None, policy: Any = None,
                 policy_options: Optional[Mapping[str, Any]] = None,
                 strict: Optional[bool] = None, embeddings: Any = None, vector_store: Any = None,
                 metadata_keys: Optional[Mapping[str, str]] = None, filter: Any = None,
                 whole_store: bool = False, **options: Any):
        fields, built = self._setup("MemPursuitCompressor", k, pool, policy, policy_options,
                                    strict, options)
        if not isinstance(whole_store, bool):
            raise TypeError(f"MemPursuitCompressor: whole_store must be True or False, got "
                            f"{whole_store!r}")
        keys = dict(DEFAULT_METADATA_KEYS if metadata_keys is None else metadata_keys)
        super().__init__(**fields, embeddings=embeddings, vector_store=vector_store,
                         metadata_keys=keys, filter=filter, whole_store=whole_store)
        self._reranker = Reranker(built, framework="LangChain", where="MemPursuitCompressor",
                                  ids=_doc_id, trace=self._trace)
        self._options, self._selector = built, built.selector()
        self._pool_builder = DocumentPool(embeddings, vector_store, keys, whole_store=whole_store,
                                          follow_timeout=built.follow_timeout,
                                          where="MemPursuitCompressor")

    def candidate_pool(self, documents: Sequence[Document], query: str) -> CandidatePool[Document]:
        """The first ``pool`` documents as a :class:`CandidatePool` (see :class:`DocumentPool`)."""
        return self._pool_builder.candidate_pool(self._reranker.candidates(documents), query,
                                                 self.filter)

    def compress_documents(self, documents: Sequence[Document], query: str,
                           callbacks: Any = None) -> Sequence[Document]:
        return self._reranker.rerank(
            documents, lambda docs: self._pool_builder.candidate_pool(docs, query, self.filter),
            strict=self.strict, query=query)

    async def acompress_documents(self, documents: Sequence[Document], query: str,
                                  callbacks: Any = None) -> Sequence[Document]:
        async def build(docs):
            return await self._pool_builder.acandidate_pool(docs, query, self.filter)

        return await self._reranker.arerank(documents, build, strict=self.strict, query=query)


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
        # the second read keeps the retriever's own filter (none: the whole store, as its read)
        self._pool_builder = DocumentPool(embeddings, vectorstore, keys, whole_store=True,
                                          follow_timeout=built.follow_timeout)

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
        return self._pool_builder.candidate_pool(docs, query, search.get("filter"),
                                                 sorted(set(search) - _KEPT))

    async def acandidate_pool(self, query: str, **kwargs: Any) -> CandidatePool[Document]:
        """:meth:`candidate_pool` through the store's and the embeddings' async calls."""
        _, size, search = self._call(kwargs)
        docs = await self.vectorstore.asimilarity_search(query, k=size,
                                                         **self._pool_search(size, search))
        return await self._pool_builder.acandidate_pool(docs, query, search.get("filter"),
                                                        sorted(set(search) - _KEPT))

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> List[Document]:
        k, _, search = self._call(kwargs)

        def native() -> List[Document]:
            return self.vectorstore.similarity_search(query, k=k, **search)

        if self.is_native and self._options.budget_tokens is None:
            return read_or_native(native, native, strict=self.strict, framework="LangChain",
                                  **self._traced())
        if blank_query(query, "MemPursuitRetriever"):
            return native()
        return read_or_native(lambda: self._select(self.candidate_pool(query, **kwargs), k),
                              native, strict=self.strict, framework="LangChain", **self._traced())

    async def _aget_relevant_documents(self, query: str, *,
                                       run_manager: AsyncCallbackManagerForRetrieverRun,
                                       **kwargs: Any) -> List[Document]:
        k, _, search = self._call(kwargs)
        if not (self.is_native and self._options.budget_tokens is None) and blank_query(
                query, "MemPursuitRetriever"):
            return await self.vectorstore.asimilarity_search(query, k=k, **search)

        async def ours():
            if self.is_native and self._options.budget_tokens is None:
                return await native()
            return self._select(await self.acandidate_pool(query, **kwargs), k)

        async def native():
            return await self.vectorstore.asimilarity_search(query, k=k, **search)

        return await aread_or_native(ours, native, strict=self.strict, framework="LangChain",
                                     **self._traced())


def _doc_id(document: Document) -> Any:
    """A document's short id in a trace: its ``id``, else the ``_id`` a store put in its
    metadata (Qdrant's), else None (the trace shows its position)."""
    return document.id if document.id is not None else (document.metadata or {}).get("_id")


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
