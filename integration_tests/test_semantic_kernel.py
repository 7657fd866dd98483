"""The Semantic Kernel adapter on the real framework: ``MemPursuitCollection`` around a real
``InMemoryCollection`` and a real ``ChromaCollection`` over a local Chroma folder (no server),
written by the collections' own ``upsert`` and embedded with the packaged MiniLM
(``MemPursuitEmbeddingGenerator``)."""

import asyncio
import logging
from dataclasses import dataclass
from typing import Annotated

import numpy as np
import pytest

pytest.importorskip("semantic_kernel",
                    reason='needs pip install -e ".[semantic-kernel]" (CI: '
                           ".ci/nodeps-semantic-kernel.txt)")

from semantic_kernel.connectors.in_memory import InMemoryCollection  # noqa: E402
from semantic_kernel.data.vector import VectorStoreField, vectorstoremodel  # noqa: E402

from mempursuit_core import testing  # noqa: E402
from mempursuit_core.embed import get_embedder  # noqa: E402
from mempursuit_semantic_kernel import (MemPursuitCollection,  # noqa: E402
                                        MemPursuitEmbeddingGenerator)

from paraphrase_facts import CAT, FACTS, PARAPHRASES, QUESTION, run_example  # noqa: E402
from parity import Recorder  # noqa: E402

TIMES = [f"2024-03-0{i + 1}T10:00:00" for i in range(len(FACTS))]


@vectorstoremodel
@dataclass
class Memory:
    content: Annotated[str, VectorStoreField("data", is_full_text_indexed=True)]
    speaker: Annotated[str, VectorStoreField("data", is_indexed=True)] = "alice"
    timestamp: Annotated[str, VectorStoreField("data")] = ""
    id: Annotated[str, VectorStoreField("key")] = ""
    vector: Annotated[list[float] | str | None, VectorStoreField("vector", dimensions=384)] = None

    def __post_init__(self):
        if self.vector is None:
            self.vector = self.content  # embedded by the collection's generator at upsert


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def generator():
    return MemPursuitEmbeddingGenerator(threads=1)


def _memories():
    return [Memory(content=f, timestamp=t, id=f"m{i}") for i, (f, t) in
            enumerate(zip(FACTS, TIMES))]


@pytest.fixture(scope="module", params=["in-memory", "chroma-local"])
def collection(request, generator, tmp_path_factory):
    if request.param == "in-memory":
        coll = InMemoryCollection(record_type=Memory, collection_name="memories",
                                  embedding_generator=generator)
    else:
        pytest.importorskip("chromadb", reason="needs .ci/requirements-mem0.txt (chromadb)")
        from semantic_kernel.connectors.chroma import ChromaCollection

        coll = ChromaCollection(record_type=Memory, collection_name="memories",
                                persist_directory=str(tmp_path_factory.mktemp("chroma")),
                                embedding_generator=generator)

    async def fill():
        await coll.ensure_collection_exists()
        await coll.upsert(_memories())
    run(fill())
    return coll


async def _search(coll, query=QUESTION, **kwargs):
    found = await coll.search(query, **kwargs)
    return [r async for r in found.results]


def _texts(results):
    return [r.record.content for r in results]


def _fields(result):
    """A result as plain values (Chroma returns vectors as numpy arrays)."""
    record = result.record
    vector = record.vector if isinstance(record.vector, str) or record.vector is None else [
        float(x) for x in record.vector]
    return (record.id, record.content, record.speaker, record.timestamp, vector, result.score)


def _key(result):
    """A result's record key, as the trace shows it."""
    return result.record.id


def _same(ours, theirs):
    return [_fields(r) for r in ours] == [_fields(r) for r in theirs]


def test_search_keeps_the_complement_and_drops_a_paraphrase(collection):
    alone = _texts(run(_search(collection, top=2)))
    assert set(alone) <= set(PARAPHRASES)  # the collection's own top 2: two paraphrases
    ours = _texts(run(_search(MemPursuitCollection(collection), top=2)))
    assert len(ours) == 2 and CAT in ours and (set(ours) - {CAT}) <= set(PARAPHRASES)


