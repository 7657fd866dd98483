"""mempursuit_graphiti on a real Graphiti graph: graphiti-core on its embedded Kuzu driver (a
database file per test module), the packaged MiniLM (int8 ONNX) behind Graphiti's
``EmbedderClient``, and no LLM: the fixture dialogue is written through Graphiti's own save paths
(``add_nodes_and_edges_bulk``, ``EntityNode.save`` / ``EntityEdge.save``), one fact edge per turn.
Graphiti's LLM path (``add_episode`` extraction, ``add_triplet``'s edge resolution) is not needed
by the read path and is not exercised. Also the ``graphiti`` evaluation store and the example.
"""

from __future__ import annotations

import asyncio
import logging
import os
from datetime import datetime, timezone

import numpy as np
import pytest

pytest.importorskip("graphiti_core", reason='needs the [graphiti] extra: '
                    'pip install -e ".[graphiti]"')
pytest.importorskip("kuzu", reason='needs the [graphiti] extra (graphiti-core[kuzu])')

from dialogue_fixture import fixture_conversation  # noqa: E402
from graphiti_core.edges import EntityEdge  # noqa: E402
from graphiti_core.nodes import EntityNode  # noqa: E402
from graphiti_core.search.search_config import EdgeReranker, SearchConfig  # noqa: E402
from graphiti_core.search.search_config_recipes import (  # noqa: E402
    COMBINED_HYBRID_SEARCH_RRF, EDGE_HYBRID_SEARCH_MMR, EDGE_HYBRID_SEARCH_RRF,
    NODE_HYBRID_SEARCH_RRF)
from graphiti_core.search.search_utils import get_embeddings_for_edges  # noqa: E402
from parity import Recorder, assert_parity, harness_order  # noqa: E402
from paraphrase_facts import run_example  # noqa: E402

from mempursuit_core.embed import get_embedder  # noqa: E402
from mempursuit_eval.backends.graphiti import (EncoderEmbedder, GraphitiBackend,  # noqa: E402
                                               build_fulltext, open_kuzu_graphiti, write_turns)
from mempursuit_graphiti import GraphitiReadError, MemPursuitGraphiti  # noqa: E402

os.environ.setdefault("GRAPHITI_TELEMETRY_ENABLED", "false")
GROUP = "dlg-1"
QUERIES = ["What does Priya do for a living?", "Where does Tomas go running?",
           "Which pet did Priya adopt?"]


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def model():
    return get_embedder()


@pytest.fixture(scope="module")
def graph(tmp_path_factory, model):
    """The fixture's first conversation as a Kuzu-backed Graphiti graph (one edge per turn)."""
    conv = fixture_conversation(0)
    turns = [(t["dia_id"], t["speaker"], t["text"], f"session-{t['session']}", t["created_at"])
             for t in conv["turns"]]
    embedder = EncoderEmbedder(model)
    graphiti = open_kuzu_graphiti(tmp_path_factory.mktemp("graphiti") / "g.kuzu", embedder)

    async def build():
        written = await write_turns(graphiti, GROUP, turns)
        await build_fulltext(graphiti)
        return written

    written = run(build())
    return {"graphiti": graphiti, "embedder": embedder, "turns": turns, "written": written}


def uuids(items):
    return [x.uuid for x in items]


