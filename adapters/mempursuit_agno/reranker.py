"""MemPursuit as an Agno ``Knowledge`` reranker.

``Knowledge.search(query, max_results=K)`` asks its reranker how wide a pool to read
(``Reranker.search_limit``: ``candidate_multiplier`` and ``max_candidates``), reads that many
documents from its vector db, hands them to ``reranker.rerank(query, documents, limit=K)`` and
keeps the first ``K``. :class:`MemPursuitReranker` sets the widening to the pool ``P``
(``candidate_multiplier = max_candidates = pool``, so the vector db returns ``max(P, K)``) and
returns the ``K`` the read policy picks, most useful first::

    knowledge = Knowledge(vector_db=LanceDb(..., embedder=embedder),
                          reranker=MemPursuitReranker(k=10))
    knowledge.search(question, max_results=10)

Vectors: each document's stored ``embedding`` as the vector db returned it (LanceDB, PgVector,
Qdrant and Chroma return it; a document without one makes the read fall back to the vector
db's order with one warning). The query vector: the query embedded with the embedder the vector
db attached to its documents (``Document.embedder``, the model the store was written with), or
the ``embedder=`` given.

Signals (:func:`mempursuit_core.adapter.metadata_signals` on ``meta_data``): the texts
(``content``); ``timestamps`` / ``speakers`` / ``session_ids`` from the ``meta_data`` keys in
``metadata_keys`` when the documents have them; ``titles`` (a ``title`` meta, else the stem of
``file_name`` / ``file_path`` / ``source`` / ``url``) and, without ``session_id`` metadata, one
session per source content (``content_id``, else the document's ``name``). Agno's vector dbs
return no score with the documents, so there are no native scores.

Budget rule: ``Knowledge.search``'s ``max_results`` keeps its meaning; ``k`` only caps it
(``K = min(k, max_results)``). ``policy="native"`` does not widen the read at all: the vector
db returns ``K`` documents and they are passed through, exactly Agno without a reranker.
"""

from __future__ import annotations

import json
import logging
from hashlib import md5
from typing import Any, Dict, List, Mapping, Optional

import numpy as np
from agno.knowledge.document import Document
from agno.knowledge.reranker.base import Reranker as AgnoReranker
from pydantic import PrivateAttr

from mempursuit_core.adapter import (DEFAULT_METADATA_KEYS, CandidatePool, Fetched, ReadOptions,
                                     ReadTrace, Reranker, ScopedTitleIndexes, TitleLookup,
                                     TraceSlot, metadata_signals, pool_signals)

__all__ = ["DEFAULT_METADATA_KEYS", "MemPursuitReranker", "AgnoReadError"]

logger = logging.getLogger(__name__)

#: Agno's own widening fields: set from ``pool`` here, so they are not options of ours.
_WIDENING = ("candidate_multiplier", "max_candidates")
#: the vector db methods that write (the title indexes follow them)
_WRITES = ("insert", "async_insert", "upsert", "async_upsert", "delete", "delete_by_id",
           "delete_by_name", "delete_by_metadata", "delete_by_content_id", "update_metadata",
           "drop", "async_drop")


def _like(text: str) -> str:
    """``text`` as a literal inside a LanceDB ``LIKE '...' ESCAPE '\\'`` pattern."""
    return (text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            .replace("'", "''"))


class AgnoReadError(ValueError):
    """The retrieved documents cannot be read as a pool (no stored vectors, no embedder), or,
    with ``strict=True``, any failure of the read. A ``ValueError``: ``Knowledge.search`` logs
    and swallows a reranker's other errors, and re-raises this one, so ``strict=True`` reaches
    the caller."""


