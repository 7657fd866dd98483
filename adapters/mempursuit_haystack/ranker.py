"""MemPursuit as a Haystack ranker component.

A Haystack pipeline ranks documents in a ranker placed after its retriever. Ask the retriever
for a pool (``top_k=200``) and :class:`MemPursuitRanker` keeps the ``top_k`` the read policy
picks, most useful first::

    pipeline.add_component("retriever", InMemoryEmbeddingRetriever(store, top_k=200,
                                                                   return_embedding=True))
    pipeline.add_component("ranker", MemPursuitRanker(top_k=10))
    pipeline.connect("retriever.documents", "ranker.documents")
    pipeline.connect("embedder.embedding", "ranker.query_embedding")   # optional

    pipeline.run({"embedder": {"text": q}, "ranker": {"query": q}})

``run(query, documents, top_k=None, query_embedding=None)`` returns ``{"documents": [...]}``
like Haystack's own rankers.

Where the vectors come from, in this order (:attr:`MemPursuitRanker.vector_sources` counts
each):

1. ``"documents"``: each document's own ``embedding``: the embedding retrievers return it
   with ``return_embedding=True`` (``InMemoryEmbeddingRetriever``, Qdrant's, pgvector's,
   Chroma's; their default is False);
2. ``"store"``: otherwise the stored vectors, read by document id from ``document_store=``
   (``get_documents_by_id`` where the store has it: Qdrant, ...; else ``filter_documents`` on
   ``id``: ``InMemoryDocumentStore`` and any store that returns embeddings from it);
3. ``"embedded"``: otherwise the documents' ``content`` embedded with ``document_embedder=``
   (a document embedder component), else ``text_embedder=``, else the packaged MiniLM,
   cached by content hash, with one warning per ranker saying why.

The query vector: ``query_embedding`` when given (connect the text embedder's ``embedding``),
else the query embedded with ``text_embedder=``, else with the packaged MiniLM. Give the same
model the documents were embedded with.

Signals (:func:`mempursuit_core.adapter.metadata_signals`): the texts (``content``);
``timestamps`` / ``speakers`` / ``session_ids`` from the ``meta`` keys in ``metadata_keys``
when the documents have them; ``titles`` (``meta["title"]``, else the stem of ``file_path`` /
``file_name`` / ``source`` / ``url``) and ``session_ids`` (one per source document: those
keys, else the ``source_id`` Haystack's splitters set); the retriever's ``score``. A title
under another key: ``metadata_keys={"titles": "headline"}`` (the second read reads and fetches
that key too).

The second read (the default policy's ``follow``): with ``document_store=``, the titles the
first picks and the question name that no retrieved document carries are fetched with one
``filter_documents`` call on ``meta.title`` (or the ``titles`` key of ``metadata_keys``;
``"in"``), ANDed with ``filters=`` (the retriever's own scope, e.g. one user's ``meta.session_id``), their stored embeddings reused
(from an ``InMemoryDocumentStore``, whose filter scans every document, by id: the ids of each
title are read with the titles). A ranker cannot see the retriever's filters, so it reads the store a second time only inside
``filters=``, or everywhere when told the store holds one scope (``whole_store=True``);
otherwise the second read is off, and one warning says how to turn it on. The store's titles
(within the scope) are indexed once and again after a write through the store's own methods,
a change of ``count_documents()``, or five minutes; the lookup has ``follow_timeout`` seconds
(default 0.5), after which the first read's order stands.

Budget rule: the framework's ``top_k`` keeps its meaning (the number of documents returned;
None: all); ``k`` only caps it: ``K = min(k, top_k)``. The candidates are the first
``max(pool, K)`` documents; a ``K`` above ``pool`` is logged once.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Mapping, Optional

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict
from haystack.core.errors import SerializationError

from mempursuit_core.adapter import (DEFAULT_METADATA_KEYS, CandidatePool, Fetched, ReadOptions,
                                    Reranker, ScopedTitleIndexes, TitleLookup, VectorResolver,
                                    ReadTrace, TraceSlot, check_int, metadata_signals,
                                    native_scores, pool_signals)

__all__ = ["DEFAULT_METADATA_KEYS", "MemPursuitRanker"]

logger = logging.getLogger(__name__)


def _read_by_id(store: Any, ids: List[str], **_: Any) -> Optional[List[Any]]:
    """The stored vectors of document ``ids`` (None where absent), or None when the store
    cannot return documents by id (any Haystack store: a duck-typed read)."""
    if hasattr(store, "get_documents_by_id"):
        found = store.get_documents_by_id(list(ids))
    elif hasattr(store, "filter_documents"):
        found = store.filter_documents(filters={"field": "id", "operator": "in",
                                                "value": list(ids)})
    else:
        return None
    by_id = {d.id: d.embedding for d in found or []}
    return [by_id.get(i) for i in ids]


def _stock_in_memory(store: Any) -> bool:
    """Whether ``store`` is Haystack's ``InMemoryDocumentStore`` with its own filter (a scan of
    every document), so that the second read may fetch by id: a store that filters its own
    way (a subclass, a wrapped method) is asked through its filter."""
    try:
        from haystack.document_stores.in_memory import InMemoryDocumentStore
    except ImportError:  # pragma: no cover - the adapter needs haystack
        return False
    method = getattr(store, "filter_documents", None)
    return (isinstance(store, InMemoryDocumentStore)
            and isinstance(getattr(store, "storage", None), dict)
            and getattr(method, "__func__", None) is InMemoryDocumentStore.filter_documents)


#: the methods through which a Haystack document store changes (the title index follows them)
_WRITES = ("write_documents", "delete_documents", "delete_all_documents", "delete_by_filter",
           "update_by_filter", "write_documents_async", "delete_documents_async",
           "delete_all_documents_async", "delete_by_filter_async", "update_by_filter_async")


def _matcher(filters: Optional[Dict[str, Any]]) -> Optional[Any]:
    """``doc -> bool``: whether a document is inside ``filters`` (None without a scope)."""
    if not filters:
        return None
    from haystack.utils.filters import document_matches_filter

    return lambda doc: document_matches_filter(filters, doc)


@component
class MemPursuitRanker:
    """Keep the ``top_k`` retrieved documents a read policy picks, in its order.

    Parameters
    ----------
    top_k : int or None, default 10
        The number of documents returned (Haystack's rankers' ``top_k``; ``run(top_k=...)``
        overrides it); None returns every document, reordered.
    k : int or None, default None
        A cap on ``top_k`` (the shared read option): ``K = min(k, top_k)``.
    pool : int, default 200
        ``P``: the first ``max(pool, K)`` documents are the candidates (the retriever's
        ``top_k``).
    policy : str or Selector, default ``mempursuit_core.DEFAULT_POLICY``
        ``"native"`` returns the first ``top_k`` documents as retrieved.
    policy_options : dict, optional
        Selector options; other keyword arguments are taken as selector options too.
    strict : bool, default False
        False: on any failure, one warning and the first ``top_k`` documents as retrieved;
        True raises.
    document_store : DocumentStore, optional
        Where stored vectors are read by id when the documents come without them.
    text_embedder : component, optional
        Embeds the query when ``run`` gets no ``query_embedding`` (``run(text=...)`` ->
        ``{"embedding": ...}``); default the packaged MiniLM.
    document_embedder : component, optional
        Embeds documents without a vector anywhere (``run(documents=...)``); default the
        ``text_embedder``, else the packaged MiniLM.
    metadata_keys : dict, optional
        ``{signal: meta key}``, default :data:`DEFAULT_METADATA_KEYS`.
    filters : dict, optional
        Haystack filters that scope the second read (the retriever's own, e.g.
        ``{"field": "meta.session_id", "operator": "==", "value": user}``);
        ``run(filters=...)`` overrides them.
    whole_store : bool, default False
        The store holds one scope (one user's or one corpus's documents): the second read may
        read all of it without ``filters=``. False: no second read without ``filters=``.
    follow_timeout : float or None, default 0.5
        Seconds the second read may take; past them the first read's order stands (one
        warning). None: no limit.
    """

    def __init__(self, top_k: Optional[int] = 10, *, k: Optional[int] = None,
                 pool: Optional[int] = None, policy: Any = None,
                 policy_options: Optional[Mapping[str, Any]] = None,
                 strict: Optional[bool] = None, document_store: Any = None,
                 text_embedder: Any = None, document_embedder: Any = None,
                 metadata_keys: Optional[Mapping[str, str]] = None,
                 filters: Optional[Dict[str, Any]] = None, whole_store: bool = False,
                 **options: Any):
        check_int("top_k", top_k, allow_none=True)
        if not isinstance(whole_store, bool):
            raise TypeError(f"MemPursuitRanker: whole_store must be True or False, got "
                            f"{whole_store!r}")
        for name, part in (("text_embedder", text_embedder),
                           ("document_embedder", document_embedder)):
            if part is not None and not callable(getattr(part, "run", None)):
                raise TypeError(f"MemPursuitRanker: {name}= takes an embedder component (with "
                                f"run()), got {type(part).__name__}")
        if document_store is not None and not (hasattr(document_store, "filter_documents")
                                               or hasattr(document_store, "get_documents_by_id")):
            raise TypeError("MemPursuitRanker: document_store= takes a Haystack document store "
                            f"(filter_documents), got {type(document_store).__name__}")
        self._options = ReadOptions.build("MemPursuitRanker", k=k, pool=pool, policy=policy,
                                          policy_options=policy_options, strict=strict,
                                          own=self.__init__, **options)
        self.top_k = top_k
        self.k, self.pool = self._options.k, self._options.pool
        self.policy, self.strict = self._options.policy, self._options.strict
        self.policy_options = dict(self._options.policy_options)
        self.document_store = document_store
        self.text_embedder = text_embedder
        self.document_embedder = document_embedder
        self.metadata_keys = dict(DEFAULT_METADATA_KEYS if metadata_keys is None
                                  else metadata_keys)
        self._rerankers: Dict[int, Reranker] = {}
        self._vectors = VectorResolver(
            "haystack", own="documents", store_arg="document_store", fallback=_read_by_id,
            log=logger, fix="Set return_embedding=True on the retriever, or pass "
            "document_store=, to use the stored ones.")
        self._minilm = None
        self._trace = TraceSlot()
        self.filters = filters
        self.whole_store = whole_store
        self.follow_timeout = self._options.follow_timeout
        self.budget_tokens = self._options.budget_tokens
        self._indexes: Optional[ScopedTitleIndexes] = None  # the store's, one per scope
        self._title_ids: Dict[str, Dict[str, List[str]]] = {}  # in-memory store: title -> ids
        self._noted = False

    # -- set-up ----------------------------------------------------------------------------

    def warm_up(self) -> None:
        """Warm up the embedders given (a pipeline calls this before its first run)."""
        for part in (self.text_embedder, self.document_embedder):
            if part is not None and callable(getattr(part, "warm_up", None)):
                part.warm_up()

    def to_dict(self) -> Dict[str, Any]:
        """Serialise the ranker (``pipeline.dumps()``): its options, and the document store and
        embedders given to it through their own ``to_dict``.

        Raises
        ------
        SerializationError
            When ``policy`` is a selector object, not a registered name.
        """
        if not isinstance(self.policy, str):
            raise SerializationError(
                f"MemPursuitRanker: policy={type(self.policy).__name__}(...) is an object; a "
                "serialised pipeline needs a registered policy name (register the selector "
                "through a plugin, or build this ranker in code)")
        data = default_to_dict(self, top_k=self.top_k, k=self.k, pool=self.pool,
                               policy=self.policy, policy_options=self.policy_options,
                               strict=self.strict, document_store=self.document_store,
                               text_embedder=self.text_embedder,
                               document_embedder=self.document_embedder,
                               metadata_keys=self.metadata_keys, filters=self.filters,
                               whole_store=self.whole_store,
                               follow_timeout=self.follow_timeout)
        if self.budget_tokens is not None:
            data["init_parameters"]["budget_tokens"] = self.budget_tokens
        return data

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "MemPursuitRanker":
        """The ranker :meth:`to_dict` wrote (the store and embedders rebuilt by their
        ``from_dict``)."""
        return default_from_dict(cls, data)

    @property
    def last_trace(self) -> Optional[ReadTrace]:
        """What the last ``run`` on this thread did (a
        :class:`~mempursuit_core.trace.ReadTrace`: documents by id), or None."""
        return self._trace.last

    @property
    def vector_sources(self) -> Dict[str, int]:
        """How many document vectors came from each source so far: ``documents``, ``store``,
        ``embedded``."""
        return dict(self._vectors.sources)

    def _reranker(self, budget: int) -> Reranker:
        """The shared rerank rules for a read returning ``budget`` documents: the options with
        ``k`` = that budget, the one selector built at construction."""
        if budget not in self._rerankers:
            self._rerankers[budget] = Reranker(self._options.with_k(budget),
                                               framework="Haystack", where="MemPursuitRanker",
                                               ids=lambda d: d.id, trace=self._trace)
        return self._rerankers[budget]

    # -- vectors -----------------------------------------------------------------------------

    def _packaged(self):
        if self._minilm is None:
            from mempursuit_core.adapter import get_embedder

            self._minilm = get_embedder("minilm")
        return self._minilm

    def _embed_query(self, query: str) -> List[float]:
        if self.text_embedder is not None:
            return list(self.text_embedder.run(text=query)["embedding"])
        return self._packaged().encode([query])[0].tolist()

    def _embed_texts(self, texts: List[str]) -> List[List[float]]:
        if not texts:
            return []
        if self.document_embedder is not None:
            out = self.document_embedder.run(documents=[Document(content=t) for t in texts])
            return [list(d.embedding) for d in out["documents"]]
        if self.text_embedder is not None:
            return [list(self.text_embedder.run(text=t)["embedding"]) for t in texts]
        return self._packaged().encode(texts).tolist()

    def _document_vectors(self, docs: List[Document]) -> List[Any]:
        def embedder() -> str:
            part = self.document_embedder or self.text_embedder
            return type(part).__name__ if part is not None else "the packaged MiniLM"

        return self._vectors.resolve(
            len(docs), own=[d.embedding for d in docs], store=self.document_store,
            keys=lambda rows: [docs[i].id for i in rows],
            texts=lambda rows: [docs[i].content or "" for i in rows],
            embed=self._embed_texts, embedder=embedder)

    # -- the second read -----------------------------------------------------------------------

    def _scoped(self, condition: Optional[Dict[str, Any]], filters: Optional[Dict[str, Any]]
                ) -> Optional[Dict[str, Any]]:
        parts = [f for f in (filters, condition) if f]
        if len(parts) < 2:
            return parts[0] if parts else None
        return {"operator": "AND", "conditions": parts}

    def _off(self, why: str) -> None:
        if not self._noted:
            self._noted = True
            logger.warning("mempursuit: MemPursuitRanker's second read (the titles its picks "
                           "name, fetched from the store) is off: %s", why)

    def title_lookup(self, query: str, filters: Optional[Dict[str, Any]] = None
                     ) -> Optional[TitleLookup]:
        """The second read through ``document_store=`` within ``filters`` (None without a
        store, or without a scope unless ``whole_store=True``): the store's titles
        (``meta.title``) within the scope, and documents fetched by ``filter_documents`` on
        ``meta.title`` ANDed with the scope, with their stored embeddings; from an
        ``InMemoryDocumentStore``, whose filter scans every document, by id instead (the ids of
        each title read with the titles, once per store version)."""
        store = self.document_store
        if store is None or not hasattr(store, "filter_documents"):
            self._off("pass document_store= (the store the retriever reads), with filters= "
                      "(the retriever's own) or whole_store=True (a store of one scope)")
            return None
        if not filters and not self.whole_store:
            self._off("it cannot see the retriever's filters, and document_store= may hold "
                      "other users' documents: pass filters= (the retriever's own scope), or "
                      "whole_store=True if the store holds one scope")
            return None
        if self._indexes is None:
            count = getattr(store, "count_documents", None)
            self._indexes = ScopedTitleIndexes(store, _WRITES,
                                               count=count if callable(count) else None)

        key = self.metadata_keys.get("titles", "title")
        scope = repr((key, filters))
        by_id = _stock_in_memory(store)

        def titles():
            docs = store.filter_documents(filters)
            if by_id:  # the ids of each title, read with the titles: a fetch scans nothing
                ids: Dict[str, List[str]] = {}
                for d in docs:
                    ids.setdefault((d.meta or {}).get(key), []).append(d.id)
                self._title_ids[scope] = ids
            return [(d.meta or {}).get(key) for d in docs]
        index = self._indexes.index(scope, titles)

        def fetch(names: List[str], limit: int) -> Fetched:
            ids = self._title_ids.get(scope) if by_id else None
            if ids is not None:
                found = [store.storage.get(i) for t in names for i in ids.get(t, ())]
                found = [d for d in found if d is not None]  # deleted since: the scope check
            else:                                            # and the version do the rest
                found = store.filter_documents(self._scoped(
                    {"field": f"meta.{key}", "operator": "in", "value": names}, filters))
            rank = {t: i for i, t in enumerate(names)}
            docs = sorted((d for d in found or [] if d.embedding is not None),
                          key=lambda d: rank.get((d.meta or {}).get(key), len(rank)))
            extra = metadata_signals([d.meta for d in docs], self.metadata_keys,
                                     sources=[(d.meta or {}).get("source_id") for d in docs])
            d = len(docs[0].embedding) if docs else 0
            return Fetched(docs, np.asarray([x.embedding for x in docs],
                                            dtype=np.float32).reshape(len(docs), d),
                           {"texts": [x.content or "" for x in docs],
                            "titles": [(x.meta or {}).get(key) for x in docs], **extra})
        return TitleLookup(index, fetch, key=lambda d: d.id,
                           in_scope=_matcher(filters), timeout=self.follow_timeout)

    # -- the pool ----------------------------------------------------------------------------

    def candidate_pool(self, query: str, documents: List[Document],
                       query_embedding: Optional[List[float]] = None,
                       filters: Optional[Dict[str, Any]] = None
                       ) -> CandidatePool[Document]:
        """The documents (native order) with their vectors, the query vector and the signals.

        Parameters
        ----------
        query : str
        documents : list of Document, length P
            The candidates, in the retriever's order.
        query_embedding : list of float, length d, optional
            Default: the query embedded (``text_embedder``, else the packaged MiniLM).
        filters : dict, optional
            The second read's scope (default the ranker's ``filters``).

        Returns
        -------
        CandidatePool
            ``items`` the documents, ``vectors`` (P, d), ``query_vector`` (d,),
            ``native_scores`` (P,) the retriever's scores (None when any is missing).
        """
        docs = list(documents)
        if not isinstance(query, str):
            raise TypeError(f"MemPursuitRanker needs the query as a string, got "
                            f"{type(query).__name__}")
        vectors = self._document_vectors(docs)
        qv = np.asarray(query_embedding if query_embedding is not None
                        else self._embed_query(query), dtype=np.float32)
        if qv.ndim != 1:
            raise ValueError(f"query_embedding must be one vector, got shape {qv.shape}")
        texts = [d.content or "" for d in docs]
        extra = metadata_signals([d.meta for d in docs], self.metadata_keys,
                                 sources=[(d.meta or {}).get("source_id") for d in docs])
        matrix = (np.asarray(vectors, dtype=np.float32).reshape(len(docs), -1) if docs
                  else np.empty((0, qv.shape[0]), dtype=np.float32))
        if "titles" in extra:
            lookup = self.title_lookup(query, self.filters if filters is None else filters)
            if lookup is not None:
                extra["title_lookup"] = lookup
        return CandidatePool(docs, qv, matrix, native_scores=native_scores([d.score for d in docs]),
                             signals=pool_signals(texts, query, **extra))

    # -- the component -----------------------------------------------------------------------

    def _budget(self, top_k: Optional[int], available: int) -> int:
        if top_k is None:
            top_k = self.top_k
        else:
            check_int("top_k", top_k)
        return self._options.budget(available if top_k is None else top_k)

    @component.output_types(documents=List[Document])
    def run(self, query: str, documents: List[Document], top_k: Optional[int] = None,
            query_embedding: Optional[List[float]] = None,
            filters: Optional[Dict[str, Any]] = None) -> Dict[str, List[Document]]:
        """Reorder ``documents`` for ``query`` and keep ``top_k``.

        Parameters
        ----------
        query : str
        documents : list of Document
            The retriever's documents, its order.
        top_k : int, optional
            Overrides the ``top_k`` given at construction.
        query_embedding : list of float, optional
            The query's vector (connect the text embedder's ``embedding``).
        filters : dict, optional
            The second read's scope for this run (default the ranker's ``filters``).

        Returns
        -------
        dict
            ``{"documents": list of Document}``: at most ``K``, the policy's order; the first
            ``K`` as retrieved with ``policy="native"`` or after a failure (one warning).
        """
        documents = list(documents)
        budget = self._budget(top_k, len(documents))
        reranker = self._reranker(max(budget, 1))
        return {"documents": reranker.rerank(
            documents, lambda docs: self.candidate_pool(query, docs, query_embedding, filters),
            strict=self.strict, query=query)}