def test_native_is_graphitis_own_search(graph):
    g = graph["graphiti"]
    wrapped = MemPursuitGraphiti(g, policy="native")
    for q in QUERIES:
        own = run(g.search(q, group_ids=[GROUP], num_results=5))
        assert own, q
        assert uuids(run(wrapped.search(q, group_ids=[GROUP], num_results=5))) == uuids(own)
        assert list(wrapped.last_trace.final) == list(wrapped.last_trace.native) == uuids(own)
        own_ = run(g.search_(q, COMBINED_HYBRID_SEARCH_RRF.model_copy(update={"limit": 4}),
                             group_ids=[GROUP]))
        ours_ = run(wrapped.search_(q, COMBINED_HYBRID_SEARCH_RRF.model_copy(update={"limit": 4}),
                                    group_ids=[GROUP]))
        assert uuids(ours_.edges) == uuids(own_.edges)
        assert uuids(ours_.nodes) == uuids(own_.nodes)
    # with k: Graphiti's own result for limit = min(k, num_results)
    capped = MemPursuitGraphiti(g, policy="native", k=3)
    own3 = run(g.search(QUERIES[0], group_ids=[GROUP], num_results=3))
    assert uuids(run(capped.search(QUERIES[0], group_ids=[GROUP], num_results=10))) == uuids(own3)


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_query_is_graphitis_own_search_with_one_warning(graph, blank, caplog):
    """Issue 64: Graphiti's own search (and search_) for an empty or blank query, one warning
    each."""
    g = graph["graphiti"]
    wrapped = MemPursuitGraphiti(g)
    config = COMBINED_HYBRID_SEARCH_RRF.model_copy(update={"limit": 4})
    for ours, theirs in (
            (lambda: uuids(run(wrapped.search(blank, group_ids=[GROUP], num_results=5))),
             uuids(run(g.search(blank, group_ids=[GROUP], num_results=5)))),
            (lambda: uuids(run(wrapped.search_(blank, config, group_ids=[GROUP])).edges),
             uuids(run(g.search_(blank, config, group_ids=[GROUP])).edges))):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert ours() == theirs
        warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warned) == 1 and "MemPursuitGraphiti: the query is" in warned[0], warned

def test_policy_reorders_graphitis_pool_with_stored_vectors(graph):
    g, embedder = graph["graphiti"], graph["embedder"]
    wrapped = MemPursuitGraphiti(g, strict=True)
    q = QUERIES[0]
    pool = run(wrapped.edge_pool(q, group_ids=[GROUP]))
    # the pool is Graphiti's own fused (RRF) search at limit P, in that order
    own = run(g.search_(q, EDGE_HYBRID_SEARCH_RRF.model_copy(update={"limit": 200}),
                        group_ids=[GROUP]))
    assert uuids(pool.native) == uuids(own.edges)
    assert len(pool.candidates) == len(own.edges) > 10 and not pool.unscored
    np.testing.assert_allclose(pool.candidates.native_scores, own.edge_reranker_scores)
    # vectors are the stored fact embeddings, read from the graph
    stored = run(get_embeddings_for_edges(g.driver, own.edges))
    np.testing.assert_allclose(pool.candidates.vectors,
                               np.asarray([stored[e.uuid] for e in own.edges]), atol=1e-6)
    # one embedder call per search (the query), none for the candidates
    before = embedder.calls
    got = run(wrapped.search(q, group_ids=[GROUP], num_results=5))
    assert embedder.calls == before + 1
    assert len(got) == 5 and set(uuids(got)) <= set(uuids(own.edges))
    assert uuids(got) == uuids(wrapped.choose(pool, 5))
    trace = wrapped.last_trace  # the search's trace: Graphiti's own pool, what it returned
    assert list(trace.native) == uuids(own.edges) and list(trace.final) == uuids(got)
    assert trace.vectors == {"store": len(own.edges)} and trace.fallback is None
    native5 = run(g.search(q, group_ids=[GROUP], num_results=5))
    assert uuids(got) != uuids(native5)  # the policy does reorder this pool


def test_signals_are_what_graphiti_stores(graph):
    g = graph["graphiti"]
    wrapped = MemPursuitGraphiti(g, strict=True)
    pool = run(wrapped.edge_pool(QUERIES[1], group_ids=[GROUP]))
    s = pool.candidates.signals
    by_text = {t[2]: t for t in graph["turns"]}
    episodes = {}
    for edge, text, stamp, session, names in zip(pool.candidates.items, s["texts"],
                                                 s["timestamps"], s["session_ids"], s["entities"]):
        turn = by_text[edge.fact]
        assert text == edge.fact
        assert stamp == turn[4]  # the session's time (Kuzu returns UTC times without a zone)
        assert names[0] == turn[1] and names[1] in ("Priya", "Tomas") and names[1] != names[0]
        episodes.setdefault(turn[3], set()).add(session)
    # one episode per session: its uuid is the session id of every fact from that session
    assert all(len(v) == 1 for v in episodes.values()) and len(episodes) > 1
    assert "speakers" not in s  # Graphiti keeps no speaker apart from the entity names