@pytest.mark.parametrize("top", [1, 2, 3, 5])
@pytest.mark.parametrize("include_vectors", [False, True])
def test_native_policy_is_the_collections_own_search(collection, top, include_vectors):
    alone = run(_search(collection, top=top, include_vectors=include_vectors))
    ours = run(_search(MemPursuitCollection(collection, policy="native"), top=top,
                       include_vectors=include_vectors))
    assert _same(ours, alone) and len(ours) == top


def test_records_come_back_as_the_caller_asked(collection):
    """Without include_vectors the kept records are the collection's own (read again by key,
    no vectors: this data model then holds its text in ``vector``); with it, the stored ones."""
    wrapped = MemPursuitCollection(collection)
    plain = run(_search(wrapped, top=3))
    by_key = {r.record.id: r.record for r in run(_search(collection, top=7))}
    assert [_fields(r)[:5] for r in plain] == [
        _fields(type(r)(record=by_key[r.record.id]))[:5] for r in plain]
    with_vectors = run(_search(wrapped, top=3, include_vectors=True))
    assert [r.record.id for r in with_vectors] == [r.record.id for r in plain]
    encoder = get_embedder("minilm", threads=1)
    assert np.allclose([r.record.vector for r in with_vectors],
                       encoder.encode(_texts(with_vectors)), atol=1e-5)


def test_the_policy_sees_the_pool_and_the_stored_vectors(collection):
    recorder = Recorder()
    run(_search(MemPursuitCollection(collection, policy=recorder), top=2))
    small = Recorder()
    run(_search(MemPursuitCollection(collection, policy=small, pool=4), top=2))
    assert [c["P"] for c in recorder.calls] == [len(FACTS)]
    assert [c["P"] for c in small.calls] == [4]
    pool = run(MemPursuitCollection(collection).candidate_pool(QUESTION))
    encoder = get_embedder("minilm", threads=1)
    texts = [r.record.content for r in pool.items]
    assert np.allclose(pool.vectors, encoder.encode(texts), atol=1e-5)  # stored, not re-embedded
    assert np.allclose(pool.query_vector, encoder.encode([QUESTION])[0], atol=1e-5)
    assert list(pool.signals["speakers"]) == ["alice"] * len(FACTS)
    assert list(pool.signals["timestamps"]) == [TIMES[FACTS.index(t)] for t in texts]
    assert "session_ids" not in pool.signals and pool.native_scores is None


def test_the_conformance_checks_every_adapter_runs(collection):
    testing.check_adapter(
        MemPursuitCollection,
        build=lambda **o: MemPursuitCollection(collection, **o),
        read=lambda wrapped: _search(wrapped, top=3),
        native=lambda: _search(collection, top=3),
        same=_same, ids=lambda results: [_key(r) for r in results])


def test_skip_filter_and_vector_are_honoured(collection):
    wrapped = MemPursuitCollection(collection)
    first = _texts(run(_search(wrapped, top=4)))
    assert _texts(run(_search(wrapped, top=2, skip=2))) == first[2:4]
    vector = get_embedder("minilm", threads=1).encode([QUESTION])[0].tolist()
    assert _texts(run(_search(wrapped, QUESTION, vector=vector, top=4))) == first
    assert CAT in _texts(run(_search(wrapped, None, vector=vector, top=2)))  # no text: no lexical
    bob = run(_search(wrapped, top=3, filter=lambda r: r.speaker == "bob"))
    assert bob == []


def test_a_collection_without_a_generator_needs_the_callers_vector(generator, caplog):
    """No embedding generator: the collection's own search cannot embed a query either, so
    the caller passes ``vector=``; the wrapper then reads the pool with it (and says, in one
    warning before the collection's own error, why it could not embed ``values``)."""
    encoder = get_embedder("minilm", threads=1)
    coll = InMemoryCollection(record_type=Memory, collection_name="novec")
    run(coll.upsert([Memory(content=f, id=f"m{i}", vector=encoder.encode([f])[0].tolist())
                     for i, f in enumerate(FACTS)]))
    vector = encoder.encode([QUESTION])[0].tolist()
    assert CAT in _texts(run(_search(MemPursuitCollection(coll), QUESTION, vector=vector,
                                     top=2)))
    with caplog.at_level(logging.WARNING), pytest.raises(Exception, match="generator"):
        run(_search(MemPursuitCollection(coll), QUESTION, top=2))  # as the collection's own
    assert sum("no embedding generator" in r.getMessage() for r in caplog.records) == 1


