"""The Haystack adapter on the real framework: ``MemPursuitRanker`` in a real ``Pipeline`` after
``InMemoryEmbeddingRetriever`` (``InMemoryDocumentStore``) and after ``QdrantEmbeddingRetriever``
on a local Qdrant folder (``qdrant-haystack``, no server), embedded with the packaged MiniLM."""

import logging
import os

import pytest

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
pytest.importorskip("haystack", reason='needs pip install -e ".[haystack]"')
pytest.importorskip("haystack_integrations.document_stores.qdrant",
                    reason="needs .ci/requirements-haystack.txt (qdrant-haystack)")

from haystack import Document, Pipeline, component  # noqa: E402
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever  # noqa: E402
from haystack.document_stores.in_memory import InMemoryDocumentStore  # noqa: E402
from haystack_integrations.components.retrievers.qdrant import (  # noqa: E402
    QdrantEmbeddingRetriever)
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore  # noqa: E402

from mempursuit_core import testing  # noqa: E402
from mempursuit_core.embed import get_embedder  # noqa: E402
from mempursuit_haystack import (MemPursuitDocumentEmbedder, MemPursuitRanker,  # noqa: E402
                                 MemPursuitTextEmbedder)

from paraphrase_facts import CAT, FACTS, PARAPHRASES, QUESTION, run_example  # noqa: E402


@pytest.fixture(scope="module")
def embedded():
    """The facts as Haystack documents with their MiniLM embeddings (MemPursuitDocumentEmbedder)."""
    return MemPursuitDocumentEmbedder(threads=1).run(
        [Document(content=f, meta={"speaker": "alice"}) for f in FACTS])["documents"]


@pytest.fixture(scope="module")
def query_vector():
    return MemPursuitTextEmbedder(threads=1).run(QUESTION)["embedding"]


@pytest.fixture(params=["in-memory", "qdrant-local"])
def store(request, embedded, tmp_path):
    if request.param == "in-memory":
        ds = InMemoryDocumentStore()
        ds.write_documents(embedded)
        yield ds, lambda top_k, **kw: InMemoryEmbeddingRetriever(ds, top_k=top_k, **kw)
        return
    ds = QdrantDocumentStore(path=str(tmp_path / "qdrant"), index="facts", embedding_dim=384,
                             recreate_index=True)
    ds.write_documents(embedded)
    yield ds, lambda top_k, **kw: QdrantEmbeddingRetriever(ds, top_k=top_k, **kw)
    ds.client.close() if getattr(ds, "client", None) is not None else None


def _pipeline(retriever, ranker=None):
    p = Pipeline()
    p.add_component("embedder", MemPursuitTextEmbedder(threads=1))
    p.add_component("retriever", retriever)
    p.connect("embedder.embedding", "retriever.query_embedding")
    if ranker is not None:
        p.add_component("ranker", ranker)
        p.connect("retriever.documents", "ranker.documents")
        p.connect("embedder.embedding", "ranker.query_embedding")
    return p


def _run(p, has_ranker=True, **ranker_args):
    data = {"embedder": {"text": QUESTION}}
    if has_ranker:
        data["ranker"] = {"query": QUESTION, **ranker_args}
    out = p.run(data)
    return out["ranker" if has_ranker else "retriever"]["documents"]


def _texts(docs):
    return [d.content for d in docs]


def test_pipeline_keeps_the_complement_and_drops_a_paraphrase(store):
    _, retriever = store
    alone = _texts(_run(_pipeline(retriever(2)), has_ranker=False))
    assert set(alone) <= set(PARAPHRASES)  # Haystack's own top 2: two paraphrases, no cat
    ranker = MemPursuitRanker(top_k=2)
    docs = _run(_pipeline(retriever(200, return_embedding=True), ranker))
    ours = _texts(docs)
    assert len(ours) == 2 and CAT in ours and (set(ours) - {CAT}) <= set(PARAPHRASES)
    assert ranker.vector_sources == {"documents": len(FACTS)}  # the stored vectors, as returned
    trace = ranker.last_trace  # what the read did, documents by id
    assert list(trace.final) == [d.id for d in docs] and len(trace.native) == len(FACTS)
    assert trace.vectors == {"documents": len(FACTS)} and trace.fallback is None
    assert repr(trace).startswith("ReadTrace(policy=") and "\n" not in repr(trace)


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_native_policy_is_haystack_without_us(store, k):
    _, retriever = store
    alone = _run(_pipeline(retriever(k)), has_ranker=False)
    ours = _run(_pipeline(retriever(200), MemPursuitRanker(top_k=k, policy="native")))
    assert [(d.id, d.content, d.score) for d in ours] == [(d.id, d.content, d.score) for d in alone]


