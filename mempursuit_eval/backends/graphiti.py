"""A real Graphiti graph for ``mempursuit eval --framework graphiti`` (a ``StoreBackend``).

Graphiti on its embedded Kuzu driver (a database in the work directory), with the harness's
embedder behind Graphiti's ``EmbedderClient`` interface, and no LLM:

* ``build``: per group (a LoCoMo conversation) one entity per speaker, one episode per session
  (``valid_at`` the session date) and one fact edge per turn, from its speaker to the other
  speaker (``fact`` the turn's text, ``valid_at`` its session date, ``episodes`` its session's
  episode), written through Graphiti's own bulk save path (``add_nodes_and_edges_bulk``) with
  the fact and name embeddings the harness computed; then Graphiti's full-text indices.
  Graphiti's LLM extraction (``add_episode``) is not run: the turns are the facts.
* ``pool``: exactly :meth:`mempursuit_graphiti.MemPursuitGraphiti.edge_pool`, the read every
  wrapped ``search`` makes (BM25 + cosine over facts, ``limit = P``), within the group.

``--backend-opt native=rrf|mmr|node_distance|episode_mentions`` orders the pool with that
Graphiti reranker (default ``rrf``, Graphiti's own default): the harness's ``native`` row is then
Graphiti's reranker over the same candidates. ``node_distance`` needs a center entity: the
speaker the question names first (else the group's first speaker).
"""

from __future__ import annotations

import asyncio
import threading
import uuid as uuidlib
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from mempursuit_eval.base import (Embedder, MemoryUnit, Pool, checked_pool_size, group_entry,
                                  pool_from_candidates, units_by_group)

__all__ = ["EncoderEmbedder", "GraphitiBackend", "NATIVE_RERANKERS", "close_falkordblite_graphiti",
           "open_falkordblite_graphiti", "open_kuzu_graphiti", "write_turns"]

#: Graphiti's rerankers the pool can be ordered by (``--backend-opt native=``).
NATIVE_RERANKERS = ("rrf", "mmr", "node_distance", "episode_mentions")


def _embedder_base() -> type:
    from graphiti_core.embedder.client import EmbedderClient

    return EmbedderClient


class EncoderEmbedder:
    """Any ``encode(texts) -> (n, d)`` embedder (the harness's, ``mempursuit_core.embed``'s) as
    Graphiti's ``EmbedderClient`` (built lazily so this module imports without Graphiti)."""

    def __new__(cls, encoder: Any):
        base = _embedder_base()

        class _Client(base):  # type: ignore[misc, valid-type]
            def __init__(self, model: Any):
                self.model = model
                self.calls = 0

            async def create(self, input_data: Any) -> list[float]:
                texts = [input_data] if isinstance(input_data, str) else list(input_data)
                self.calls += 1
                return np.asarray(self.model.encode(texts[:1]), np.float32)[0].tolist()

            async def create_batch(self, input_data_list: list[str]) -> list[list[float]]:
                self.calls += 1
                return np.asarray(self.model.encode(list(input_data_list)),
                                  np.float32).tolist()

        return _Client(encoder)


def _offline_graphiti(driver: Any, embedder: Any) -> Any:
    """A ``Graphiti`` on ``driver`` with ``embedder`` and no usable LLM (its client points at a
    closed local port, so an LLM call fails at once) nor cross-encoder."""
    from graphiti_core import Graphiti
    from graphiti_core.cross_encoder.client import CrossEncoderClient
    from graphiti_core.llm_client.config import LLMConfig
    from graphiti_core.llm_client.openai_client import OpenAIClient

    class NoCrossEncoder(CrossEncoderClient):
        async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
            raise RuntimeError("no cross-encoder in this offline graph")

    llm = OpenAIClient(LLMConfig(api_key="no-llm", base_url="http://127.0.0.1:9/v1"))
    return Graphiti(graph_driver=driver, llm_client=llm, embedder=embedder,
                    cross_encoder=NoCrossEncoder())


