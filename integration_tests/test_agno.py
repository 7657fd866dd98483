"""The Agno adapter on the real framework: ``MemPursuitReranker`` as the reranker of a real
``Knowledge`` over ``LanceDb`` (a local folder) and over ``PgVector`` (a real PostgreSQL with
pgvector from the ``pgserver`` wheel), written by ``Knowledge.insert`` and embedded with the
packaged MiniLM (``MemPursuitEmbedder``)."""

import asyncio
import logging

import numpy as np
import pytest

pytest.importorskip("agno", reason='needs pip install -e ".[agno]"')
pytest.importorskip("lancedb", reason='needs pip install -e ".[agno]"')

from agno.knowledge.document import Document  # noqa: E402
from agno.knowledge.knowledge import Knowledge  # noqa: E402
from agno.vectordb.lancedb import LanceDb  # noqa: E402

from mempursuit_agno import MemPursuitEmbedder, MemPursuitReranker  # noqa: E402
from mempursuit_core import testing  # noqa: E402
from mempursuit_core.embed import get_embedder  # noqa: E402

from paraphrase_facts import CAT, FACTS, PARAPHRASES, QUESTION, run_example  # noqa: E402
from parity import Recorder  # noqa: E402
from pg_fixture import postgres_server  # noqa: E402

TIMES = [f"2024-03-0{i + 1}T10:00:00" for i in range(len(FACTS))]


@pytest.fixture(scope="module")
def embedder():
    return MemPursuitEmbedder(options={"threads": 1})


def _fill(db, embedder):
    knowledge = Knowledge(vector_db=db)
    for i, (fact, when) in enumerate(zip(FACTS, TIMES)):
        knowledge.insert(text_content=fact, name=f"memory {i}",
                         metadata={"speaker": "alice", "timestamp": when})
    return db


@pytest.fixture(scope="module")
def lance(tmp_path_factory, embedder):
    return _fill(LanceDb(table_name="facts", uri=str(tmp_path_factory.mktemp("lance")),
                         embedder=embedder), embedder)


@pytest.fixture(scope="module")
def pgvector(tmp_path_factory, embedder):
    pytest.importorskip("pgvector", reason="needs .ci/requirements-agno.txt (pgvector)")
    from agno.vectordb.pgvector import PgVector

    with postgres_server(tmp_path_factory.mktemp("pg") / "pg") as server:
        uri = server.get_uri().replace("postgresql://", "postgresql+psycopg://", 1)
        db = PgVector(table_name="facts", db_url=uri, embedder=embedder)
        yield _fill(db, embedder)
        db.db_engine.dispose()


@pytest.fixture(params=["lancedb", "pgvector"])
def db(request):
    return request.getfixturevalue("lance" if request.param == "lancedb" else "pgvector")


def _texts(docs):
    return [d.content for d in docs]


def _same(ours, theirs):
    return [(d.content, d.name, d.meta_data) for d in ours] == [
        (d.content, d.name, d.meta_data) for d in theirs]


def test_knowledge_keeps_the_complement_and_drops_a_paraphrase(db):
    alone = _texts(Knowledge(vector_db=db).search(QUESTION, max_results=2))
    assert set(alone) <= set(PARAPHRASES)  # Agno's own top 2: two paraphrases, no cat
    ours = _texts(Knowledge(vector_db=db, reranker=MemPursuitReranker()).search(
        QUESTION, max_results=2))
    assert len(ours) == 2 and CAT in ours and (set(ours) - {CAT}) <= set(PARAPHRASES)


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_native_policy_is_agno_without_a_reranker(db, k):
    alone = Knowledge(vector_db=db).search(QUESTION, max_results=k)
    ours = Knowledge(vector_db=db, reranker=MemPursuitReranker(policy="native")).search(
        QUESTION, max_results=k)
    assert _same(ours, alone) and len(ours) == k