def test_node_search_reorders_entities(graph):
    g = graph["graphiti"]
    wrapped = MemPursuitGraphiti(g, strict=True)
    config = NODE_HYBRID_SEARCH_RRF.model_copy(update={"limit": 2})
    config.node_config = config.node_config.model_copy(update={"sim_min_score": 0.0})
    own = run(g.search_("Priya", config, group_ids=[GROUP]))
    ours = run(wrapped.search_("Priya", config, group_ids=[GROUP]))
    assert sorted(n.name for n in ours.nodes) == sorted(n.name for n in own.nodes)
    assert ours.node_reranker_scores == [1.0, 0.5][:len(ours.nodes)]
    pool = run(wrapped.node_pool("Priya", config=config, group_ids=[GROUP]))
    assert pool.candidates.vectors.shape == (len(pool.candidates), 384)


def test_episode_and_community_scopes_pass_through(graph):
    g = graph["graphiti"]
    wrapped = MemPursuitGraphiti(g, strict=True)
    config = COMBINED_HYBRID_SEARCH_RRF.model_copy(update={"limit": 3})
    own = run(g.search_("session", config, group_ids=[GROUP]))
    ours = run(wrapped.search_("session", config, group_ids=[GROUP]))
    assert uuids(ours.episodes) == uuids(own.episodes)
    assert uuids(ours.communities) == uuids(own.communities)


def test_bad_input_returns_graphitis_result_with_one_warning(graph, caplog, tmp_path):
    g = graph["graphiti"]
    q = QUERIES[0]
    wrapped, strict = MemPursuitGraphiti(g), MemPursuitGraphiti(g, strict=True)
    # a group id that does not exist: Graphiti's own (empty) result, one warning
    with caplog.at_level(logging.WARNING, logger="mempursuit_graphiti"):
        caplog.clear()
        assert run(wrapped.search(q, group_ids=["no-such-group"])) == []
    assert len([r for r in caplog.records if "Graphiti" in r.getMessage()]) == 1
    with pytest.raises(GraphitiReadError, match="no facts"):
        run(strict.search(q, group_ids=["no-such-group"]))
    # a pool option shorter than K is raised to K (as in every adapter)
    short = MemPursuitGraphiti(g, pool=2, strict=True)
    assert len(run(short.search(q, group_ids=[GROUP], num_results=6))) == 6
    # an empty graph, and a graph whose facts were saved without embeddings
    empty = open_kuzu_graphiti(tmp_path / "empty.kuzu", graph["embedder"])
    run(build_fulltext(empty))
    with caplog.at_level(logging.WARNING, logger="mempursuit_graphiti"):
        caplog.clear()
        assert run(MemPursuitGraphiti(empty).search(q)) == []
    assert len(caplog.records) == 1
    bare = open_kuzu_graphiti(tmp_path / "bare.kuzu", graph["embedder"])
    now = datetime(2023, 5, 1, tzinfo=timezone.utc)
    priya = EntityNode(name="Priya", group_id="bare", labels=["Entity"], created_at=now,
                       name_embedding=[0.0] * 384)
    tomas = EntityNode(name="Tomas", group_id="bare", labels=["Entity"], created_at=now,
                       name_embedding=[0.0] * 384)
    facts = [EntityEdge(source_node_uuid=priya.uuid, target_node_uuid=tomas.uuid, name="SAID",
                        fact=f, group_id="bare", created_at=now, episodes=[])
             for f in ("Priya works as a nurse", "Priya is a nurse at the city hospital")]

    async def save():
        for node in (priya, tomas):
            await node.save(bare.driver)
        for edge in facts:
            await edge.save(bare.driver)
        await build_fulltext(bare)

    run(save())
    own = run(bare.search("nurse", group_ids=["bare"]))
    assert own  # found by BM25 alone
    with caplog.at_level(logging.WARNING, logger="mempursuit_graphiti"):
        caplog.clear()
        assert uuids(run(MemPursuitGraphiti(bare).search("nurse", group_ids=["bare"]))) == \
            uuids(own)
    assert len(caplog.records) == 1 and "fact_embedding" in caplog.records[0].getMessage()
    bare_read = MemPursuitGraphiti(bare)
    run(bare_read.search("nurse", group_ids=["bare"]))
    assert "fact_embedding" in bare_read.last_trace.fallback  # the trace says it fell back
    assert list(bare_read.last_trace.final) == uuids(own)
    with pytest.raises(GraphitiReadError, match="fact_embedding"):
        run(MemPursuitGraphiti(bare, strict=True).search("nurse", group_ids=["bare"]))


