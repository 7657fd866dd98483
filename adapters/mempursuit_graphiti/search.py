"""MemPursuit as the read policy of Graphiti's fact (edge) and entity (node) search.

Graphiti answers every read with ``Graphiti.search`` (facts) or ``Graphiti.search_`` (a
``SearchConfig`` over facts, entities, episodes and communities). Both gather candidates with the
configured search methods (BM25, cosine similarity, breadth-first search), fuse them and cut the
result at ``limit`` with one of Graphiti's rerankers. :class:`MemPursuitGraphiti` wraps a
``Graphiti`` instance and answers the same two calls with what the read policy picks::

    graphiti = MemPursuitGraphiti(graphiti)     # everything else passes through

How a search is read (:meth:`MemPursuitGraphiti.edge_pool`, :meth:`MemPursuitGraphiti.node_pool`):

1. The query is embedded once with Graphiti's own embedder (or the caller's ``query_vector``).
2. The pool: Graphiti's own ``search_`` with the caller's search methods, filter, group ids,
   center node and BFS origins, the reranker set to ``rrf`` and ``limit = P`` (each method
   fetches ``2 P`` candidates; reciprocal-rank fusion, Graphiti's default, gives the native order).
3. The stored vectors: ``fact_embedding`` / ``name_embedding`` read back from the graph in one
   query (Graphiti's ``get_embeddings_for_edges`` / ``get_embeddings_for_nodes``); nothing is
   re-embedded.
4. Signals from what the graph keeps (:data:`EDGE_SIGNALS`): the fact (or the entity's name and
   summary) as text, ``valid_at`` (else ``created_at``) as the time, the first episode a fact came
   from as its session (an entity: its group id), and the source / target entity names.

Items without a stored vector are never dropped: they follow the policy's picks in native order.
A graph without stored vectors, an empty pool (an empty graph, an unknown group id) or any other
fault returns Graphiti's own result with one warning (``strict=True`` raises). Episode and
community scopes of a ``SearchConfig`` are passed to Graphiti unchanged.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from graphiti_core.edges import EntityEdge
from graphiti_core.nodes import EntityNode
from graphiti_core.search.search_config import (DEFAULT_SEARCH_LIMIT, EdgeReranker,
                                                NodeReranker, SearchConfig, SearchResults)
from graphiti_core.search.search_config_recipes import (COMBINED_HYBRID_SEARCH_CROSS_ENCODER,
                                                        EDGE_HYBRID_SEARCH_NODE_DISTANCE,
                                                        EDGE_HYBRID_SEARCH_RRF)
from graphiti_core.search.search_filters import SearchFilters
from graphiti_core.search.search_utils import get_embeddings_for_edges, get_embeddings_for_nodes

from mempursuit_core.adapter import (Fetched, ReadOptions, ReadTrace, ScopedTitleIndexes,
                                     StoredPool, TitleLookup, TraceSlot, aread_or_native,
                                     blank_query, note_final, note_pool, pool_signals, recording,
                                     stored_pool)

__all__ = ["EDGE_SIGNALS", "EmptyPoolError", "GraphitiPool", "GraphitiReadError", "MemPursuitGraphiti",
           "POOL_RERANKERS"]

logger = logging.getLogger(__name__)


#: What each signal is read from, for facts (edges); entities use their name + summary as text,
#: ``created_at`` as time and the group id as session.
EDGE_SIGNALS = {
    "texts": "fact",
    "timestamps": "valid_at, else created_at",
    "session_ids": "episodes[0] (the episode the fact came from), else group_id",
    "entities": "(source entity name, target entity name)",
    "invalid_at": "invalid_at",
}

#: Graphiti's methods that write (the entity-name indexes follow them)
_WRITES = ("add_episode", "add_episode_bulk", "add_triplet", "remove_episode",
           "build_communities", "clear_data")

#: Graphiti's rerankers that can give a pool its native order (the cross-encoder is left out:
#: it would score all P candidates with a model per search).
POOL_RERANKERS = ("rrf", "mmr", "node_distance", "episode_mentions")


class GraphitiReadError(RuntimeError):
    """The pool could not be read (no stored vectors, an empty pool)."""


class EmptyPoolError(GraphitiReadError):
    """Graphiti's search methods found no candidate (an empty graph, an unknown group id)."""


