"""MemPursuit as the read policy of cognee's chunk search.

cognee answers ``cognee.search(query, query_type=SearchType.CHUNKS, top_k=K)`` with its
``ChunksRetriever``: the ``K`` nearest rows of the vector collection ``DocumentChunk_text``.
cognee lets a program replace the retriever of a search type (``use_retriever``), so the one
line is::

    use_mempursuit()                      # options: k, pool, policy, policy_options, strict

after which :class:`MemPursuitChunksRetriever` answers that search type. How it reads
(:meth:`MemPursuitChunksRetriever.chunk_pool`):

1. The query is embedded once with cognee's own embedding engine (the vector engine's).
2. The pool: the vector engine's own ``search`` of ``DocumentChunk_text`` with ``limit = P``
   and the caller's node-set filter, in cognee's order (cosine distance, nearest first).
3. The stored vectors: read back by id with the engine's ``retrieve(..., include_vector=True)``
   (LanceDB, cognee's default); an engine without it has its chunks' texts embedded once by
   cognee's engine, and says so in one warning.
4. Signals from what cognee keeps on a chunk (:data:`CHUNK_SIGNALS`).

The ``K`` chosen chunks go through the rest of cognee's retriever unchanged (conflict notes,
payloads with their ``score``, the text context), so a caller sees the same objects. Any fault
(an engine that cannot search, stored vectors of the wrong size, ...) returns cognee's own
``K`` with one warning; ``strict=True`` raises :class:`CogneeReadError`. An empty collection
raises cognee's own ``NoDataError`` either way, as cognee does.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from cognee.modules.retrieval.chunks_retriever import ChunksRetriever
from cognee.modules.retrieval.register_retriever import use_retriever
from cognee.modules.search.types import SearchType

from mempursuit_core.adapter import (ReadOptions, ReadTrace, StoredPool, TraceSlot,
                                     aread_or_native, blank_query, note_vectors, pool_signals,
                                     recording, stored_pool)

__all__ = ["CHUNK_SIGNALS", "ChunkPool", "CogneeReadError", "MemPursuitChunksRetriever",
           "use_mempursuit"]

logger = logging.getLogger(__name__)

COLLECTION = "DocumentChunk_text"

#: What each signal is read from (a chunk's payload in the vector collection).
CHUNK_SIGNALS = {
    "texts": "text",
    "timestamps": "created_at (when cognee stored the chunk; ms since the epoch)",
    "session_ids": "document_id (the document the chunk was cut from)",
    "positions": "chunk_index (the chunk's place in its document)",
    "node_sets": "belongs_to_set",
}


class CogneeReadError(RuntimeError):
    """The pool could not be read or scored (no stored vectors, a dimension mismatch)."""


_MESSAGES = {"none": "none of the {n} chunks has a readable vector",
             "shape": "stored chunk vectors of size {size} for a {d}-d query"}


#: cognee's candidate chunks for one search, nearest first: the core's
#: :class:`~mempursuit_core.adapter.StoredPool` of ``ScoredResult`` (native scores ``-distance``).
ChunkPool = StoredPool


def _given(**options: Any) -> dict[str, Any]:
    """The read options given (``None`` means not given: the bound or shared default)."""
    return {name: value for name, value in options.items() if value is not None}


def _time(ms: Any) -> Any:
    if isinstance(ms, (int, float)) and not isinstance(ms, bool):
        return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).isoformat()
    return ms


class _ClassTrace:
    """``last_trace`` read on the class or an instance: the class's slot."""

    def __init__(self, read: Any) -> None:
        self.read, self.__doc__ = read, read.__doc__

    def __get__(self, obj: Any, cls: type) -> ReadTrace | None:
        return self.read(cls)