def test_the_policy_sees_the_pool_not_k(db):
    """Knowledge widens the vector db's read by the reranker's ``search_limit``: the policy
    is handed every stored memory (7 < P = 200), or P of them, never only K."""
    recorder = Recorder()
    Knowledge(vector_db=db, reranker=MemPursuitReranker(policy=recorder)).search(
        QUESTION, max_results=2)
    small = Recorder()
    Knowledge(vector_db=db, reranker=MemPursuitReranker(policy=small, pool=4)).search(
        QUESTION, max_results=2)
    assert [c["P"] for c in recorder.calls] == [len(FACTS)]
    assert [c["P"] for c in small.calls] == [4]
    reranker = MemPursuitReranker(pool=50)
    assert (reranker.candidate_multiplier, reranker.max_candidates) == (50, 50)
    assert [reranker.search_limit(n) for n in (1, 10, 60)] == [50, 50, 60]
    assert MemPursuitReranker(policy="native").search_limit(10) == 10  # no widening


def test_the_stored_vectors_and_metadata_are_handed_over(db, embedder):
    docs = db.search(QUESTION, limit=200)
    pool = MemPursuitReranker().candidate_pool(QUESTION, docs)
    encoder = get_embedder("minilm", threads=1)
    assert np.allclose(pool.vectors, encoder.encode(_texts(docs)), atol=1e-5)  # not re-embedded
    assert np.allclose(pool.query_vector, encoder.encode([QUESTION])[0], atol=1e-5)
    assert list(pool.signals["speakers"]) == ["alice"] * len(FACTS)
    assert list(pool.signals["timestamps"]) == [TIMES[FACTS.index(t)] for t in _texts(docs)]
    assert len(set(pool.signals["session_ids"])) == len(FACTS)  # one per inserted content
    assert "titles" not in pool.signals and pool.native_scores is None


def test_the_conformance_checks_every_adapter_runs(lance):
    """``mempursuit_core.testing`` through ``Knowledge.search``: keyword-only options
    defaulting to None, bad options refused at construction, ``policy="native"`` is Agno
    without a reranker, a failing policy returns its order with one warning, ``strict=True``
    raises through Knowledge (a ValueError, which Knowledge re-raises)."""
    testing.check_adapter(
        MemPursuitReranker,
        build=lambda **o: Knowledge(vector_db=lance, reranker=MemPursuitReranker(**o)),
        read=lambda knowledge: knowledge.search(QUESTION, max_results=3),
        native=lambda: Knowledge(vector_db=lance).search(QUESTION, max_results=3),
        same=_same, ids=lambda docs: [d.id or d.name for d in docs],
        trace_of=lambda knowledge: knowledge.reranker.last_trace)


def test_async_search_goes_through_the_reranker(lance):
    ours = asyncio.run(Knowledge(vector_db=lance, reranker=MemPursuitReranker()).asearch(
        QUESTION, max_results=2))
    assert CAT in _texts(ours)
    native = asyncio.run(Knowledge(vector_db=lance, reranker=MemPursuitReranker(
        policy="native")).asearch(QUESTION, max_results=2))
    assert _same(native, Knowledge(vector_db=lance).search(QUESTION, max_results=2))


def test_documents_without_vectors_fall_back_with_one_warning(lance, caplog):
    docs = [Document(content=d.content, name=d.name, meta_data=d.meta_data,
                     embedder=d.embedder) for d in lance.search(QUESTION, limit=200)]
    with caplog.at_level(logging.WARNING):
        got = MemPursuitReranker().rerank(QUESTION, docs, limit=3)
    assert got == docs[:3]
    assert sum("without their embedding" in r.getMessage() for r in caplog.records) == 1
    with pytest.raises(ValueError, match="without their embedding"):
        MemPursuitReranker(strict=True).rerank(QUESTION, docs, limit=3)


@pytest.mark.parametrize("bad", [dict(k=0), dict(pool="200"), dict(policy="no-such-policy"),
                                 dict(strict="yes"), dict(embedder="minilm"),
                                 dict(candidate_multiplier=5), dict(max_candidates=50),
                                 dict(policy_options={"no_such_option": 1})])
def test_bad_options_fail_at_construction(bad):
    with pytest.raises((TypeError, ValueError, KeyError)):
        MemPursuitReranker(**bad)