#: Graphiti's candidate pool for one search, in its native (RRF) order: the core's
#: :class:`~mempursuit_core.adapter.StoredPool` of ``EntityEdge`` or ``EntityNode``.
GraphitiPool = StoredPool


def _time(t: Any) -> Any:
    return None if t is None else t.isoformat() if hasattr(t, "isoformat") else t


def _scores(n: int) -> list[float]:
    """Reranker scores for ``n`` results in the policy's order (``1 / (rank + 1)``), so a caller
    that sorts by score keeps the order."""
    return [1.0 / (i + 1) for i in range(n)]


def _traced(items: Callable[[Any], list]) -> Callable:
    """A read method whose trace goes to ``self._trace`` (items by uuid; ``items(result)``:
    what it returned, in order)."""
    def wrap(read: Callable) -> Callable:
        @functools.wraps(read)
        async def traced(self: Any, *args: Any, **kwargs: Any) -> Any:
            with recording(self._trace, lambda x: x.uuid, items) as record:
                got = await read(self, *args, **kwargs)
                record.done(got)
            return got
        return traced
    return wrap


class MemPursuitGraphiti:
    """A ``Graphiti`` whose fact and entity searches return what a read policy picks.

    Parameters
    ----------
    graphiti : graphiti_core.Graphiti
        The instance to wrap; every attribute and method other than ``search`` / ``search_``
        is its own.
    k : int or None, default None
        Budget ``K``: ``None`` returns ``num_results`` / ``config.limit`` items; otherwise
        ``min(k, limit)``.
    pool : int, default 200
        ``P``: how many fused candidates to read (raised to ``K``).
    policy : str or Selector, default ``mempursuit_core.DEFAULT_POLICY``
        ``"native"`` passes every search to Graphiti unchanged (with ``k``: ``limit=min(k,
        limit)``).
    policy_options : dict, optional
        Selector options; other keyword arguments are taken as selector options too.
    strict : bool, default False
        False: on any fault log one warning and return Graphiti's own result; True: raise.
    entity_titles : bool, default False
        Entity names are titles: an entity search hands the policy ``titles`` (each entity's
        name) and the second read fetches the entities a pick names
        (``EntityNode.get_by_names`` within ``group_ids``). Off by default, so a graph of
        people and places is read as before.
    """

    def __init__(self, graphiti: Any, *, k: int | None = None, pool: int | None = None,
                 policy: Any = None, policy_options: Mapping[str, Any] | None = None,
                 strict: bool | None = None, entity_titles: bool = False, **extra: Any):
        if not (hasattr(graphiti, "search_") and hasattr(graphiti, "clients")):
            raise TypeError(f"MemPursuitGraphiti wraps a graphiti_core.Graphiti, got "
                            f"{type(graphiti).__name__}")
        self.graphiti = graphiti
        self.options = ReadOptions.build("MemPursuitGraphiti", k=k, pool=pool, policy=policy,
                                         policy_options=policy_options, strict=strict,
                                         own=self.__init__, **extra)
        self.selector = self.options.selector()
        self.entity_titles = bool(entity_titles)
        self._titles: ScopedTitleIndexes | None = None
        self._loop: list = [None]  # the event loop of the latest entity read
        self._noted = False
        self._trace = TraceSlot()

    def __getattr__(self, name: str) -> Any:
        if name in ("graphiti", "options", "selector", "entity_titles", "_titles", "_loop",
                    "_noted"):  # a half-built wrapper
            raise AttributeError(name)
        return getattr(self.graphiti, name)

    def __repr__(self) -> str:
        return f"MemPursuitGraphiti({self.graphiti!r}, policy={self.options.policy!r})"

    @property
    def native(self) -> bool:
        """Whether the policy is Graphiti's own order (every search passes through)."""
        return self.options.is_native

    @property
    def last_trace(self) -> ReadTrace | None:
        """What the last ``search`` / ``search_`` on this thread did (a
        :class:`~mempursuit_core.trace.ReadTrace`: edges, then nodes, by uuid), or None."""
        return self._trace.last

    # ---------------------------------------------------------------- Graphiti's two reads

    @_traced(list)
    async def search(self, query: str, center_node_uuid: str | None = None,
                     group_ids: list[str] | None = None, num_results: int = DEFAULT_SEARCH_LIMIT,
                     search_filter: SearchFilters | None = None, driver: Any = None
                     ) -> list[EntityEdge]:
        """``Graphiti.search``: the facts (edges) for ``query``, in the policy's order.

        The native read is Graphiti's hybrid edge search (BM25 + cosine, RRF; node distance
        around ``center_node_uuid`` when one is given); the pool comes from the same methods.
        """
        budget = self.options.budget(num_results)
        if self.native:
            return await self.graphiti.search(query, center_node_uuid, group_ids, budget,
                                              search_filter, driver)
        recipe = (EDGE_HYBRID_SEARCH_RRF if center_node_uuid is None
                  else EDGE_HYBRID_SEARCH_NODE_DISTANCE)
        config = recipe.model_copy(update={"limit": num_results})
        got = await self.search_(query, config, group_ids, center_node_uuid,
                                 search_filter=search_filter, driver=driver)
        return got.edges

    @_traced(lambda got: list(got.edges) + list(got.nodes))
    async def search_(self, query: str, config: SearchConfig = COMBINED_HYBRID_SEARCH_CROSS_ENCODER,
                      group_ids: list[str] | None = None, center_node_uuid: str | None = None,
                      bfs_origin_node_uuids: list[str] | None = None,
                      search_filter: SearchFilters | None = None, driver: Any = None,
                      query_vector: list[float] | None = None) -> SearchResults:
        """``Graphiti.search_``: edges and nodes in the policy's order, episodes and communities
        as Graphiti returns them.

        Reranker scores of reordered edges / nodes are ``1 / (rank + 1)`` in the policy's order.
        """
        budget = self.options.budget(config.limit)
        call = dict(group_ids=group_ids, center_node_uuid=center_node_uuid,
                    bfs_origin_node_uuids=bfs_origin_node_uuids, search_filter=search_filter,
                    driver=driver)

        async def native() -> SearchResults:
            return await self.graphiti.search_(query, config.model_copy(update={"limit": budget}),
                                               query_vector=query_vector, **call)

        if self.native or blank_query(query, "MemPursuitGraphiti", log=logger) or (
                config.edge_config is None and config.node_config is None):
            return await native()
        async def ours() -> SearchResults:
            qvec = query_vector if query_vector is not None else await self._embed(query)
            pools: dict[str, Any] = {}
            empty: list[EmptyPoolError] = []
            for scope, read in (("edge", self.edge_pool), ("node", self.node_pool)):
                if getattr(config, f"{scope}_config") is None:
                    continue
                try:
                    pools[scope] = await read(query, config=config, query_vector=qvec, **call)
                except EmptyPoolError as exc:  # this scope found nothing: Graphiti's is empty
                    pools[scope], _ = [], empty.append(exc)
            if len(empty) == len(pools):  # nothing found at all: an empty graph or group
                raise empty[0]
            if self.entity_titles and pools.get("node"):  # the second read awaits on this loop
                results = await asyncio.to_thread(self._choose_all, pools.get("edge"),
                                                  pools.get("node"), budget)
            else:
                results = self._choose_all(pools.get("edge"), pools.get("node"), budget)
            rest = config.model_copy(update={"edge_config": None, "node_config": None,
                                             "limit": budget})
            if rest.episode_config is not None or rest.community_config is not None:
                other = await self.graphiti.search_(query, rest, query_vector=qvec, **call)
                results.episodes, results.episode_reranker_scores = (
                    other.episodes, other.episode_reranker_scores)
                results.communities, results.community_reranker_scores = (
                    other.communities, other.community_reranker_scores)
            return results

        return await aread_or_native(ours, native, strict=self.options.strict,
                                     framework="Graphiti", log=logger)

    # ---------------------------------------------------------------- the pools

    async def _embed(self, query: str) -> list[float]:
        return await self.graphiti.embedder.create(input_data=[query.replace("\n", " ")])

    @staticmethod
    def _pool_config(config: SearchConfig, scope: str, size: int, reranker: str) -> SearchConfig:
        if reranker not in POOL_RERANKERS:
            raise ValueError(f"the pool is ordered by one of Graphiti's rerankers "
                             f"{', '.join(POOL_RERANKERS)}; got {reranker!r}")
        # every candidate stays in the pool: Graphiti's default reranker_min_score (0) would drop
        # each negative MMR score, i.e. both copies of every near-duplicate pair
        keep_all = float("-inf")
        if scope == "edge":
            part = config.edge_config.model_copy(update={"reranker": EdgeReranker[reranker]})
            return SearchConfig(edge_config=part, limit=size, reranker_min_score=keep_all)
        part = config.node_config.model_copy(update={"reranker": NodeReranker[reranker]})
        return SearchConfig(node_config=part, limit=size, reranker_min_score=keep_all)

    async def _fused(self, query: str, config: SearchConfig, scope: str, size: int | None,
                     query_vector: Any, reranker: str, **call: Any
                     ) -> tuple[list, list[float], list[float]]:
        """Graphiti's own fused top ``size`` facts (``scope="edge"``) or entities (``"node"``)
        for ``query``, their reranker scores and the query vector; ``call``: ``search_``'s
        scope arguments. Raises :class:`EmptyPoolError` when the search found none."""
        size = self.options.pool_size(config.limit if size is None else size)
        qvec = query_vector if query_vector is not None else await self._embed(query)
        got = await self.graphiti.search_(query, self._pool_config(config, scope, size, reranker),
                                          query_vector=[float(x) for x in qvec], **call)
        items, scores = ((got.edges, got.edge_reranker_scores) if scope == "edge"
                         else (got.nodes, got.node_reranker_scores))
        if not items:
            what = "facts" if scope == "edge" else "entities"
            raise EmptyPoolError(f"Graphiti's search found no {what} for group ids "
                                 f"{call.get('group_ids')!r}: nothing to reorder")
        return items, scores, qvec

    async def edge_pool(self, query: str, *, config: SearchConfig = EDGE_HYBRID_SEARCH_RRF,
                        size: int | None = None, query_vector: Any = None,
                        group_ids: list[str] | None = None, center_node_uuid: str | None = None,
                        bfs_origin_node_uuids: list[str] | None = None,
                        search_filter: SearchFilters | None = None, driver: Any = None,
                        reranker: str = "rrf") -> GraphitiPool[EntityEdge]:
        """Graphiti's fact pool for ``query``: the read every reordered edge search makes.

        Parameters
        ----------
        query : str
        config : SearchConfig
            Its ``edge_config`` gives the search methods (the reranker is replaced by RRF).
        size : int, optional
            ``P`` (default: the ``pool`` option, raised to ``config.limit``).
        query_vector : sequence of float, optional
            The query's embedding (default: Graphiti's embedder, once).
        group_ids, center_node_uuid, bfs_origin_node_uuids, search_filter, driver
            As in ``Graphiti.search_``.
        reranker : str
            The Graphiti reranker giving the native order (:data:`POOL_RERANKERS`; default
            ``"rrf"``, what every wrapped search uses).

        Returns
        -------
        GraphitiPool
            ``candidates.vectors`` (P, d) the stored ``fact_embedding`` rows.

        Raises
        ------
        EmptyPoolError
            When the search methods found nothing (an empty graph, an unknown group id).
        GraphitiReadError
            When none of the pool's facts has a stored embedding.
        """
        edges, scores, qvec = await self._fused(
            query, config, "edge", size, query_vector, reranker, group_ids=group_ids,
            center_node_uuid=center_node_uuid, bfs_origin_node_uuids=bfs_origin_node_uuids,
            search_filter=search_filter, driver=driver)
        stored = await get_embeddings_for_edges(driver or self.graphiti.driver, edges)
        names = await self._entity_names(edges, driver)

        def signals(kept: Sequence[EntityEdge]):
            return pool_signals(
                [e.fact for e in kept], query,
                timestamps=[_time(e.valid_at or e.created_at) for e in kept],
                session_ids=[e.episodes[0] if e.episodes else e.group_id for e in kept],
                entities=[(names.get(e.source_node_uuid), names.get(e.target_node_uuid))
                          for e in kept],
                invalid_at=[_time(e.invalid_at) for e in kept])

        return _assemble(edges, scores, stored, qvec, signals, "fact_embedding")

    async def node_pool(self, query: str, *, config: SearchConfig, size: int | None = None,
                        query_vector: Any = None, group_ids: list[str] | None = None,
                        center_node_uuid: str | None = None,
                        bfs_origin_node_uuids: list[str] | None = None,
                        search_filter: SearchFilters | None = None, driver: Any = None,
                        reranker: str = "rrf") -> GraphitiPool[EntityNode]:
        """Graphiti's entity pool for ``query`` (``config.node_config``'s methods, RRF), with the
        stored ``name_embedding`` rows; otherwise as :meth:`edge_pool`."""
        nodes, scores, qvec = await self._fused(
            query, config, "node", size, query_vector, reranker, group_ids=group_ids,
            center_node_uuid=center_node_uuid, bfs_origin_node_uuids=bfs_origin_node_uuids,
            search_filter=search_filter, driver=driver)
        stored = await get_embeddings_for_nodes(driver or self.graphiti.driver, nodes)
        def signals(kept: Sequence[EntityNode], lookup: TitleLookup | None = None):
            extra: dict[str, Any] = {}
            if self.entity_titles:
                extra["titles"] = [n.name for n in kept]
                if lookup is not None:
                    extra["title_lookup"] = lookup
            return pool_signals(
                [f"{n.name}: {n.summary}" if n.summary else n.name for n in kept], query,
                timestamps=[_time(n.created_at) for n in kept],
                session_ids=[n.group_id for n in kept],
                entities=[(n.name,) for n in kept], **extra)
        lookup = (self._title_lookup(group_ids, search_filter, driver, signals)
                  if self.entity_titles else None)

        return _assemble(nodes, scores, stored, qvec, lambda kept: signals(kept, lookup),
                         "name_embedding")

    # ---------------------------------------------------------------- the second read

    def _off(self, why: str) -> None:
        if not self._noted:
            self._noted = True
            logger.info("mempursuit: MemPursuitGraphiti's second read (the entities its picks "
                        "name, fetched from the graph) is off: %s", why)

    def _title_lookup(self, group_ids: list[str] | None, search_filter: SearchFilters | None,
                      driver: Any, signals: Any) -> TitleLookup | None:
        """The second read of an entity search inside its ``group_ids``: Graphiti's
        ``EntityNode.get_by_names`` (the entities of those names in those groups), their
        stored ``name_embedding`` read back, ``signals(nodes)`` as for the pool; the groups'
        entity names listed by ``EntityNode.get_by_group_ids``. Awaited on the search's event
        loop from the selection's thread. None (said once) without ``group_ids`` or with a
        search filter."""
        if not group_ids:
            self._off("the lookup by name takes the search's group_ids: pass group_ids=")
            return None
        if search_filter is not None and search_filter != SearchFilters():
            self._off("it cannot keep a search filter in a lookup by name")
            return None
        graph = driver or self.graphiti.driver
        groups = sorted(set(group_ids))
        loop = self._loop[0] = asyncio.get_running_loop()

        async def named(names: list[str], limit: int) -> tuple[list, dict]:
            nodes = await EntityNode.get_by_names(graph, names, groups)
            rank = {t: i for i, t in enumerate(names)}
            nodes = sorted(nodes, key=lambda n: rank.get(n.name, len(rank)))[:limit * 4]
            return nodes, await get_embeddings_for_nodes(graph, nodes) if nodes else {}

        def fetch(names: list[str], limit: int) -> Fetched:
            nodes, stored = _on_loop(named(names, limit), loop)
            nodes = [n for n in nodes if stored.get(n.uuid) is not None]
            return Fetched.of(nodes, [stored[n.uuid] for n in nodes], signals(nodes))

        def titles() -> list[str]:
            return [n.name for n in _on_loop(EntityNode.get_by_group_ids(graph, groups),
                                             self._loop[0])]
        if self._titles is None:
            self._titles = ScopedTitleIndexes(self.graphiti, _WRITES, framework="Graphiti")
        return TitleLookup(self._titles.index((id(graph), tuple(groups)), titles), fetch,
                           key=lambda n: n.uuid, in_scope=lambda n: n.group_id in groups,
                           timeout=self.options.follow_timeout)

    async def _entity_names(self, edges: Sequence[EntityEdge], driver: Any) -> dict[str, str]:
        uuids = sorted({u for e in edges for u in (e.source_node_uuid, e.target_node_uuid)})
        found = await EntityNode.get_by_uuids(driver or self.graphiti.driver, uuids)
        return {n.uuid: n.name for n in found}

    # ---------------------------------------------------------------- the choice

    def choose(self, pool: StoredPool, budget: int) -> list:
        """The policy's ``budget`` items of ``pool``, then the unscored ones (native order)."""
        return pool.choose(self.selector, budget)

    def _choose_all(self, edges: GraphitiPool | list | None, nodes: GraphitiPool | list | None,
                    budget: int) -> SearchResults:
        results = SearchResults()
        if edges:
            results.edges = self.choose(edges, budget)
            results.edge_reranker_scores = _scores(len(results.edges))
        if nodes:
            results.nodes = self.choose(nodes, budget)
            results.node_reranker_scores = _scores(len(results.nodes))
        note_pool([x for p in (edges, nodes) if p for x in p.native])  # edges, then nodes
        note_final(list(results.edges) + list(results.nodes))
        return results


def _on_loop(coro: Any, loop: Any) -> Any:
    """``coro`` run on ``loop`` (the search's) from another thread, its result."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        coro.close()
        raise RuntimeError("the selection ran on the search's event loop, which the second "
                           "read awaits on")
    return asyncio.run_coroutine_threadsafe(coro, loop).result()


_NO_EMBEDDINGS = {"none": "none of the {n} candidates has a stored {what} (a graph written "
                          "without embeddings?)"}


def _assemble(items: list, scores: Sequence[float], stored: Mapping[str, Any], qvec: Any,
              signals: Any, what: str) -> GraphitiPool:
    by_uuid = dict(zip((x.uuid for x in items), scores)) if len(scores) == len(items) else None
    candidates, unscored = stored_pool(
        items, [stored.get(x.uuid) for x in items], qvec,
        native_scores=None if by_uuid is None else [by_uuid[x.uuid] for x in items],
        signals=signals, error=GraphitiReadError, what=what, messages=_NO_EMBEDDINGS)
    return StoredPool(list(items), candidates, unscored)