class MemPursuitChunksRetriever(ChunksRetriever):
    """cognee's ``ChunksRetriever`` whose ``K`` chunks are what a read policy picks from ``P``.

    Parameters
    ----------
    top_k : int or None, default 5
        cognee's ``K`` (``cognee.search(..., top_k=...)``); the ``k`` option caps it.
    node_name, node_name_filter_operator
        cognee's node-set filter, applied to the pool's search.
    k, pool, policy, policy_options, strict, budget_tokens
        The read options (``mempursuit_core.ReadOptions``): ``pool`` is ``P`` (default 200,
        raised to ``K``); ``policy="native"`` is cognee's own ``ChunksRetriever``.
    **kwargs
        The other arguments ``cognee.search`` gives a registered retriever (user, dataset,
        session, ...): ignored, as by cognee's own chunk search.
    """

    #: Read options bound by :func:`use_mempursuit` (a subclass per registration).
    read_options: Mapping[str, Any] = {}
    #: Where the reads of this class (each a new retriever of cognee's) keep their trace.
    traces: TraceSlot = TraceSlot()

    def __init__(self, top_k: int | None = 5, node_name: list[str] | None = None,
                 node_name_filter_operator: str = "OR", *, k: int | None = None,
                 pool: int | None = None, policy: Any = None,
                 policy_options: Mapping[str, Any] | None = None, strict: bool | None = None,
                 budget_tokens: int | None = None, **kwargs: Any):
        super().__init__(top_k=top_k, node_name=node_name,
                         node_name_filter_operator=node_name_filter_operator)
        bound = {**self.read_options, **_given(k=k, pool=pool, policy=policy,
                                               policy_options=policy_options, strict=strict,
                                               budget_tokens=budget_tokens)}
        self.options = ReadOptions.build("MemPursuitChunksRetriever", **bound)
        self.selector = self.options.selector()

    def __repr__(self) -> str:
        return (f"MemPursuitChunksRetriever(top_k={self.top_k!r}, "
                f"policy={self.options.policy!r})")

    @property
    def native(self) -> bool:
        """Whether the policy is cognee's own order (every search passes through)."""
        return self.options.is_native

    @_ClassTrace
    def last_trace(cls) -> ReadTrace | None:
        """What the last read of this class on this thread did (a
        :class:`~mempursuit_core.trace.ReadTrace`: chunks by id), or None; on the class that
        :func:`use_mempursuit` returns too (cognee makes a retriever per search)."""
        return cls.traces.last

    async def get_retrieved_objects(self, query: str, query_batch: Any = None) -> Any:
        """The chunks for ``query``: the policy's ``K`` of cognee's nearest ``P``."""
        with recording(type(self).traces, lambda r: str(r.id), list) as record:
            found = await self._retrieved(query)
            record.done(found)
        return found

    async def _retrieved(self, query: str) -> Any:
        if self.top_k is None:  # cognee reads the whole collection: there is no K to choose
            return await super().get_retrieved_objects(query)
        budget = self.options.budget(self.top_k)
        if (self.native or budget <= 0 or query is None
                or blank_query(query, "MemPursuitChunksRetriever", log=logger)):
            return await self._native(query, budget)

        async def ours() -> list[Any]:
            from cognee.modules.retrieval.utils.conflict_context import attach_chunk_conflicts

            vector, graph = await self.engines()
            found = await self.chunk_pool(query, engine=vector, size=None)
            chosen = found.choose(self.selector, budget)
            await attach_chunk_conflicts(chosen, graph_engine=graph)
            return chosen

        async def native() -> list[Any]:
            return await self._native(query, budget)

        return await aread_or_native(ours, native, strict=self.options.strict,
                                     framework="cognee", log=logger,
                                     strict_error=CogneeReadError)

    async def engines(self) -> tuple[Any, Any]:
        """cognee's vector and graph engines for the current context (its unified engine)."""
        from cognee.infrastructure.databases.unified import get_unified_engine

        unified = await get_unified_engine()
        return unified.vector, unified.graph

    async def _native(self, query: str, budget: int) -> list[Any]:
        top_k, self.top_k = self.top_k, budget
        try:
            return await ChunksRetriever.get_retrieved_objects(self, query)
        finally:
            self.top_k = top_k

    async def chunk_pool(self, query: str, *, engine: Any = None, size: int | None = None,
                         query_vector: Sequence[float] | None = None) -> ChunkPool:
        """cognee's ``P`` nearest chunks for ``query`` with their stored vectors and signals.

        Parameters
        ----------
        query : str
        engine : vector engine, optional
            cognee's vector engine (default: the current context's).
        size : int, optional
            ``P`` (default: the ``pool`` option, raised to ``top_k``).
        query_vector : sequence of float, optional
            The query's embedding (default: cognee's embedding engine, once).

        Returns
        -------
        ChunkPool
            ``candidates.vectors`` (P, d): the stored rows of ``DocumentChunk_text``.

        Raises
        ------
        cognee.modules.retrieval.exceptions.NoDataError
            When there is no chunk collection (nothing added yet), as cognee's own search.
        CogneeReadError
            When no chunk's vector can be read, or the vectors do not match the query's size.
        """
        from cognee.infrastructure.databases.vector.exceptions.exceptions import (
            CollectionNotFoundError)
        from cognee.modules.retrieval.exceptions.exceptions import NoDataError

        if engine is None:
            engine, _ = await self.engines()
        size = size or self.options.pool_size(self.options.budget(self.top_k or 0))
        if query_vector is None:
            query_vector = (await engine.embedding_engine.embed_text([query]))[0]
        qvec = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        try:
            found = await engine.search(COLLECTION, query_vector=qvec.tolist(), limit=size,
                                        include_payload=True, node_name=self.node_name,
                                        node_name_filter_operator=self.node_name_filter_operator)
        except CollectionNotFoundError as error:
            raise NoDataError("No data found in the system, please add data first.") from error
        found = list(found or [])
        vectors = await self._stored_vectors(engine, found)

        def signals(kept: list[Any]):
            payloads = [r.payload or {} for r in kept]
            return pool_signals(
                [str(p.get("text", "")) for p in payloads], query,
                timestamps=[_time(p.get("created_at")) for p in payloads],
                session_ids=[p.get("document_id") for p in payloads],
                positions=[p.get("chunk_index") for p in payloads],
                node_sets=[tuple(p.get("belongs_to_set") or ()) for p in payloads])

        candidates, unscored = stored_pool(
            found, [vectors.get(str(r.id)) for r in found], qvec,
            native_scores=[None if r.score is None else -float(r.score) for r in found],
            signals=signals, error=CogneeReadError, what="chunk vector", messages=_MESSAGES)
        return StoredPool(found, candidates, unscored)

    async def _stored_vectors(self, engine: Any, found: list[Any]) -> dict[str, Any]:
        """id -> stored vector, read back from the engine (else the texts embedded once)."""
        if not found:
            return {}
        ids = [str(r.id) for r in found]
        try:
            rows = await engine.retrieve(COLLECTION, ids, include_vector=True)
        except TypeError:  # an engine without LanceDB's include_vector extension
            rows = None
        if rows is not None:
            return {str(r.id): (r.payload or {}).get("vector") for r in rows}
        if not getattr(self, "_warned_embed", False):
            self._warned_embed = True
            logger.warning("cognee's %s engine does not return stored vectors: the pool's chunk "
                           "texts are embedded with cognee's embedding engine instead",
                           type(engine).__name__)
        texts = [str((r.payload or {}).get("text", "")) for r in found]
        vecs = await engine.embedding_engine.embed_text(texts)
        note_vectors("embedded", len(texts))
        return dict(zip(ids, vecs))


