"""The LlamaIndex adapter on real LlamaIndex: VectorMemoryBlock over a local Qdrant folder, and
query engines over Qdrant and LlamaIndex's in-memory store, with the packaged MiniLM (int8 ONNX)
as a LlamaIndex embedding. Offline: no LLM is ever resolved (MockLLM where an engine needs one)."""

import asyncio
import logging
import uuid

import pytest

pytest.importorskip("llama_index.core", reason='needs pip install -e ".[llamaindex]"')
pytest.importorskip("llama_index.vector_stores.qdrant",
                    reason="needs .ci/requirements-llamaindex.txt")

from llama_index.core import StorageContext, VectorStoreIndex  # noqa: E402
from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from llama_index.core.bridge.pydantic import PrivateAttr  # noqa: E402
from llama_index.core.llms import ChatMessage, MockLLM  # noqa: E402
from llama_index.core.memory import VectorMemoryBlock  # noqa: E402
from llama_index.core.schema import TextNode  # noqa: E402
from llama_index.vector_stores.qdrant import QdrantVectorStore  # noqa: E402
from qdrant_client import AsyncQdrantClient, QdrantClient  # noqa: E402

from mempursuit_llamaindex import MemPursuitPostprocessor  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect")

from paraphrase_facts import CAT, FACTS, PARAPHRASES, QUESTION, run_example  # noqa: E402


class MiniLM(BaseEmbedding):
    """The packaged all-MiniLM-L6-v2 (int8 ONNX, mempursuit_core.embed) as a LlamaIndex model."""

    _encoder = PrivateAttr()
    seen: list = []

    def __init__(self, **kwargs):
        super().__init__(model_name="all-MiniLM-L6-v2-int8", **kwargs)
        from mempursuit_core.embed import get_embedder

        self._encoder = get_embedder("minilm", threads=1)

    def _get_query_embedding(self, query):
        return self._get_text_embeddings([query])[0]

    async def _aget_query_embedding(self, query):
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text):
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts):
        self.seen.extend(texts)
        return self._encoder.encode(list(texts)).tolist()


@pytest.fixture(autouse=True)
def no_default_llm(monkeypatch):
    """A response synthesizer reads ``Settings.llm`` (OpenAI by default): make it the offline
    MockLLM for these tests only. The embed model is always passed explicitly."""
    from llama_index.core import Settings

    monkeypatch.setattr(Settings, "_llm", MockLLM())


@pytest.fixture(scope="module")
def embed_model():
    return MiniLM()


def _shown(text: str) -> list[str]:
    """The facts a VectorMemoryBlock result shows, in order."""
    return [f for part in text.split("\n\n") for f in FACTS if f in part]


@pytest.fixture()
def block_store(tmp_path, embed_model):
    """A Qdrant folder (local mode, async client, as VectorMemoryBlock reads) holding FACTS,
    written by VectorMemoryBlock itself, one message per memory."""
    client = AsyncQdrantClient(path=str(tmp_path / "qdrant"))
    store = QdrantVectorStore(collection_name="memories", aclient=client)
    writer = VectorMemoryBlock(vector_store=store, embed_model=embed_model)

    async def write():
        for fact in FACTS:
            await writer.aput([ChatMessage(role="user", content=fact)], session_id="alice")

    asyncio.run(write())
    yield store
    asyncio.run(client.close())


def _read(block):
    return asyncio.run(block.aget([ChatMessage(role="user", content=QUESTION)], session_id="alice"))


def test_memory_block_keeps_the_complement_and_drops_a_paraphrase(block_store, embed_model):
    native = _read(VectorMemoryBlock(vector_store=block_store, embed_model=embed_model,
                                     similarity_top_k=2))
    assert set(_shown(native)) <= set(PARAPHRASES) and len(_shown(native)) == 2
    post = MemPursuitPostprocessor(k=2, embed_model=embed_model, vector_store=block_store)
    ours = _shown(_read(VectorMemoryBlock(vector_store=block_store, embed_model=embed_model,
                                          similarity_top_k=200, node_postprocessors=[post])))
    assert len(ours) == 2 and CAT in ours and ours[0] in PARAPHRASES
    # Qdrant's query returns no vectors: they are read back from the store by node id
    assert post.vector_sources == {"store": len(FACTS)}


