"""The LangChain adapter on real LangChain: ContextualCompressionRetriever and the vector-store
retriever over InMemoryVectorStore and langchain-qdrant on a local Qdrant folder, with the
packaged MiniLM (int8 ONNX) as LangChain Embeddings; sync and async; offline, no LLM."""

import asyncio
import logging

import pytest

pytest.importorskip("langchain_core", reason='needs pip install -e ".[langchain]"')
pytest.importorskip("langchain_classic", reason='needs pip install -e ".[langchain]"')
pytest.importorskip("langchain_qdrant", reason="needs .ci/requirements-langchain.txt")

from langchain_classic.retrievers import ContextualCompressionRetriever  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402
from langchain_qdrant import QdrantVectorStore  # noqa: E402
from qdrant_client import QdrantClient  # noqa: E402
from qdrant_client.http.models import Distance, VectorParams  # noqa: E402

from mempursuit_langchain import MemPursuitCompressor, MemPursuitRetriever  # noqa: E402

from paraphrase_facts import CAT, FACTS, PARAPHRASES, QUESTION, run_example  # noqa: E402


class MiniLM(Embeddings):
    """The packaged all-MiniLM-L6-v2 (int8 ONNX, mempursuit_core.embed) as LangChain Embeddings."""

    def __init__(self):
        from mempursuit_core.embed import get_embedder

        self.encoder = get_embedder("minilm", threads=1)
        self.seen = []

    def embed_documents(self, texts):
        self.seen.extend(texts)
        return self.encoder.encode(list(texts)).tolist()

    def embed_query(self, text):
        return self.encoder.encode([text])[0].tolist()


@pytest.fixture(scope="module")
def embeddings():
    return MiniLM()


@pytest.fixture(params=["in-memory", "qdrant-local"])
def store(request, embeddings, tmp_path):
    docs = [Document(page_content=f, metadata={"speaker": "alice"}) for f in FACTS]
    if request.param == "in-memory":
        vs = InMemoryVectorStore(embeddings)
        vs.add_documents(docs)
        yield vs
        return
    client = QdrantClient(path=str(tmp_path / "qdrant"))
    client.create_collection("facts", vectors_config=VectorParams(size=384,
                                                                  distance=Distance.COSINE))
    vs = QdrantVectorStore(client=client, collection_name="facts", embedding=embeddings)
    vs.add_documents(docs)
    yield vs
    client.close()


def _ids(docs):
    """The documents' ids as a trace shows them (Qdrant's in the metadata)."""
    return [d.id or d.metadata.get("_id") for d in docs]


def _texts(docs):
    return [d.page_content for d in docs]


def test_compression_retriever_keeps_the_complement_and_drops_a_paraphrase(store):
    native = _texts(store.as_retriever(search_kwargs={"k": 2}).invoke(QUESTION))
    assert set(native) <= set(PARAPHRASES)
    compressor = MemPursuitCompressor(k=2, vector_store=store)
    retriever = ContextualCompressionRetriever(
        base_compressor=compressor, base_retriever=store.as_retriever(search_kwargs={"k": 200}))
    ours = _texts(retriever.invoke(QUESTION))
    assert len(ours) == 2 and CAT in ours and (set(ours) - {CAT}) <= set(PARAPHRASES)
    assert _texts(asyncio.run(retriever.ainvoke(QUESTION))) == ours
    # both stores return the stored vectors by id: nothing is re-embedded
    assert compressor.vector_sources == {"store": 2 * len(FACTS)}


def test_vector_store_retriever_sync_and_async(store):
    retriever = MemPursuitRetriever(vectorstore=store, k=2)
    docs = retriever.invoke(QUESTION)
    ours = _texts(docs)
    assert CAT in ours and len(ours) == 2
    trace = retriever.last_trace  # what the read did: documents by id
    assert list(trace.final) == _ids(docs) and None not in trace.final
    assert list(trace.native) == _ids(store.similarity_search(QUESTION, k=len(FACTS)))
    assert trace.vectors == {"store": len(FACTS)} and trace.fallback is None
    assert _texts(asyncio.run(retriever.ainvoke(QUESTION))) == ours
    assert retriever.vector_sources == {"store": 2 * len(FACTS)}


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_native_policy_is_langchain_without_us(store, k):
    alone = _texts(store.as_retriever(search_kwargs={"k": k}).invoke(QUESTION))
    assert _texts(MemPursuitRetriever(vectorstore=store, k=k, policy="native").invoke(QUESTION)) == alone
    compressed = ContextualCompressionRetriever(
        base_compressor=MemPursuitCompressor(k=k, policy="native"),
        base_retriever=store.as_retriever(search_kwargs={"k": 200}))
    assert _texts(compressed.invoke(QUESTION)) == alone
    assert _texts(asyncio.run(compressed.ainvoke(QUESTION))) == alone


def test_documents_without_stored_vectors_are_embedded_once_with_one_warning(embeddings, caplog):
    docs = [Document(page_content=f) for f in FACTS]  # e.g. from a keyword retriever
    compressor = MemPursuitCompressor(k=2, embeddings=embeddings)
    before = len(embeddings.seen)
    with caplog.at_level(logging.WARNING, logger="mempursuit_langchain.compressor"):
        first = _texts(compressor.compress_documents(docs, QUESTION))
        second = _texts(asyncio.run(compressor.acompress_documents(docs, QUESTION)))
    assert first == second and CAT in first
    assert sorted(embeddings.seen[before:]) == sorted(FACTS)  # once each: then the cache
    assert sum("came without their vectors" in r.getMessage() for r in caplog.records) == 1
    assert compressor.vector_sources == {"embedded": 2 * len(FACTS)}