def test_eval_backend_reads_through_the_adapter(graph, model, tmp_path):
    from mempursuit_eval.base import MemoryUnit

    units = [MemoryUnit(uid=t[0], text=t[2], group=GROUP, session_id=t[3], source_ids=(t[0],),
                        timestamp=t[4], speaker=t[1]) for t in graph["turns"]]
    store = GraphitiBackend()
    try:
        store.build(units, embedder=model, workdir=tmp_path)
        q = QUERIES[2]
        pool = store.pool(GROUP, q, 200)
        harness, h_signals = harness_order(pool, 5)
        # the same question through the adapter on the store's own graph
        rec = Recorder()
        wrapped = MemPursuitGraphiti(store._graphiti, policy=rec, strict=True)
        got = store._run(wrapped.search(q, group_ids=["g0"], num_results=5))
        assert harness == [store._uids[e.uuid] for e in got]
        assert_parity(h_signals, rec.calls[-1]["signals"],
                      expected={"texts", "timestamps", "session_ids"})
        # a named baseline: the same candidates in Graphiti's own MMR order (its search_ at limit
        # P), with none dropped by a score floor
        store.native = "mmr"
        mmr = store.pool(GROUP, q, 200)
        every = EDGE_HYBRID_SEARCH_MMR.model_copy(update={"limit": 200,
                                                           "reranker_min_score": float("-inf")})
        own = store._run(store._graphiti.search_(q, every, group_ids=["g0"]))
        assert mmr.items == [store._uids[e.uuid] for e in own.edges]
        assert sorted(mmr.items) == sorted(pool.items) and mmr.items != pool.items
        # Graphiti's default floor (reranker_min_score = 0) keeps only candidates closer to the
        # query than to every other candidate: a few of the pool, which is why it is lifted
        floor = store._run(store._graphiti.search_(
            q, EDGE_HYBRID_SEARCH_MMR.model_copy(update={"limit": 200}), group_ids=["g0"]))
        assert len(floor.edges) < len(mmr.items) / 2
    finally:
        store.close()


def test_backend_rejects_an_unknown_native_order():
    with pytest.raises(ValueError, match="rerankers"):
        GraphitiBackend(native="cross_encoder")
    assert EdgeReranker.mmr.name == "mmr" and SearchConfig().limit == 10


def test_example_runs_offline():
    out = run_example("graphiti_quickstart.py")
    native, rest = out.split("MemPursuitGraphiti's 3 (the default policy")
    ours, paper = rest.split("the paper's rule")
    assert "Graphiti's own top 3" in native and "reproduction" in paper.splitlines()[0]
    # Graphiti's top 3 holds two paraphrases of the job and the shift second; the default ranks
    # the shift (the answer) first; the paper's rule keeps one paraphrase and adds the cat
    assert native.count("nurse") == 2 and "six in the morning" in ours.splitlines()[1]
    assert paper.count("nurse") == 1 and "Miso" in paper