@pytest.mark.parametrize("bad", [dict(k=0), dict(pool="200"), dict(policy="no-such-policy"),
                                 dict(strict="yes"), dict(text_field=3),
                                 dict(policy_options={"no_such_option": 1})])
def test_bad_options_fail_at_construction(collection, bad):
    with pytest.raises((TypeError, ValueError, KeyError)):
        MemPursuitCollection(collection, **bad)
    with pytest.raises(TypeError, match="vector store collection"):
        MemPursuitCollection(object())


def test_options_are_kept_and_the_rest_is_the_collections(collection):
    w = MemPursuitCollection(collection, k=2, pool=50, policy="mmr", lam=0.3)
    assert (w.k, w.pool, w.policy, w.policy_options, w.text_field) == (2, 50, "mmr",
                                                                       {"lam": 0.3}, "content")
    assert len(run(_search(w, top=5))) == 2 and len(run(_search(w, top=1))) == 1
    assert w.collection_name == "memories" and w.definition is collection.definition
    got = run(w.get(["m3"]))
    assert (got[0] if isinstance(got, list) else got).content == CAT


def test_the_embedding_generator_is_the_packaged_minilm(generator):
    encoder = get_embedder("minilm", threads=1)
    out = run(generator.generate_embeddings([FACTS[0]]))
    assert out.shape == (1, 384)
    assert np.allclose(out[0], encoder.encode([FACTS[0]])[0], atol=1e-6)


def test_the_example_runs_as_written():
    stdout = run_example("semantic_kernel_quickstart.py")
    alone, ours = stdout.split("MemPursuitCollection:")
    assert CAT not in alone and CAT in ours


def test_eval_backend_pools_are_the_collections_own_read():
    """``mempursuit eval --framework semantic-kernel``: units written by
    ``InMemoryCollection.upsert`` with the harness's vectors, one collection per group; the
    pool is the collection's own top-P with ``include_vectors=True``, read by the wrapper's
    ``candidate_pool``; the policy reorders it exactly as the wrapper's ``search`` does."""
    from mempursuit_eval.backends.semantic_kernel import SemanticKernelBackend
    from mempursuit_eval.runner import build_backend
    from parity import assert_parity, built_pool, harness_order

    backend = build_backend("semantic-kernel")
    assert isinstance(backend, SemanticKernelBackend)
    encoder = get_embedder("minilm", threads=1)
    units, pool, texts = built_pool(backend, encoder, None, FACTS, QUESTION)
    assert not {"speakers", "session_ids", "timestamps", "titles"} & set(pool.signals)
    wrapped = backend._collections["alice"]
    vector = encoder.encode([QUESTION])[0].tolist()
    alone = run(_search(wrapped.collection, QUESTION, vector=vector, top=3))
    assert backend.pool("alice", QUESTION, 3).items == [r.record.key for r in alone]
    order, harness_signals = harness_order(pool, 3)
    recorder = Recorder()
    ours = run(_search(MemPursuitCollection(wrapped.collection, policy=recorder), QUESTION,
                       vector=vector, top=3))
    assert [r.record.key for r in ours] == order
    assert_parity(harness_signals, recorder.calls[-1]["signals"])
    mixed = SemanticKernelBackend(dataset_signals=True)
    mixed.build(units, embedder=encoder)
    assert set(mixed.pool("alice", QUESTION, 200).signals["speakers"]) == {"alice"}
    backend.close()
    mixed.close()


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_query_is_the_collections_own_search_with_one_warning(collection, blank,
                                                                       caplog):
    """Issue 64: the collection's own search for an empty or blank query, and one warning."""
    alone = run(_search(collection, query=blank, top=2))
    with caplog.at_level(logging.WARNING):
        ours = run(_search(MemPursuitCollection(collection), query=blank, top=2))
    assert _same(ours, alone) and len(ours) == 2
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1 and "MemPursuitCollection: the query is" in warned[0], warned