def use_mempursuit(search_type: Any = None, *, k: int | None = None, pool: int | None = None,
                   policy: Any = None, policy_options: Mapping[str, Any] | None = None,
                   strict: bool | None = None,
                   budget_tokens: int | None = None) -> type[MemPursuitChunksRetriever]:
    """Make ``cognee.search(..., query_type=search_type)`` answer with the read policy.

    Parameters
    ----------
    search_type : cognee SearchType, default ``SearchType.CHUNKS``
        The chunk search type to take over (cognee's ``use_retriever``).
    k, pool, policy, policy_options, strict, budget_tokens
        Read options for every search of that type (checked now).

    Returns
    -------
    type
        The registered retriever class (a :class:`MemPursuitChunksRetriever` with the options
        bound); ``use_mempursuit(search_type, policy="native")`` gives cognee's own order back.
    """
    search_type = SearchType.CHUNKS if search_type is None else search_type
    if not isinstance(search_type, SearchType):
        raise TypeError(f"search_type must be a cognee SearchType, got {search_type!r}")
    bound = _given(k=k, pool=pool, policy=policy, policy_options=policy_options, strict=strict,
                   budget_tokens=budget_tokens)
    ReadOptions.build("use_mempursuit", **bound).selector()  # bad options fail here, not later
    retriever = type("MemPursuitChunksRetriever", (MemPursuitChunksRetriever,),
                     {"read_options": bound, "traces": TraceSlot(), "__module__": __name__,
                      "__doc__": MemPursuitChunksRetriever.__doc__})
    use_retriever(search_type, retriever)
    return retriever
