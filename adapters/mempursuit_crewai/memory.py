"""MemPursuit as CrewAI's unified ``Memory``.

CrewAI's ``Memory.recall(query, limit=K)`` embeds the query and asks its storage backend (a
``StorageBackend``: LanceDB by default) for the ``K`` nearest records
(``storage.search(embedding, limit=K)``: ``(MemoryRecord, score)`` pairs, the record's stored
``embedding`` included), drops the private records the caller may not see, and orders what is
left by its composite score (semantic similarity, recency, importance). ``depth="deep"`` (the
default) runs its ``RecallFlow`` instead: an LLM may distil the query and explore further, and
each of its searches asks the storage for ``2 K`` before the composite score keeps ``K``.

:class:`MemPursuitMemory` is the same ``Memory`` (a subclass: ``remember``, ``forget``, scopes,
slices, the crew integration are CrewAI's own) whose storage is wrapped in a
``StorageBackend`` that, inside one of its ``recall`` calls, widens each search to ``P = 200``
and returns the ``K`` records the read policy picks (with their own scores), so that CrewAI's
own scoring orders the policy's ``K``::

    memory = MemPursuitMemory(storage="./memory", embedder=MemPursuitEmbedder())
    memory.recall("What does Alice do?", limit=5, depth="shallow")

Searches outside ``recall`` (``remember``'s consolidation search) are CrewAI's own, untouched.

Vectors: each record's stored ``embedding`` as the storage returned it (LanceDB and Qdrant Edge
return it; a record without one makes the read fall back to CrewAI's own with one warning). The
query vector: the one CrewAI embedded and passed to the search.

Signals (:func:`mempursuit_core.adapter.metadata_signals` on each record's ``metadata``): the
texts (``content``), the recall's query text; ``timestamps`` / ``speakers`` / ``session_ids``
from the metadata keys in ``metadata_keys``; without a ``timestamp`` metadata, the record's own
``created_at``; ``titles`` from a ``title`` (or ``source`` / ``file_name`` ...) metadata.
CrewAI's search score (``1 / (1 + distance)``, higher is better) as the native scores.

Budget rule: ``recall``'s ``limit`` keeps its meaning; ``k`` only caps it
(``K = min(k, limit)``). ``policy="native"`` is CrewAI's own ``recall``: nothing is wrapped.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import logging
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
from crewai.memory.types import MemoryRecord, embed_text
from crewai.memory.unified_memory import Memory
from pydantic import PrivateAttr

from mempursuit_core.adapter import (CandidatePool, DEFAULT_METADATA_KEYS, Fetched, ReadOptions,
                                     ReadTrace, ScopedTitleIndexes, TitleLookup, TraceSlot,
                                     blank_query, did_you_mean, metadata_signals, native_scores,
                                     pool_signals, read_or_native, recording)

__all__ = ["CrewAIReadError", "DEFAULT_METADATA_KEYS", "MemPursuitMemory", "PolicyStorage"]

logger = logging.getLogger(__name__)

Hit = Tuple[MemoryRecord, float]

#: the storage methods that write (the title indexes follow them)
_WRITES = ("save", "asave", "update", "delete", "adelete", "reset")


def _like(text: str) -> str:
    """``text`` as a literal inside a LanceDB ``LIKE '...' ESCAPE '\\'`` pattern."""
    return (text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            .replace("'", "''"))

#: Our own keyword arguments; every other one must be a field of CrewAI's ``Memory``.
_OURS = ("k", "pool", "policy", "policy_options", "strict", "metadata_keys", "budget_tokens")
_RECALL = inspect.signature(Memory.recall)


class CrewAIReadError(RuntimeError):
    """The searched records cannot be read as a pool (no stored embeddings)."""


@dataclass
class _Read:
    """One ``recall`` in progress: what its searches need to know (a context variable, so that
    RecallFlow's searches in its worker threads see it too)."""

    storage: "PolicyStorage"
    query: str
    budget: int
    source: Optional[str]
    include_private: bool
    errors: List[BaseException] = field(default_factory=list)


_READ: contextvars.ContextVar[Optional[_Read]] = contextvars.ContextVar("mempursuit_crewai_read",
                                                                         default=None)


def _visible(record: MemoryRecord, source: Optional[str], include_private: bool) -> bool:
    """Whether ``recall(source=..., include_private=...)`` shows ``record``: a private record
    only to the source that wrote it (a ``None`` source sees none of them)."""
    return include_private or not record.private or (source is not None
                                                     and record.source == source)


class PolicyStorage:
    """A CrewAI ``StorageBackend`` over another: every method is the wrapped backend's, except
    ``search`` / ``asearch`` inside a :class:`MemPursuitMemory` recall, which read ``max(P, K)``
    hits and return the ``K`` the read policy picks.

    Parameters
    ----------
    inner : StorageBackend
        The backend ``Memory`` built (``LanceDBStorage`` for ``storage="lancedb"`` or a path).
    options : ReadOptions
    selector : Selector
        Built from ``options``.
    metadata_keys : mapping
        ``{signal: metadata key}``.
    """

    def __init__(self, inner: Any, options: ReadOptions, selector: Any,
                 metadata_keys: Mapping[str, str]):
        self.inner = inner
        self._options = options
        self._selector = selector
        self._metadata_keys = dict(metadata_keys)
        self._titles: Optional[ScopedTitleIndexes] = None
        self._noted = False

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("inner", "_options", "_selector",
                                             "_metadata_keys", "_titles", "_noted"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"PolicyStorage({self.inner!r})"

    # -- the pool ---------------------------------------------------------------------------

    def pool(self, hits: Sequence[Hit], query_vector: Sequence[float], query: str, *,
             source: Optional[str] = None, include_private: bool = False,
             filters: Optional[Mapping[str, Any]] = None) -> CandidatePool[Hit]:
        """The storage's hits (its order) that the caller may see, with their stored vectors,
        the query vector, CrewAI's scores and the signals.

        Parameters
        ----------
        hits : sequence of (MemoryRecord, float)
            What ``storage.search`` returned.
        query_vector : sequence of float
            The embedding the search was made with.
        query : str
            The recall's query text.
        source, include_private
            ``recall``'s: private records the caller may not see are left out of the pool.
        filters : mapping, optional
            The search's ``scope_prefix``, ``categories``, ``metadata_filter`` and
            ``min_score``: the second read's scope (None: no second read).

        Returns
        -------
        CandidatePool
            ``items`` the ``(record, score)`` pairs, ``vectors`` (P, d) their ``embedding``.

        Raises
        ------
        CrewAIReadError
            A record without its stored embedding.
        """
        hits = [(r, s) for r, s in hits if _visible(r, source, include_private)]
        missing = sum(not r.embedding for r, _ in hits)
        if missing:
            raise CrewAIReadError(f"MemPursuitMemory: {missing} of {len(hits)} records came "
                                  "without their stored embedding (use a storage whose search "
                                  "returns MemoryRecord.embedding: LanceDBStorage, "
                                  "QdrantEdgeStorage)")
        qv = np.asarray(query_vector, dtype=np.float32)
        if qv.ndim != 1 or qv.size == 0:
            raise CrewAIReadError(f"MemPursuitMemory: the query embedding has shape {qv.shape}, "
                                  "not one vector")
        vectors = (np.asarray([r.embedding for r, _ in hits], dtype=np.float32)
                   .reshape(len(hits), -1) if hits else np.empty((0, qv.size), np.float32))
        signals = self._signals([r for r, _ in hits], query)
        if "titles" in signals and filters is not None:
            lookup = self._title_lookup(qv, query, filters, source, include_private)
            if lookup is not None:
                signals = signals.overlay({"title_lookup": lookup})
        return CandidatePool(hits, qv, vectors,
                             native_scores=native_scores([s for _, s in hits]),
                             signals=signals)

    # -- the second read --------------------------------------------------------------------

    def _off(self, why: str) -> None:
        if not self._noted:
            self._noted = True
            logger.info("mempursuit: MemPursuitMemory's second read (the titles its picks name, "
                        "fetched from the storage) is off: %s", why)

    def _signals(self, records: Sequence[MemoryRecord], query: str) -> Any:
        """The signals of ``records`` (a pool's, or a second read's)."""
        extra = metadata_signals([r.metadata for r in records], self._metadata_keys)
        if "timestamps" not in extra and records:
            extra["timestamps"] = [r.created_at.isoformat() for r in records]
        return pool_signals([r.content for r in records], query, **extra)

    def _title_lookup(self, qv: np.ndarray, query: str, filters: Mapping[str, Any],
                      source: Optional[str], include_private: bool) -> Optional[TitleLookup]:
        """The second read of a search inside its scope: one LanceDB ``where`` on the storage's
        table, the asked titles in the stored metadata (a ``LIKE`` on its JSON) ANDed with the
        search's ``scope_prefix`` (the storage's own predicate); each record's title compared
        exactly, and the search's categories, metadata filter and the recall's visibility
        checked as ``LanceDBStorage.search`` checks them; stored vectors with the rows. None
        (said once) for another storage or a ``min_score``."""
        from crewai.memory.storage import lancedb_storage as lance

        inner = self.inner
        if not isinstance(inner, lance.LanceDBStorage):
            self._off(f"{type(inner).__name__} cannot be filtered by title here")
            return None
        if filters.get("min_score"):
            self._off("min_score= cuts by similarity, which a lookup by title does not keep")
            return None
        key = self._metadata_keys.get("titles", "title")
        prefix = (filters.get("scope_prefix") or "").rstrip("/")
        categories, wanted = filters.get("categories"), filters.get("metadata_filter") or {}

        def inside(record: MemoryRecord) -> bool:
            return ((not prefix or record.scope.startswith(prefix))
                    and (not categories or any(c in record.categories for c in categories))
                    and all(record.metadata.get(k) == v for k, v in wanted.items())
                    and _visible(record, source, include_private))
        where = lance._scope_prefix_filter(prefix) if prefix else None

        def titles() -> List[Any]:
            rows = inner._scan_rows(prefix or None, columns=[
                "id", "content", "scope", "categories_str", "metadata_str", "source", "private"])
            return [r.metadata.get(key) for r in map(inner._row_to_record, rows) if inside(r)]

        def fetch(names: List[str], limit: int) -> Fetched:
            if inner._table is None:
                return Fetched([], np.zeros((0, qv.size)))
            named = " OR ".join(f"metadata_str LIKE '%{_like(json.dumps({key: t})[1:-1])}%' "
                                "ESCAPE '\\'" for t in names)
            rows = (inner._table.search().where(f"({named})" if where is None
                                                else f"({named}) AND ({where})")
                    .limit(max(int(inner._table.count_rows()), 1)).to_list())
            asked = {t: n for n, t in enumerate(names)}
            records = sorted((r for r in map(inner._row_to_record, rows)
                              if r.embedding is not None and r.metadata.get(key) in asked
                              and inside(r)), key=lambda r: asked[r.metadata[key]])
            vectors = np.asarray([r.embedding for r in records], dtype=np.float32)
            scores = 1.0 / (1.0 + ((vectors - qv) ** 2).sum(axis=1)) if records else []
            return Fetched.of(list(zip(records, map(float, scores))), vectors,
                              self._signals(records, query), native_scores=scores)
        if self._titles is None:
            self._titles = ScopedTitleIndexes(inner, _WRITES, count=inner.count,
                                              framework="LanceDBStorage")
        scope = (prefix, tuple(categories or ()), repr(sorted(wanted.items())), source,
                 include_private)
        return TitleLookup(self._titles.index(scope, titles), fetch, key=lambda h: h[0].id,
                           in_scope=lambda h: inside(h[0]),
                           timeout=self._options.follow_timeout)

    # -- StorageBackend's search ------------------------------------------------------------

    def search(self, query_embedding: List[float], scope_prefix: Optional[str] = None,
               categories: Optional[List[str]] = None,
               metadata_filter: Optional[Dict[str, Any]] = None, limit: int = 10,
               min_score: float = 0.0) -> List[Hit]:
        """The wrapped backend's search; inside a :class:`MemPursuitMemory` recall, the policy's
        ``min(K, limit)`` of its ``max(P, K)`` hits (same filters), most useful first; the
        wrapped search itself after a failure (one warning per recall)."""
        filters = dict(scope_prefix=scope_prefix, categories=categories,
                       metadata_filter=metadata_filter, min_score=min_score)
        read = _READ.get()
        if read is None or read.storage is not self or read.errors:
            return self.inner.search(query_embedding, limit=limit, **filters)
        budget = min(read.budget, int(limit))
        if budget < 1:
            return self.inner.search(query_embedding, limit=limit, **filters)

        def ours() -> List[Hit]:
            hits = self.inner.search(query_embedding, limit=self._options.pool_size(budget),
                                     **filters)
            pool = self.pool(hits, query_embedding, read.query, source=read.source,
                             include_private=read.include_private, filters=filters)
            return list(pool.select(self._selector, budget).items)

        def failed(reason: str) -> None:
            read.errors.append(RuntimeError(reason))

        try:
            return read_or_native(ours, lambda: self.inner.search(query_embedding, limit=limit,
                                                                  **filters),
                                  strict=self._options.strict, framework="CrewAI",
                                  on_fallback=failed)
        except Exception as exc:  # strict: RecallFlow swallows a search's error; recall re-raises
            read.errors.append(exc)
            raise

    async def asearch(self, query_embedding: List[float], scope_prefix: Optional[str] = None,
                      categories: Optional[List[str]] = None,
                      metadata_filter: Optional[Dict[str, Any]] = None, limit: int = 10,
                      min_score: float = 0.0) -> List[Hit]:
        """:meth:`search`, asynchronously (the wrapped ``asearch`` outside a recall)."""
        read = _READ.get()
        filters = dict(scope_prefix=scope_prefix, categories=categories,
                       metadata_filter=metadata_filter, limit=limit, min_score=min_score)
        if read is None or read.storage is not self:
            return await self.inner.asearch(query_embedding, **filters)
        return await asyncio.to_thread(self.search, query_embedding, **filters)


class MemPursuitMemory(Memory):
    """CrewAI's ``Memory`` whose ``recall`` keeps the ``K`` records the read policy picks from
    a pool of ``P``.

    Parameters
    ----------
    k : int or None, default None
        A cap on ``recall``'s ``limit`` (the shared read option): ``K = min(k, limit)``.
    pool : int, default 200
        ``P``: each search of a recall reads ``max(P, K)`` hits.
    policy : str or Selector, default ``mempursuit_core.DEFAULT_POLICY``
        ``"native"`` is CrewAI's own ``recall`` (the storage is not wrapped).
    policy_options : dict, optional
        Selector options.
    strict : bool, default False
        False: on any failure, one warning and CrewAI's own search for that recall; True
        raises.
    metadata_keys : dict, optional
        ``{signal: metadata key}``, default :data:`DEFAULT_METADATA_KEYS`.
    **fields
        CrewAI's own ``Memory`` fields (``storage``, ``embedder``, ``llm``, weights, ...).

    Raises
    ------
    TypeError
        A keyword that is neither a read option nor a field of CrewAI's ``Memory``.
    """

    _read_options: ReadOptions = PrivateAttr()
    _selector: Any = PrivateAttr(default=None)
    _metadata_keys: Dict[str, str] = PrivateAttr(default_factory=dict)
    _trace: TraceSlot = PrivateAttr(default_factory=TraceSlot)

    def __init__(self, *, k: Optional[int] = None, pool: Optional[int] = None,
                 policy: Any = None, policy_options: Optional[Mapping[str, Any]] = None,
                 strict: Optional[bool] = None,
                 metadata_keys: Optional[Mapping[str, str]] = None,
                 budget_tokens: Optional[int] = None, **fields: Any):
        unknown = sorted(set(fields) - set(Memory.model_fields))
        if unknown:
            near = did_you_mean(unknown[0], [*_OURS, *Memory.model_fields])
            raise TypeError(f"MemPursuitMemory: {unknown[0]}= is neither a read option "
                            f"({', '.join(_OURS)}) nor a field of CrewAI's Memory{near}: check "
                            "its spelling")
        if metadata_keys is not None and not isinstance(metadata_keys, Mapping):
            raise TypeError("MemPursuitMemory: metadata_keys takes {signal: metadata key}, got "
                            f"{type(metadata_keys).__name__}")
        options = ReadOptions.build("MemPursuitMemory", k=k, pool=pool, policy=policy,
                                    policy_options=policy_options, strict=strict,
                                    budget_tokens=budget_tokens)
        selector = options.selector()  # resolved once, when the options were built
        super().__init__(**fields)
        self._read_options = options
        self._selector = selector
        self._metadata_keys = dict(DEFAULT_METADATA_KEYS if metadata_keys is None
                                   else metadata_keys)
        if not options.is_native:
            self._storage = PolicyStorage(self._storage, options, selector, self._metadata_keys)

    # -- the options, as attributes ---------------------------------------------------------

    @property
    def k(self) -> Optional[int]:
        return self._read_options.k

    @property
    def pool(self) -> int:
        return self._read_options.pool

    @property
    def policy(self) -> Any:
        return self._read_options.policy

    @property
    def policy_options(self) -> Dict[str, Any]:
        return dict(self._read_options.policy_options)

    @property
    def strict(self) -> bool:
        return self._read_options.strict

    @property
    def last_trace(self) -> Optional[ReadTrace]:
        """What the last ``recall`` on this thread did (a
        :class:`~mempursuit_core.trace.ReadTrace`: records by id; ``native`` is the storage's
        own order of the pool, ``final`` the recall's result after CrewAI's composite score),
        or None."""
        return self._trace.last

    # -- the read ---------------------------------------------------------------------------

    def recall(self, query: str, *args: Any, **kwargs: Any):
        """CrewAI's own ``recall`` (same arguments, same ``MemoryMatch`` results), each of its
        storage searches returning the policy's ``K = min(k, limit)`` of a pool of
        ``max(P, K)``; CrewAI's composite score then orders them. With ``policy="native"``
        CrewAI's own recall, untouched."""
        storage = self._storage
        if not isinstance(storage, PolicyStorage) or blank_query(query, "MemPursuitMemory"):
            with recording(self._trace, _record_id, _records) as record:
                results = super().recall(query, *args, **kwargs)
                record.done(results)
            return results
        given = _RECALL.bind(self, query, *args, **kwargs)
        given.apply_defaults()
        read = _Read(storage, str(query), self._read_options.budget(int(given.arguments["limit"])),
                     given.arguments["source"], bool(given.arguments["include_private"]))
        token = _READ.set(read)
        try:
            with recording(self._trace, _record_id, _records) as record:
                results = super().recall(query, *args, **kwargs)
                record.done(results)  # a search that fell back recorded why
        finally:
            _READ.reset(token)
        if self._read_options.strict and read.errors:
            raise read.errors[0]  # deep recall's RecallFlow logs a failed search and goes on
        return results

    def candidate_pool(self, query: str, size: Optional[int] = None, *,
                       scope_prefix: Optional[str] = None,
                       categories: Optional[List[str]] = None,
                       metadata_filter: Optional[Dict[str, Any]] = None,
                       source: Optional[str] = None, include_private: bool = False,
                       query_embedding: Optional[Sequence[float]] = None
                       ) -> CandidatePool[Hit]:
        """The pool one shallow ``recall`` hands the policy: the storage's own top ``size``
        (default ``pool``) for the query embedded with the memory's embedder.

        Parameters
        ----------
        query : str
        size : int, optional
        scope_prefix, categories, metadata_filter
            The storage search's own filters (``scope_prefix`` as the storage takes it:
            ``root_scope`` is not applied here).
        source, include_private
            As for ``recall``: private records the caller may not see are left out.
        query_embedding : sequence of float, optional
            Default: ``query`` embedded as ``recall`` embeds it.

        Returns
        -------
        CandidatePool
            ``items`` the storage's ``(MemoryRecord, score)`` pairs, in its order.
        """
        storage = self._storage
        inner = storage.inner if isinstance(storage, PolicyStorage) else storage
        wrapper = storage if isinstance(storage, PolicyStorage) else PolicyStorage(
            inner, self._read_options, self._selector, self._metadata_keys)
        qv = (list(query_embedding) if query_embedding is not None
              else embed_text(self._embedder, query))
        if not qv:
            raise CrewAIReadError("MemPursuitMemory: the embedder gave no vector for the query")
        size = self._read_options.pool if size is None else int(size)
        hits = inner.search(qv, scope_prefix=scope_prefix, categories=categories,
                            metadata_filter=metadata_filter, limit=size, min_score=0.0)
        return wrapper.pool(hits, qv, query, source=source, include_private=include_private,
                            filters=dict(scope_prefix=scope_prefix, categories=categories,
                                         metadata_filter=metadata_filter))


def _record_id(item: Any) -> Any:
    """A record's id in a trace, from a storage hit ``(record, score)``, a ``MemoryMatch`` or a
    record."""
    item = item[0] if isinstance(item, tuple) else getattr(item, "record", item)
    return item.id


def _records(matches: Any) -> list:
    """The records of a recall's ``MemoryMatch`` results, in order."""
    return [m.record for m in matches]