class MemPursuitReranker(AgnoReranker):
    """Keep the ``K`` documents of the widened pool a read policy picks, in its order.

    Parameters
    ----------
    k : int or None, default None
        A cap on ``max_results`` (the shared read option): ``K = min(k, max_results)``.
    pool : int, default 200
        ``P``: ``Knowledge.search`` reads ``max(P, K)`` documents from its vector db.
    policy : str or Selector, default ``mempursuit_core.DEFAULT_POLICY``
        ``"native"`` is Agno without a reranker: the vector db's first ``K``.
    policy_options : dict, optional
        Selector options; other keyword arguments are taken as selector options too.
    strict : bool, default False
        False: on any failure, one warning and the vector db's first ``K``; True raises.
    embedder : agno Embedder, optional
        Embeds the query when the documents carry no embedder (default: the documents' own).
    metadata_keys : dict, optional
        ``{signal: meta_data key}``, default :data:`DEFAULT_METADATA_KEYS`.
    vector_db : LanceDb, optional
        The knowledge's vector db, for the second read (the documents the picks name by title).
    filters : dict, optional
        The search's own ``filters`` (as ``Knowledge.search`` passes them to the vector db):
        the second read's scope. A reranker cannot see them: without ``filters=``,
        ``user_id=`` or ``whole_store=True`` there is no second read.
    user_id : str, optional
        The search's ``user_id`` (the owner's rows plus shared ones, as LanceDb reads them).
    whole_store : bool, default False
        The vector db holds one scope: the second read may read all of it.
    """

    _options: ReadOptions = PrivateAttr()
    _rerankers: Dict[int, Reranker] = PrivateAttr(default_factory=dict)
    _embedder: Any = PrivateAttr(default=None)
    _metadata_keys: Dict[str, str] = PrivateAttr(default_factory=dict)
    _scope: Dict[str, Any] = PrivateAttr(default_factory=dict)
    _titles: Any = PrivateAttr(default=None)
    _noted: bool = PrivateAttr(default=False)
    _trace: TraceSlot = PrivateAttr(default_factory=TraceSlot)

    def __init__(self, *, k: Optional[int] = None, pool: Optional[int] = None,
                 policy: Any = None, policy_options: Optional[Mapping[str, Any]] = None,
                 strict: Optional[bool] = None, embedder: Any = None,
                 metadata_keys: Optional[Mapping[str, str]] = None, vector_db: Any = None,
                 filters: Any = None, user_id: Optional[str] = None, whole_store: bool = False,
                 **options: Any):
        given = [name for name in _WIDENING if name in options]
        if given:
            raise TypeError(f"MemPursuitReranker: {given[0]}= is set from pool= (the vector db "
                            "returns max(pool, K) documents): pass pool= instead")
        if embedder is not None and not callable(getattr(embedder, "get_embedding", None)):
            raise TypeError("MemPursuitReranker: embedder= takes an Agno embedder "
                            f"(get_embedding), got {type(embedder).__name__}")
        opts = ReadOptions.build("MemPursuitReranker", k=k, pool=pool, policy=policy,
                                 policy_options=policy_options, strict=strict, own=self.__init__,
                                 **options)
        super().__init__(candidate_multiplier=opts.pool, max_candidates=opts.pool)
        self._options = opts
        self._embedder = embedder
        self._metadata_keys = dict(DEFAULT_METADATA_KEYS if metadata_keys is None
                                   else metadata_keys)
        self._scope = {"vector_db": vector_db, "filters": filters, "user_id": user_id,
                       "whole_store": bool(whole_store)}

    # -- the options, as attributes ---------------------------------------------------------

    @property
    def k(self) -> Optional[int]:
        return self._options.k

    @property
    def pool(self) -> int:
        return self._options.pool

    @property
    def policy(self) -> Any:
        return self._options.policy

    @property
    def policy_options(self) -> Dict[str, Any]:
        return dict(self._options.policy_options)

    @property
    def strict(self) -> bool:
        return self._options.strict

    @property
    def last_trace(self) -> Optional[ReadTrace]:
        """What the last read on this thread did (a :class:`~mempursuit_core.trace.ReadTrace`:
        documents by id, else name, else position), or None."""
        return self._trace.last

    # -- Agno's reranker interface ----------------------------------------------------------

    def search_limit(self, max_results: int) -> int:
        """How many documents the vector db returns: ``max(pool, K)``; ``K`` itself with
        ``policy="native"`` (no widening: the read Agno makes without a reranker)."""
        budget = self._options.budget(max_results)
        if self._options.is_native:
            return max_results
        return max(super().search_limit(budget), max_results)

    def _reranker(self, budget: int) -> Reranker:
        if budget not in self._rerankers:
            self._rerankers[budget] = Reranker(self._options.with_k(budget), framework="Agno",
                                               where="MemPursuitReranker", ids=_doc_id,
                                               trace=self._trace)
        return self._rerankers[budget]

    def rerank(self, query: str, documents: List[Document],
               limit: Optional[int] = None) -> List[Document]:
        """The policy's ``K`` of ``documents`` (``K = min(k, limit)``; without ``limit``,
        ``k`` or every document), most useful first; the first ``K`` as retrieved with
        ``policy="native"`` or after a failure (one warning)."""
        documents = list(documents)
        budget = self._options.budget(limit if limit is not None
                                      else max(len(documents), 1))
        try:
            return self._reranker(max(budget, 1)).rerank(
                documents, lambda docs: self.candidate_pool(query, docs), query=query)
        except ValueError:
            raise
        except Exception as exc:  # strict=True only: otherwise the read fell back
            raise AgnoReadError(f"MemPursuitReranker (strict=True): {type(exc).__name__}: "
                                f"{exc}") from exc

    # -- the pool ---------------------------------------------------------------------------

    def _query_vector(self, query: str, documents: List[Document]) -> np.ndarray:
        embedder = self._embedder
        if embedder is None:
            embedder = next((d.embedder for d in documents if d.embedder is not None), None)
        if embedder is None:
            raise AgnoReadError("MemPursuitReranker: the documents carry no embedder to embed "
                                "the query with: pass embedder= (the vector db's)")
        return np.asarray(embedder.get_embedding(query), dtype=np.float32)

    def candidate_pool(self, query: str, documents: List[Document],
                       query_embedding: Optional[List[float]] = None
                       ) -> CandidatePool[Document]:
        """The documents (the vector db's order) with their stored vectors, the query vector
        and the signals.

        Parameters
        ----------
        query : str
        documents : list of Document, length P
            The vector db's documents, its order.
        query_embedding : list of float, optional
            Default: the query embedded with the documents' embedder (else ``embedder=``).

        Returns
        -------
        CandidatePool
            ``items`` the documents, ``vectors`` (P, d) their ``embedding``, no native scores.

        Raises
        ------
        AgnoReadError
            A document without an embedding, or no embedder for the query.
        """
        if not isinstance(query, str):
            raise TypeError(f"MemPursuitReranker needs the query as a string, got "
                            f"{type(query).__name__}")
        docs = list(documents)
        missing = sum(d.embedding is None or len(d.embedding) == 0 for d in docs)
        if missing:
            raise AgnoReadError(f"MemPursuitReranker: {missing} of {len(docs)} documents came "
                                "without their embedding (this vector db does not return them: "
                                "use LanceDb, PgVector, Qdrant or ChromaDb)")
        qv = (np.asarray(query_embedding, dtype=np.float32) if query_embedding is not None
              else self._query_vector(query, docs))
        if qv.ndim != 1:
            raise ValueError(f"query_embedding must be one vector, got shape {qv.shape}")
        matrix = (np.asarray([d.embedding for d in docs], dtype=np.float32).reshape(len(docs), -1)
                  if docs else np.empty((0, qv.shape[0]), dtype=np.float32))
        signals = self._signals(docs, query)
        if "titles" in signals:
            lookup = self._title_lookup(query)
            if lookup is not None:
                signals = signals.overlay({"title_lookup": lookup})
        return CandidatePool(docs, qv, matrix, signals=signals)

    def _signals(self, docs: List[Document], query: str) -> Any:
        """The signals of ``docs`` (a pool's, or a second read's)."""
        extra = metadata_signals([d.meta_data for d in docs], self._metadata_keys,
                                 sources=[d.content_id or d.name for d in docs])
        return pool_signals([d.content or "" for d in docs], query, **extra)

    # -- the second read ----------------------------------------------------------------------

    def _off(self, why: str, warn: bool = False) -> None:
        if not self._noted:
            self._noted = True
            (logger.warning if warn else logger.info)(
                "mempursuit: MemPursuitReranker's second read (the titles its picks name, "
                "fetched from the vector db) is off: %s", why)

    def _title_lookup(self, query: str) -> Optional[TitleLookup]:
        """The second read through ``vector_db=`` (LanceDb) within the search's scope: one
        LanceDB ``where`` on the table (the asked titles in the stored ``meta_data``, ANDed with
        LanceDb's own owner clause for ``user_id``), each document then checked as LanceDb
        checks its ``filters`` (every key equal in ``meta_data``); stored vectors with the
        rows. None (said once) without a vector db, without a scope, or for another db."""
        from agno.vectordb.lancedb import LanceDb

        db, filters, user_id = (self._scope["vector_db"], self._scope["filters"],
                                self._scope["user_id"])
        if db is None:
            self._off("pass vector_db= (the knowledge's LanceDb), with filters= / user_id= "
                      "(the search's own) or whole_store=True (a vector db of one scope)")
            return None
        if not filters and user_id is None and not self._scope["whole_store"]:
            self._off("it cannot see the search's filters or user_id, and vector_db= may hold "
                      "other users' documents: pass filters= / user_id= (the search's own), or "
                      "whole_store=True if the vector db holds one scope", warn=True)
            return None
        if not isinstance(db, LanceDb) or getattr(db, "table", None) is None:
            self._off(f"{type(db).__name__} cannot be filtered by title here (LanceDb can)")
            return None
        if filters is not None and not isinstance(filters, Mapping):
            self._off("LanceDb applies no filter expressions (a list): pass filters= as a dict")
            return None
        key = self._metadata_keys.get("titles", "title")
        owner = db._user_scope_where_clause(user_id)

        def inside(doc: Document) -> bool:  # LanceDb's own check of its filters
            meta = doc.meta_data or {}
            return all(k in meta and meta[k] == v for k, v in (filters or {}).items())

        def rows(where: Optional[str]) -> List[Document]:
            scan = db.table.search()
            if where:
                scan = scan.where(where)
            return db._build_search_results(scan.limit(max(db.table.count_rows(), 1)).to_list())

        def titles() -> List[Any]:
            return [(d.meta_data or {}).get(key) for d in rows(owner) if inside(d)]

        def fetch(names: List[str], limit: int) -> Fetched:
            named = " OR ".join(f"payload LIKE '%{_like(json.dumps({key: t})[1:-1])}%' "
                                "ESCAPE '\\'" for t in names)
            asked = set(names)
            docs = [d for d in rows(f"({named})" if owner is None else f"({named}) AND {owner}")
                    if (d.meta_data or {}).get(key) in asked and inside(d)]
            rank = {t: i for i, t in enumerate(names)}
            docs.sort(key=lambda d: rank[d.meta_data[key]])
            return Fetched.of(docs, [d.embedding for d in docs], self._signals(docs, query))
        if self._titles is None:
            self._titles = ScopedTitleIndexes(db, _WRITES, count=lambda: db.table.count_rows(),
                                              framework="LanceDb")
        return TitleLookup(self._titles.index((json.dumps(filters, sort_keys=True, default=str),
                                               user_id), titles), fetch,
                           key=lambda d: md5((d.content or "").encode()).hexdigest(),
                           in_scope=inside if filters else None,
                           timeout=self._options.follow_timeout)


def _doc_id(document: Document) -> Any:
    """A document's short id in a trace: its ``id``, else its ``name`` (None: its position)."""
    return document.id or document.name