def test_through_llamaindex_memory(block_store, embed_model):
    """The agent-facing ``Memory`` (SQLite chat store in memory, a word tokenizer: no tiktoken
    download) puts the block's K memories into its system message."""
    from llama_index.core.memory import Memory

    def context(post):
        block = VectorMemoryBlock(vector_store=block_store, embed_model=embed_model,
                                  similarity_top_k=200 if post else 2,
                                  node_postprocessors=[post] if post else [])
        memory = Memory.from_defaults(session_id="alice", memory_blocks=[block],
                                      tokenizer_fn=str.split, token_limit=4000)

        async def read():
            await memory.aput(ChatMessage(role="user", content=QUESTION))
            try:
                return await memory.aget()
            finally:  # LlamaIndex's chat store leaves its SQLite engine open
                await memory.sql_store._async_engine.dispose()

        messages = asyncio.run(read())
        assert messages[-1].content == QUESTION
        return _shown(messages[0].content)

    ours = context(MemPursuitPostprocessor(k=2, vector_store=block_store, embed_model=embed_model))
    assert CAT in ours and len(ours) == 2
    native = context(None)
    assert CAT not in native and len(native) == 2
    assert context(MemPursuitPostprocessor(k=2, policy="native")) == native


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_native_policy_is_the_memory_block_without_us(block_store, embed_model, k):
    alone = _read(VectorMemoryBlock(vector_store=block_store, embed_model=embed_model,
                                    similarity_top_k=k))
    post = MemPursuitPostprocessor(k=k, policy="native")
    ours = _read(VectorMemoryBlock(vector_store=block_store, embed_model=embed_model,
                                   similarity_top_k=200, node_postprocessors=[post]))
    assert ours == alone and post.vector_sources == {}  # native embeds and reads nothing


def _index(vector_store, embed_model):
    nodes = [TextNode(text=f, id_=str(uuid.uuid5(uuid.NAMESPACE_URL, f))) for f in FACTS]
    context = StorageContext.from_defaults(vector_store=vector_store)
    return VectorStoreIndex(nodes, storage_context=context, embed_model=embed_model)


def _engine(index, post, top_k=200):
    return index.as_query_engine(response_mode="no_text",
                                 similarity_top_k=top_k, node_postprocessors=[post])


def _sources(response) -> list[str]:
    return [n.node.get_content() for n in response.source_nodes]


def test_query_engine_over_qdrant_sync(tmp_path, embed_model):
    client = QdrantClient(path=str(tmp_path / "qdrant"))
    store = QdrantVectorStore(collection_name="docs", client=client)
    index = _index(store, embed_model)
    post = MemPursuitPostprocessor(k=2, vector_store=store, embed_model=embed_model)
    response = _engine(index, post).query(QUESTION)
    ours = _sources(response)
    assert CAT in ours and len(ours) == 2 and post.vector_sources == {"store": len(FACTS)}
    alone = index.as_query_engine(response_mode="no_text", similarity_top_k=len(FACTS)).query(
        QUESTION)
    trace = post.last_trace  # what the read did, nodes by node id
    assert list(trace.final) == [n.node.node_id for n in response.source_nodes]
    assert list(trace.native) == [n.node.node_id for n in alone.source_nodes]
    assert trace.vectors == {"store": len(FACTS)} and trace.fallback is None
    native_post = MemPursuitPostprocessor(k=2, policy="native")
    native = _sources(_engine(index, native_post).query(QUESTION))
    assert native == _sources(index.as_query_engine(response_mode="no_text",
                                                    similarity_top_k=2).query(QUESTION))
    assert CAT not in native
    assert list(native_post.last_trace.final) == list(trace.native[:2])
    assert native_post.last_trace.policy == "native"
    client.close()


def test_query_engine_in_memory_async_and_the_embedding_fallback(embed_model, caplog):
    index = _index(None, embed_model)  # LlamaIndex's SimpleVectorStore
    post = MemPursuitPostprocessor(k=2, vector_store=index.vector_store, embed_model=embed_model)
    ours = _sources(asyncio.run(_engine(index, post).aquery(QUESTION)))
    assert CAT in ours and post.vector_sources == {"store": len(FACTS)}

    # no store given: the nodes are embedded once (cached by content), with one warning
    post = MemPursuitPostprocessor(k=2, embed_model=embed_model)
    engine = _engine(index, post)
    before = len(embed_model.seen)
    with caplog.at_level(logging.WARNING, logger="mempursuit_llamaindex.postprocessor"):
        first = _sources(engine.query(QUESTION))
        second = _sources(asyncio.run(engine.aquery(QUESTION)))
    assert first == second == ours
    warned = [r for r in caplog.records if "came without their vectors" in r.getMessage()]
    assert len(warned) == 1
    # each memory embedded once: the second read hit the cache
    embedded = embed_model.seen[before:]
    assert all(embedded.count(fact) == 1 for fact in FACTS)
    assert post.vector_sources == {"embedded": 2 * len(FACTS)}