def test_stored_vectors_are_read_from_the_document_store(store):
    """A retriever without ``return_embedding``: the vectors come from ``document_store=`` by
    id (Qdrant: ``get_documents_by_id``; in memory: ``filter_documents`` on ``id``)."""
    ds, retriever = store
    ranker = MemPursuitRanker(top_k=2, document_store=ds)
    ours = _texts(_run(_pipeline(retriever(200), ranker)))
    assert CAT in ours and len(ours) == 2
    assert ranker.vector_sources == {"store": len(FACTS)}


def test_documents_without_vectors_are_embedded_once_with_one_warning(embedded, caplog):
    docs = [Document(content=d.content, id=d.id) for d in embedded]  # e.g. a BM25 retriever's
    seen = []

    @component
    class CountingEmbedder:
        @component.output_types(embedding=list)
        def run(self, text: str):
            seen.append(text)
            return {"embedding": get_embedder("minilm", threads=1).encode([text])[0].tolist()}

    ranker = MemPursuitRanker(top_k=2, text_embedder=CountingEmbedder())
    with caplog.at_level(logging.WARNING, logger="mempursuit_haystack.ranker"):
        first = _texts(ranker.run(query=QUESTION, documents=docs)["documents"])
        second = _texts(ranker.run(query=QUESTION, documents=docs)["documents"])
    assert first == second and CAT in first
    assert sorted(t for t in seen if t != QUESTION) == sorted(FACTS)  # once each: then the cache
    assert sum("came without their vectors" in r.getMessage() for r in caplog.records) == 1
    assert ranker.vector_sources == {"embedded": 2 * len(FACTS)}


def test_the_conformance_checks_every_adapter_runs(embedded, query_vector):
    """``mempursuit_core.testing``: keyword-only options defaulting to None, bad options refused
    at construction, ``policy="native"`` is the retriever's first ``top_k``, a failing policy
    returns them with one warning, ``strict=True`` raises."""
    docs = InMemoryEmbeddingRetriever(_store(embedded), top_k=200, return_embedding=True).run(
        query_embedding=query_vector)["documents"]
    testing.check_adapter(
        MemPursuitRanker, build=lambda **o: MemPursuitRanker(top_k=3, **o),
        read=lambda r: r.run(query=QUESTION, documents=docs, query_embedding=query_vector),
        native=lambda: {"documents": docs[:3]},
        ids=lambda out: [d.id for d in out["documents"]])


def _store(embedded):
    ds = InMemoryDocumentStore()
    ds.write_documents(embedded)
    return ds


def test_a_failing_embedder_returns_the_retrieved_order_and_strict_raises(embedded, caplog):
    @component
    class BrokenEmbedder:
        @component.output_types(embedding=list)
        def run(self, text: str):
            raise RuntimeError("embedder offline")

    docs = [Document(content=d.content, id=d.id, score=1.0 - i / 10)
            for i, d in enumerate(embedded)]
    with caplog.at_level(logging.WARNING):
        got = MemPursuitRanker(top_k=3, text_embedder=BrokenEmbedder()).run(
            query=QUESTION, documents=docs)["documents"]
    assert got == docs[:3]
    assert sum("embedder offline" in r.getMessage() for r in caplog.records) == 1
    with pytest.raises(RuntimeError, match="embedder offline"):
        MemPursuitRanker(top_k=3, text_embedder=BrokenEmbedder(), strict=True).run(
            query=QUESTION, documents=docs)


@pytest.mark.parametrize("bad", [dict(top_k=0), dict(top_k=2.5), dict(k=0), dict(pool="200"),
                                 dict(policy="no-such-policy"), dict(strict="yes"),
                                 dict(text_embedder="minilm"), dict(document_store=3),
                                 dict(policy_options={"no_such_option": 1})])
def test_bad_options_fail_at_construction(bad):
    with pytest.raises((TypeError, ValueError, KeyError)):
        MemPursuitRanker(**bad)


def test_options_are_kept_and_run_top_k_is_checked(embedded, query_vector):
    r = MemPursuitRanker(top_k=5, k=4, pool=50, policy="mmr", lam=0.3)
    assert (r.top_k, r.k, r.pool, r.policy, r.policy_options) == (5, 4, 50, "mmr", {"lam": 0.3})
    assert len(r.run(query=QUESTION, documents=embedded, query_embedding=query_vector)
               ["documents"]) == 4  # k caps top_k
    assert len(r.run(query=QUESTION, documents=embedded, query_embedding=query_vector,
                     top_k=2)["documents"]) == 2  # run's top_k overrides, k still caps
    with pytest.raises((TypeError, ValueError)):
        r.run(query=QUESTION, documents=embedded, query_embedding=query_vector, top_k=0)