def open_kuzu_graphiti(path: str | Path, embedder: Any) -> Any:
    """A ``Graphiti`` on an embedded Kuzu database at ``path`` with ``embedder``, no LLM and no
    cross-encoder. Call :func:`build_fulltext` once the graph is written."""
    import os
    import warnings

    os.environ.setdefault("GRAPHITI_TELEMETRY_ENABLED", "false")  # an offline run: no PostHog
    from graphiti_core.driver.kuzu_driver import KuzuDriver

    with warnings.catch_warnings():  # graphiti-core 0.31 deprecates Kuzu (still shipped)
        warnings.simplefilter("ignore", DeprecationWarning)
        driver = KuzuDriver(db=str(path))
    return _offline_graphiti(driver, embedder)


def open_falkordblite_graphiti(path: str | Path, embedder: Any, database: str = "mempursuit") -> Any:
    """A ``Graphiti`` on embedded FalkorDB (``falkordblite``: FalkorDB inside a Redis server the
    process starts itself, its data in the file ``path``) through graphiti-core's own
    ``FalkorDriver``, with ``embedder``, no LLM and no cross-encoder. Call
    ``await graphiti.build_indices_and_constraints()`` before writing, and
    :func:`close_falkordblite_graphiti` at the end.

    falkordblite needs Python >= 3.12: ``pip install "graphiti-core[falkordb]" falkordblite``
    (docs/adapters/graphiti.md).
    """
    import os

    os.environ.setdefault("GRAPHITI_TELEMETRY_ENABLED", "false")
    from graphiti_core.driver.falkordb_driver import FalkorDriver
    from redislite.async_falkordb_client import AsyncFalkorDB

    return _offline_graphiti(FalkorDriver(falkor_db=AsyncFalkorDB(str(path)), database=database),
                             embedder)


async def close_falkordblite_graphiti(graphiti: Any) -> None:
    """Close a graph from :func:`open_falkordblite_graphiti`: Graphiti's driver (its index task,
    its connection), then falkordblite's server and client. falkordblite 0.11's own close leaves
    its server running, and its async client, collected, leaves an un-awaited ``shutdown``
    coroutine behind (a warning at exit)."""
    await graphiti.close()
    falkor = graphiti.driver.client
    try:  # its own close leaves the embedded server running: stop it
        await falkor.client.shutdown(nosave=True, now=True, force=True)
    except Exception:  # redis-py: the server went away while answering
        pass
    falkor.client._async_managed = True  # its __del__ must not start a shutdown it cannot await
    await falkor.close()


async def build_fulltext(graphiti: Any) -> None:
    """Graphiti's full-text indices (on Kuzu, ``Graphiti.build_indices_and_constraints`` is a
    no-op; the driver's graph operations create them)."""
    driver = graphiti.driver
    ops = getattr(driver, "graph_ops", None)
    if ops is not None:
        await ops.build_indices_and_constraints(driver)
    else:
        await graphiti.build_indices_and_constraints()


def _when(stamp: str | None) -> datetime:
    if not stamp:
        return datetime(2000, 1, 1, tzinfo=timezone.utc)
    t = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _uuid(*parts: str) -> str:
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, "mempursuit/" + "/".join(parts)))