def test_options_are_kept_and_k_caps_max_results(lance):
    r = MemPursuitReranker(k=2, pool=50, policy="mmr", lam=0.3)
    assert (r.k, r.pool, r.policy, r.policy_options, r.strict) == (2, 50, "mmr", {"lam": 0.3},
                                                                    False)
    knowledge = Knowledge(vector_db=lance, reranker=r)
    assert len(knowledge.search(QUESTION, max_results=5)) == 2
    assert len(knowledge.search(QUESTION, max_results=1)) == 1
    assert len(MemPursuitReranker().rerank(QUESTION, lance.search(QUESTION, limit=200))) == 7
    assert MemPursuitReranker().rerank(QUESTION, [], limit=3) == []


def test_the_embedder_is_the_packaged_minilm(embedder):
    encoder = get_embedder("minilm", threads=1)
    assert embedder.get_embedding(FACTS[0]) == pytest.approx(
        encoder.encode([FACTS[0]])[0].tolist(), abs=1e-6)
    assert embedder.dimensions == 384
    with pytest.raises(ValueError, match="dimensions=384"):
        MemPursuitEmbedder(dimensions=768).get_embedding("x")


def test_the_example_runs_as_written():
    stdout = run_example("agno_quickstart.py")
    alone, ours = stdout.split("MemPursuitReranker:")
    assert CAT not in alone and CAT in ours


def test_eval_backend_pools_are_the_vector_dbs_own_read(tmp_path):
    """``mempursuit eval --framework agno``: units written by ``LanceDb.insert`` with the
    harness's vectors, one table per group; the pool is the vector db's own top-P (the read
    ``Knowledge.search`` makes for the reranker) in its order, read by the reranker's
    ``candidate_pool``, with the stored vectors and only the adapter's signals; the policy
    reorders it exactly as the reranker inside ``Knowledge`` does; a rerun reopens the store."""
    from mempursuit_eval.backends.agno import AgnoBackend
    from mempursuit_eval.runner import build_backend
    from parity import assert_parity, built_pool, harness_order

    backend = build_backend("agno")
    assert isinstance(backend, AgnoBackend)
    encoder = get_embedder("minilm", threads=1)
    units, pool, texts = built_pool(backend, encoder, tmp_path, FACTS, QUESTION)
    assert not {"speakers", "session_ids", "timestamps", "titles"} & set(pool.signals)
    db = backend._db("alice")
    alone = Knowledge(vector_db=db).search(QUESTION, max_results=3)
    assert backend.pool("alice", QUESTION, 3).items == [d.meta_data["uid"] for d in alone]
    # parity: the harness's order is the reranker's inside Knowledge.search, same signals
    order, harness_signals = harness_order(pool, 3)
    recorder = Recorder()
    ours = Knowledge(vector_db=db, reranker=MemPursuitReranker(policy=recorder)).search(
        QUESTION, max_results=3)
    assert [d.meta_data["uid"] for d in ours] == order
    assert_parity(harness_signals, recorder.calls[-1]["signals"])
    again = AgnoBackend(dataset_signals=True)
    assert again.load_existing(units, embedder=encoder, workdir=tmp_path)  # the saved store
    mixed = again.pool("alice", QUESTION, 200)
    assert mixed.items == pool.items and set(mixed.signals["speakers"]) == {"alice"}
    assert not AgnoBackend().load_existing(units[:-1], embedder=encoder, workdir=tmp_path)
    backend.close()


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_query_keeps_agnos_order_with_one_warning(lance, blank, caplog):
    """Issue 64: what ``policy="native"`` returns for an empty or blank query, one warning."""
    native = Knowledge(vector_db=lance, reranker=MemPursuitReranker(policy="native")).search(
        blank, max_results=2)
    with caplog.at_level(logging.WARNING):
        ours = Knowledge(vector_db=lance, reranker=MemPursuitReranker()).search(
            blank, max_results=2)
    assert _same(ours, native) and len(ours) == 2
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1 and "MemPursuitReranker: the query is" in warned[0], warned