def test_k_above_the_pool_and_no_document_dropped(embedded, query_vector, caplog):
    with caplog.at_level(logging.WARNING, logger="mempursuit"):
        r = MemPursuitRanker(top_k=5, pool=3)
        got = r.run(query=QUESTION, documents=embedded, query_embedding=query_vector)["documents"]
        r.run(query=QUESTION, documents=embedded, query_embedding=query_vector)
    assert len(got) == 5 and len({d.id for d in got}) == 5
    assert {d.id for d in got} <= {d.id for d in embedded}
    assert sum("above pool=3" in r.getMessage() for r in caplog.records) == 1
    # top_k above what the retriever gave, and top_k=None: every document, reordered, none lost
    for top_k in (50, None):
        every = MemPursuitRanker(top_k=top_k).run(query=QUESTION, documents=embedded,
                                                  query_embedding=query_vector)["documents"]
        assert sorted(d.id for d in every) == sorted(d.id for d in embedded)
    assert MemPursuitRanker().run(query=QUESTION, documents=[])["documents"] == []


def test_titles_and_source_documents_are_handed_over(embedded, query_vector):
    metas = [{"title": "Lisbon move"}, {"file_path": "/notes/lisbon.md"},
             {"file_name": "moving.txt", "source_id": "a"}, {"source_id": "pets"}, {}, {}, {}]
    docs = [Document(content=d.content, embedding=d.embedding, meta=m)
            for d, m in zip(embedded, metas)]
    pool = MemPursuitRanker().candidate_pool(QUESTION, docs, query_vector)
    assert list(pool.signals["titles"]) == ["Lisbon move", "lisbon", "moving", None, None, None,
                                            None]
    assert list(pool.signals["session_ids"]) == ["Lisbon move", "/notes/lisbon.md", "moving.txt",
                                                 "pets", None, None, None]
    assert pool.vectors.shape == (len(FACTS), 384)
    no_meta = MemPursuitRanker().candidate_pool(QUESTION, embedded, query_vector)
    assert "titles" not in no_meta.signals and list(no_meta.signals["speakers"]) == ["alice"] * 7


def test_the_query_is_embedded_with_the_packaged_minilm_by_default(embedded, query_vector):
    with_vector = MemPursuitRanker(top_k=3).run(query=QUESTION, documents=embedded,
                                                query_embedding=query_vector)["documents"]
    without = MemPursuitRanker(top_k=3).run(query=QUESTION, documents=embedded)["documents"]
    assert [d.id for d in without] == [d.id for d in with_vector]


def test_the_embedders_are_the_packaged_minilm(embedded):
    encoder = get_embedder("minilm", threads=1)
    for doc, text in zip(embedded, FACTS):
        assert doc.embedding == pytest.approx(encoder.encode([text])[0].tolist(), abs=1e-6)
    assert MemPursuitTextEmbedder().to_dict()["init_parameters"] == {"model": "minilm"}
    with pytest.raises(TypeError, match="MemPursuitDocumentEmbedder"):
        MemPursuitTextEmbedder().run(text=[Document(content="x")])


def test_the_example_runs_as_written():
    stdout = run_example("haystack_quickstart.py")
    alone, ours = stdout.split("MemPursuitRanker:")
    assert CAT not in alone and CAT in ours


def test_a_pipeline_with_the_ranker_is_serialised_and_loaded(embedded, query_vector):
    ds = _store(embedded)
    p = _pipeline(InMemoryEmbeddingRetriever(ds, top_k=200),
                  MemPursuitRanker(top_k=2, pool=100, policy="mmr", lam=0.4, document_store=ds,
                                   text_embedder=MemPursuitTextEmbedder(threads=1)))
    loaded = Pipeline.loads(p.dumps(), allowed_modules=["mempursuit_haystack"])
    r = loaded.get_component("ranker")
    assert (r.top_k, r.pool, r.policy, r.policy_options) == (2, 100, "mmr", {"lam": 0.4})
    assert isinstance(r.document_store, InMemoryDocumentStore)
    assert isinstance(r.text_embedder, MemPursuitTextEmbedder)
    ours = _texts(_run(loaded))  # the loaded store is the same index (InMemoryDocumentStore)
    assert len(ours) == 2 and ours == _texts(_run(p))
    from mempursuit_core.testing import FailingSelector
    with pytest.raises(Exception, match="registered policy name"):
        MemPursuitRanker(policy=FailingSelector()).to_dict()