async def write_turns(graphiti: Any, group_id: str, turns: Iterable[tuple],
                      fact_vectors: Sequence[Sequence[float]] | None = None,
                      name_vectors: dict[str, Sequence[float]] | None = None) -> dict[str, Any]:
    """Write dialogue turns as a Graphiti graph through Graphiti's bulk save path (no LLM).

    Parameters
    ----------
    graphiti : Graphiti
    group_id : str
    turns : iterable of tuples
        ``(turn_id, speaker, text, session_id, timestamp)``, timestamp an ISO time or None.
    fact_vectors : (n, d) array-like, optional
        Each turn's fact embedding (default: Graphiti's embedder computes them).
    name_vectors : dict, optional
        ``{speaker: name embedding}`` (default: Graphiti's embedder).

    Returns
    -------
    dict
        ``{"edges": {turn_id: edge uuid}, "entities": {speaker: EntityNode}}``.
    """
    from graphiti_core.edges import EntityEdge, EpisodicEdge
    from graphiti_core.nodes import EntityNode, EpisodeType, EpisodicNode
    from graphiti_core.utils.bulk_utils import add_nodes_and_edges_bulk

    turns = list(turns)
    speakers = list(dict.fromkeys(t[1] for t in turns))
    entities = {s: EntityNode(uuid=_uuid(group_id, "entity", s), name=s, group_id=group_id,
                              labels=["Entity"], summary="",
                              created_at=_when(min((t[4] or "" for t in turns if t[1] == s),
                                                   default=None) or None),
                              name_embedding=None if name_vectors is None
                              else list(map(float, name_vectors[s])))
                for s in speakers}
    episodes: dict[str, Any] = {}
    for _, _, _, session, stamp in turns:
        if session not in episodes:
            episodes[session] = EpisodicNode(
                uuid=_uuid(group_id, "episode", session), name=session, group_id=group_id,
                source=EpisodeType.message, source_description="dialogue session",
                content="", valid_at=_when(stamp), created_at=_when(stamp), entity_edges=[])
    edges, by_turn = [], {}
    for n, (turn, speaker, text, session, stamp) in enumerate(turns):
        other = next((s for s in speakers if s != speaker), speaker)
        edge = EntityEdge(uuid=_uuid(group_id, "fact", turn), group_id=group_id, name="SAID",
                          fact=text, source_node_uuid=entities[speaker].uuid,
                          target_node_uuid=entities[other].uuid, created_at=_when(stamp),
                          valid_at=_when(stamp), episodes=[episodes[session].uuid],
                          fact_embedding=None if fact_vectors is None
                          else list(map(float, fact_vectors[n])))
        episodes[session].entity_edges.append(edge.uuid)
        edges.append(edge)
        by_turn[turn] = edge.uuid
    mentions = []
    for session, episode in episodes.items():
        said = {t[1] for t in turns if t[3] == session}
        mentions += [EpisodicEdge(source_node_uuid=episode.uuid, target_node_uuid=entities[s].uuid,
                                  group_id=group_id, created_at=episode.created_at)
                     for s in speakers if s in said]
    await add_nodes_and_edges_bulk(graphiti.driver, list(episodes.values()), mentions,
                                   list(entities.values()), edges, graphiti.embedder)
    return {"edges": by_turn, "entities": entities}