def test_a_failure_returns_the_native_nodes_with_one_warning_and_strict_raises(embed_model, caplog):
    index = _index(None, embed_model)

    class Broken(MiniLM):
        def _get_text_embeddings(self, texts):
            raise RuntimeError("embedder down")

    native = _sources(_engine(index, MemPursuitPostprocessor(k=2, policy="native")).query(QUESTION))
    post = MemPursuitPostprocessor(k=2, embed_model=Broken())  # no vectors, cannot embed
    with caplog.at_level(logging.WARNING, logger="mempursuit"):
        assert _sources(_engine(index, post).query(QUESTION)) == native
    assert "embedder down" in post.last_trace.fallback  # the trace says it fell back, and why
    assert len(post.last_trace.final) == 2 and post.last_trace.second_read is None
    assert any("embedder down" in r.getMessage() and "LlamaIndex" in r.getMessage()
               for r in caplog.records)
    with pytest.raises(RuntimeError, match="embedder down"):
        _engine(index, MemPursuitPostprocessor(k=2, embed_model=Broken(), strict=True)).query(QUESTION)
    with pytest.raises(RuntimeError, match="embedder down"):
        asyncio.run(_engine(index, MemPursuitPostprocessor(k=2, embed_model=Broken(),
                                                           strict=True)).aquery(QUESTION))


def test_options_are_checked_at_construction():
    with pytest.raises(Exception, match="unknown selector .no-such-policy."):
        MemPursuitPostprocessor(policy="no-such-policy")
    with pytest.raises((TypeError, ValueError)):
        MemPursuitPostprocessor(k=0)
    post = MemPursuitPostprocessor(k=5, pool=50, lam=0.3, policy="mmr")
    assert (post.k, post.pool, post.policy, post.policy_options) == (5, 50, "mmr", {"lam": 0.3})


def test_eval_backend_pools_are_the_memory_blocks_own_read(tmp_path):
    """``mempursuit eval --framework llamaindex``: units written by VectorMemoryBlock.aput, one
    group per LlamaIndex session; the pool is the block's own top-P in its order, with the
    stored vectors and only the adapter's signals."""
    import numpy as np

    from mempursuit_core.embed import get_embedder
    from mempursuit_eval.backends.llamaindex import LlamaIndexBackend
    from mempursuit_eval.runner import build_backend
    from parity import fixture_units

    backend = build_backend("llamaindex")
    assert isinstance(backend, LlamaIndexBackend)
    embedder = get_embedder("minilm", threads=1)
    units = fixture_units(FACTS, speaker=None)
    done = []
    backend.build(units, embedder=embedder, workdir=tmp_path, progress=done.append)
    assert sum(done) == len(units)
    pool = backend.pool("alice", QUESTION, 200)
    assert sorted(pool.items) == sorted(u.uid for u in units if u.group == "alice")
    stored = [f"<message role='user'>{FACTS[int(u.split('/')[1])]}</message>" for u in pool.items]
    assert pool.signals["texts"] == stored
    assert np.allclose(pool.vectors, embedder.encode(stored), atol=1e-5)
    assert np.all(np.diff(pool.native_scores) <= 1e-6)  # the block's (Qdrant's) cosine order
    assert set(pool.signals) >= {"texts", "query_text", "session_ids", "speakers"}
    assert set(pool.signals["session_ids"]) == {"alice"} and set(pool.signals["speakers"]) == {"user"}
    assert "timestamps" not in pool.signals  # the block stores none
    assert "titles" not in pool.signals  # dialogue units have no title
    qv = embedder.encode([QUESTION])[0]
    again = backend.pool("alice", QUESTION, 3, query_vector=qv)
    assert again.items == pool.items[:3] and np.allclose(again.query_vector, qv)
    assert len(backend.pool("bob", QUESTION, 200).items) == 3
    with pytest.raises(KeyError):
        backend.pool("carol", QUESTION, 10)
    backend.close()

    # a finished build is reopened from its folder (the harness's cache), giving the same pools
    reopened = LlamaIndexBackend()
    assert reopened.load_existing(units, embedder=embedder, workdir=tmp_path)
    same = reopened.pool("alice", QUESTION, 200)
    assert same.items == pool.items and np.allclose(same.vectors, pool.vectors)
    reopened.close()
    other = LlamaIndexBackend()  # other units: not this build, so it is rebuilt
    assert not other.load_existing(units[:-1], embedder=embedder, workdir=tmp_path)
    (tmp_path / "units.json").write_text("{not json")
    assert not other.load_existing(units, embedder=embedder, workdir=tmp_path)