def test_eval_backend_pools_are_the_retrievers_own_read(tmp_path):
    """``mempursuit eval --framework haystack``: units written by ``write_documents`` with the
    harness's vectors, one ``meta.session_id`` per group; the pool is the retriever's own
    top-P (filtered to the group) in its order, read by the ranker's ``candidate_pool``, with
    the stored vectors and only the adapter's signals; a rerun reopens the saved store."""
    import numpy as np

    from mempursuit_eval.backends.haystack import HaystackBackend
    from mempursuit_eval.runner import build_backend
    from parity import built_pool

    backend = build_backend("haystack")
    assert isinstance(backend, HaystackBackend)
    embedder = get_embedder("minilm", threads=1)
    units, pool, texts = built_pool(backend, embedder, tmp_path, FACTS, QUESTION)
    assert np.all(np.diff(pool.native_scores) <= 1e-6)  # the retriever's cosine order
    assert set(pool.signals["session_ids"]) == {"alice"}
    assert "speakers" not in pool.signals and "titles" not in pool.signals  # not written
    alone = InMemoryEmbeddingRetriever(backend._store, top_k=3, filters={
        "field": "meta.session_id", "operator": "==", "value": "alice"}).run(
        query_embedding=embedder.encode([QUESTION])[0].tolist())["documents"]
    assert backend.pool("alice", QUESTION, 3).items == [d.id for d in alone]
    dataset = HaystackBackend(dataset_signals=True)
    assert dataset.load_existing(units, embedder=embedder, workdir=tmp_path)  # the saved store
    mixed = dataset.pool("alice", QUESTION, 200)
    assert mixed.items == pool.items and set(mixed.signals["speakers"]) == {"alice"}
    assert not HaystackBackend().load_existing(units[:-1], embedder=embedder, workdir=tmp_path)
    backend.close()


def test_eval_backend_hands_titles_over_as_meta(tmp_path):
    from mempursuit_eval.base import MemoryUnit
    from mempursuit_eval.runner import build_backend

    backend = build_backend("haystack")
    units = [MemoryUnit(uid=f"p{i}", text=f"Doc {i}: {f}", group="docs", session_id=f"p{i}",
                        source_ids=(f"p{i}",), title=f"Doc {i}") for i, f in enumerate(FACTS)]
    backend.build(units, embedder=get_embedder("minilm", threads=1), workdir=tmp_path)
    pool = backend.pool("docs", QUESTION, 200)
    by_uid = {u.uid: u for u in units}
    assert list(pool.signals["titles"]) == [by_uid[u].title for u in pool.items]


@pytest.mark.parametrize("policy", [None, "native"])
def test_a_token_budget_is_a_prefix_of_the_k_order_and_never_exceeded(embedded, query_vector,
                                                                       policy):
    from mempursuit_core.tokens import token_counter

    docs = InMemoryEmbeddingRetriever(_store(embedded), top_k=200, return_embedding=True).run(
        query_embedding=query_vector)["documents"]

    def read(**options):
        ranker = MemPursuitRanker(top_k=6, policy=policy, **options)
        return ranker, ranker.run(query=QUESTION, documents=docs,
                                  query_embedding=query_vector)["documents"]

    _, full = read()
    sizes = []
    for budget in (3, 12, 25, 40, 10_000):
        ranker, got = read(budget_tokens=budget)
        sizes.append(len(got))
        used = sum(token_counter().counts([d.content for d in got]))
        assert [d.id for d in got] == [d.id for d in full[:len(got)]]  # nested
        assert used <= budget and (ranker.last_trace.budget_tokens, ranker.last_trace.tokens) == (
            budget, used)
    assert sizes[0] < sizes[2] < len(full) == sizes[-1]  # the budget decides how many


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_query_keeps_haystacks_order_with_one_warning(store, blank, caplog):
    """The text embedder and the retriever run on the blank text as Haystack runs them; the
    ranker has nothing to choose by: the retriever's first K, and one warning (issue 64)."""
    _, retriever = store
    alone = _pipeline(retriever(3)).run({"embedder": {"text": blank}})["retriever"]["documents"]
    p = _pipeline(retriever(200, return_embedding=True), MemPursuitRanker(top_k=3))
    with caplog.at_level(logging.WARNING):
        ours = p.run({"embedder": {"text": blank}, "ranker": {"query": blank}})["ranker"][
            "documents"]
    assert [d.id for d in ours] == [d.id for d in alone] and len(ours) == 3
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1 and "MemPursuitRanker: the query is" in warned[0], warned
    assert "pass the question's text" in warned[0]