class GraphitiBackend:
    """Graphiti on embedded Kuzu as an evaluation store.

    Parameters
    ----------
    native : str
        The Graphiti reranker that orders the pool: ``"rrf"`` (default), ``"mmr"``,
        ``"node_distance"`` or ``"episode_mentions"``.
    min_score : float, optional
        The cosine search's ``sim_min_score`` (default Graphiti's own, 0.6: with MiniLM many
        questions then get a pool of BM25 hits and a few close facts; an empty pool is a miss).
    dataset_signals : bool
        Put the benchmark's own session ids and speakers over the adapter's.
    """

    def __init__(self, *, native: str | None = None, min_score: float | None = None,
                 dataset_signals: bool = False):
        native = "rrf" if native in (None, "graphiti") else native
        if native not in NATIVE_RERANKERS:
            raise ValueError(f"the graphiti backend's native order is one of Graphiti's "
                             f"rerankers {', '.join(NATIVE_RERANKERS)}; got native={native!r}")
        self.native = native
        self.min_score = None if min_score is None else float(min_score)
        self.dataset_signals = bool(dataset_signals)
        self.name = "graphiti-kuzu" if native == "rrf" else f"graphiti-kuzu-{native}"
        if self.min_score is not None:
            self.name += f"-min{self.min_score:g}"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._graphiti: Any = None
        self._reader: Any = None
        self._groups: dict[str, str] = {}
        self._entities: dict[str, dict[str, Any]] = {}
        self._uids: dict[str, str] = {}
        self._units: dict[str, MemoryUnit] = {}

    def _run(self, coro: Any) -> Any:
        with self._lock:
            return self._loop.run_until_complete(coro)

    def build(self, units: Sequence[MemoryUnit], *, embedder: Embedder, workdir: Path,
              progress: Callable[[int], None] | None = None) -> None:
        from mempursuit_graphiti import MemPursuitGraphiti

        self._loop = asyncio.new_event_loop()
        client = EncoderEmbedder(embedder)
        self._graphiti = open_kuzu_graphiti(Path(workdir) / "graphiti.kuzu", client)
        self._reader = MemPursuitGraphiti(self._graphiti, policy="native", strict=True)
        for n, (group, members) in enumerate(units_by_group(units, self._units).items()):
            gid = self._groups[group] = f"g{n}"
            vectors = embedder.encode([u.text for u in members])
            speakers = list(dict.fromkeys(u.speaker or "speaker" for u in members))
            names = dict(zip(speakers, embedder.encode(speakers)))
            turns = [(u.uid, u.speaker or "speaker", u.text, u.session_id, u.timestamp)
                     for u in members]
            written = self._run(write_turns(self._graphiti, gid, turns, vectors, names))
            self._entities[group] = written["entities"]
            self._uids.update({e: uid for uid, e in written["edges"].items()})
            if progress is not None:
                progress(len(members))
        self._run(build_fulltext(self._graphiti))

    def _config(self, reranker: str) -> Any:
        from graphiti_core.search.search_config import EdgeReranker, SearchConfig
        from graphiti_core.search.search_config_recipes import EDGE_HYBRID_SEARCH_RRF

        update: dict[str, Any] = {"reranker": EdgeReranker[reranker]}
        if self.min_score is not None:
            update["sim_min_score"] = self.min_score
        edge = EDGE_HYBRID_SEARCH_RRF.edge_config.model_copy(update=update)
        return SearchConfig(edge_config=edge)

    def _center(self, group: str, query: str) -> str | None:
        entities = self._entities[group]
        lowered = query.lower()
        named = sorted((lowered.find(s.lower()), e.uuid) for s, e in entities.items()
                       if s.lower() in lowered)
        if named:
            return named[0][1]
        return next(iter(entities.values())).uuid if entities else None

    def pool(self, group: str, query: str, size: int, *,
             query_vector: np.ndarray | None = None) -> Pool:
        """Graphiti's fused top-``size`` facts within ``group``, as the adapter reads them."""
        size = checked_pool_size(self._graphiti is not None, size)
        gid = group_entry(self._groups, group)
        center = self._center(group, query) if self.native == "node_distance" else None
        qvec = None if query_vector is None else np.asarray(query_vector, np.float32).tolist()
        from mempursuit_graphiti import EmptyPoolError

        try:
            got = self._run(self._reader.edge_pool(
                query, config=self._config(self.native), size=size, query_vector=qvec,
                group_ids=[gid], center_node_uuid=center, reranker=self.native))
        except EmptyPoolError:  # no BM25 hit and no fact above sim_min_score: a miss
            qv = np.asarray(qvec if qvec is not None else self._embed(query), np.float32)
            return Pool([], vectors=np.zeros((0, qv.shape[0]), np.float32),
                        query_vector=qv, native_scores=np.zeros(0))
        if got.unscored:
            raise RuntimeError(f"{len(got.unscored)} pool facts have no stored embedding")
        c = got.candidates
        return pool_from_candidates(c, [self._uids[e.uuid] for e in c.items], units=self._units,
                                    dataset_signals=self.dataset_signals)

    def _embed(self, query: str) -> list[float]:
        return self._run(self._graphiti.embedder.create(input_data=[query]))

    def close(self) -> None:
        graphiti, self._graphiti, self._reader = self._graphiti, None, None
        if graphiti is not None and self._loop is not None:
            try:
                self._run(graphiti.close())
            except Exception:  # noqa: BLE001 - closing a read-only embedded database
                pass
        if self._loop is not None:
            self._loop.close()
            self._loop = None