def test_eval_backend_hands_titles_over_as_node_metadata(tmp_path):
    """Titled units (the multi-hop document sets' paragraphs): each node gets the metadata
    ``title`` after the block embedded it, and the adapter reads it back as the ``titles``
    signal, in pool order; the stored vectors are still the block's own."""
    import numpy as np

    from mempursuit_core.embed import get_embedder
    from mempursuit_eval.base import MemoryUnit
    from mempursuit_eval.runner import build_backend

    backend = build_backend("llamaindex")
    try:
        embedder = get_embedder("minilm", threads=1)
        units = [MemoryUnit(uid=f"p{i}", text=f"Doc {i}: {f}", group="docs",
                            session_id=f"p{i}", source_ids=(f"p{i}",), title=f"Doc {i}")
                 for i, f in enumerate(FACTS)]
        backend.build(units, embedder=embedder, workdir=tmp_path)
        pool = backend.pool("docs", QUESTION, 200)
        by_uid = {u.uid: u for u in units}
        assert sorted(pool.items) == sorted(by_uid)
        assert list(pool.signals["titles"]) == [by_uid[u].title for u in pool.items]
        stored = [f"<message role='user'>{by_uid[u].text}</message>" for u in pool.items]
        assert np.allclose(pool.vectors, embedder.encode(stored), atol=1e-5)
    finally:
        backend.close()


def test_the_example_runs_as_written():
    stdout = run_example("llamaindex_quickstart.py")
    alone, ours = stdout.split("with MemPursuit:")
    assert CAT not in alone and CAT in ours and any(p in ours for p in PARAPHRASES)


def test_eval_backend_takes_dataset_signals(tmp_path):
    """``mempursuit eval --framework llamaindex --dataset-signals``: the store takes the option
    (it used to fail on a ``--backend-opt`` never passed) and puts the benchmark's own session
    ids and speakers over the block's."""
    from mempursuit_core.embed import get_embedder
    from mempursuit_eval.base import MemoryUnit
    from mempursuit_eval.runner import build_backend

    backend = build_backend("llamaindex", options={"dataset_signals": True})
    try:
        embedder = get_embedder("minilm", threads=1)
        units = [MemoryUnit(uid=f"alice/{i}", text=f, group="alice", session_id=f"S{i % 2}",
                            speaker=("Alice", "Bob")[i % 2]) for i, f in enumerate(FACTS)]
        backend.build(units, embedder=embedder, workdir=tmp_path)
        pool = backend.pool("alice", QUESTION, 200)
        by_uid = {u.uid: u for u in units}
        assert sorted(pool.items) == sorted(by_uid)
        assert list(pool.signals["session_ids"]) == [by_uid[u].session_id for u in pool.items]
        assert list(pool.signals["speakers"]) == [by_uid[u].speaker for u in pool.items]
    finally:
        backend.close()


@pytest.mark.parametrize("policy", [None, "native"])
def test_a_token_budget_is_a_prefix_of_the_k_order_and_never_exceeded(embed_model, policy):
    from mempursuit_core.tokens import token_counter

    index = _index(None, embed_model)

    def read(**options):
        post = MemPursuitPostprocessor(k=6, policy=policy, vector_store=index.vector_store,
                                       embed_model=embed_model, **options)
        return post, _engine(index, post).query(QUESTION).source_nodes

    _, full = read()
    sizes = []
    for budget in (3, 12, 25, 40, 10_000):
        post, got = read(budget_tokens=budget)
        used = sum(token_counter().counts([n.node.get_content() for n in got]))
        assert [n.node.node_id for n in got] == [n.node.node_id for n in full[:len(got)]]
        assert used <= budget and post.last_trace.tokens == used
        sizes.append(len(got))
    assert sizes[0] < sizes[2] < len(full) == sizes[-1]


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_query_keeps_the_engines_order_with_one_warning(embed_model, blank, caplog):
    """A query engine whose question is empty or blank: LlamaIndex's own top K, one warning."""
    index = _index(None, embed_model)
    native = _engine(index, MemPursuitPostprocessor(k=2, policy="native"))
    post = MemPursuitPostprocessor(k=2, vector_store=index.vector_store, embed_model=embed_model)
    from llama_index.core.schema import QueryBundle

    bundle = QueryBundle(blank)  # a text query, as the engine embeds it below
    nodes = index.as_retriever(similarity_top_k=200).retrieve(QueryBundle(blank, embedding=(
        embed_model.get_query_embedding(blank))))
    with caplog.at_level(logging.WARNING):
        ours = post.postprocess_nodes(nodes, query_bundle=bundle)
    assert _texts(ours) == [n.node.get_content() for n in nodes[:2]]
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1 and "MemPursuitPostprocessor: the query is" in warned[0], warned
    if blank:  # LlamaIndex's engine cannot take "" (nothing to embed); "   " it can
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            got = _sources(_engine(index, post).query(QueryBundle(blank)))
        assert got == _sources(native.query(QueryBundle(blank)))
        assert sum("the query is blank" in r.getMessage() for r in caplog.records) == 1


def _texts(nodes) -> list[str]:
    return [n.node.get_content() for n in nodes]