def test_a_failure_returns_the_native_documents_and_strict_raises(caplog):
    docs = [Document(page_content=f) for f in FACTS]
    compressor = MemPursuitCompressor(k=2)  # no embeddings, no store: cannot embed the query
    with caplog.at_level(logging.WARNING, logger="mempursuit"):
        assert _texts(compressor.compress_documents(docs, QUESTION)) == FACTS[:2]
    # the trace says it fell back, and why; documents without ids shown by position
    assert "embeddings=" in compressor.last_trace.fallback
    assert compressor.last_trace.final == (0, 1)
    assert any("LangChain" in r.getMessage() and "embeddings=" in r.getMessage()
               for r in caplog.records)
    with pytest.raises(ValueError, match="embeddings="):
        MemPursuitCompressor(k=2, strict=True).compress_documents(docs, QUESTION)
    with pytest.raises(ValueError, match="embeddings="):
        asyncio.run(MemPursuitCompressor(k=2, strict=True).acompress_documents(docs, QUESTION))


def test_options_are_checked_at_construction():
    with pytest.raises(Exception, match="unknown selector .no-such-policy."):
        MemPursuitCompressor(policy="no-such-policy")
    with pytest.raises((TypeError, ValueError)):
        MemPursuitCompressor(k=0)
    c = MemPursuitCompressor(k=5, pool=50, lam=0.3, policy="mmr")
    assert (c.k, c.pool, c.policy, c.policy_options) == (5, 50, "mmr", {"lam": 0.3})


def test_the_example_runs_as_written():
    stdout = run_example("langchain_quickstart.py")
    alone, rest = stdout.split("compressor:")
    compressor, retriever = rest.split("retriever:")
    assert CAT not in alone and CAT in compressor and CAT in retriever


class LoopWatchingStore(InMemoryVectorStore):
    """InMemoryVectorStore that records a sync search made on a running event loop's thread
    (a blocked loop: every other task waits for it)."""

    blocking_calls = 0

    def similarity_search(self, query, k=4, **kwargs):
        try:
            asyncio.get_running_loop()
            self.blocking_calls += 1
        except RuntimeError:
            pass
        return super().similarity_search(query, k, **kwargs)


class FailingPolicy:
    def select(self, *args, **kwargs):
        raise RuntimeError("policy failed")


def test_async_fallback_uses_the_stores_async_search(embeddings, caplog):
    """The retriever's async read falls back through the store's async search, never the sync
    one on the event loop's thread."""
    vs = LoopWatchingStore(embeddings)
    vs.add_documents([Document(page_content=f) for f in FACTS])
    native = _texts(asyncio.run(vs.as_retriever(search_kwargs={"k": 2}).ainvoke(QUESTION)))
    retriever = MemPursuitRetriever(vectorstore=vs, k=2, policy=FailingPolicy())
    with caplog.at_level(logging.WARNING, logger="mempursuit"):
        got = _texts(asyncio.run(retriever.ainvoke(QUESTION)))
    assert got == native
    assert any("policy failed" in r.getMessage() for r in caplog.records)
    assert vs.blocking_calls == 0
    with pytest.raises(RuntimeError, match="policy failed"):
        asyncio.run(MemPursuitRetriever(vectorstore=vs, k=2, policy=FailingPolicy(),
                                        strict=True).ainvoke(QUESTION))
    assert vs.blocking_calls == 0
    assert _texts(retriever.invoke(QUESTION)) == native  # the sync read: sync search, no loop


@pytest.mark.parametrize("policy", [None, "native"])
def test_a_token_budget_is_a_prefix_of_the_k_order_and_never_exceeded(store, policy):
    from mempursuit_core.tokens import token_counter

    def reads(**options):
        retriever = MemPursuitRetriever(vectorstore=store, k=6, policy=policy, **options)
        compressor = MemPursuitCompressor(k=6, policy=policy, vector_store=store, **options)
        compressed = ContextualCompressionRetriever(
            base_compressor=compressor,
            base_retriever=store.as_retriever(search_kwargs={"k": 200}))
        return ((retriever, retriever.invoke(QUESTION)),
                (compressor, compressed.invoke(QUESTION)))

    full = [got for _, got in reads()]
    sizes = []
    for budget in (3, 12, 25, 40, 10_000):
        for (component, got), whole in zip(reads(budget_tokens=budget), full):
            used = sum(token_counter().counts([d.page_content for d in got]))
            assert _texts(got) == _texts(whole[:len(got)])  # nested
            assert used <= budget and component.last_trace.tokens == used
            sizes.append(len(got))
    assert sizes[0] < sizes[4] < len(full[0]) == sizes[-1]


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_query_keeps_langchains_order_with_one_warning(store, blank, caplog):
    """Both swaps, sync and async: the store's own top K for an empty or blank query, and one
    warning per read (issue 64)."""
    alone = _texts(store.as_retriever(search_kwargs={"k": 2}).invoke(blank))
    compressed = ContextualCompressionRetriever(
        base_compressor=MemPursuitCompressor(k=2, vector_store=store),
        base_retriever=store.as_retriever(search_kwargs={"k": 200}))
    wrapper = MemPursuitRetriever(vectorstore=store, k=2)
    for read in (compressed.invoke, lambda q: asyncio.run(compressed.ainvoke(q)),
                 wrapper.invoke, lambda q: asyncio.run(wrapper.ainvoke(q))):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert _texts(read(blank)) == alone and len(alone) == 2
        warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warned) == 1 and "the query is" in warned[0], warned
