"""The LangChain adapter as a document app uses it: FAISS (langchain-community) and Chroma
(langchain-chroma, in-process) with the packaged MiniLM (``MemPursuitEmbeddings``), the
retriever's ``search_kwargs`` (``k``, ``fetch_k``, ``filter``), ``k`` above the pool, and a
failure injected into each pool read and each fallback (``strict=False`` never raises)."""

import asyncio
import logging
import uuid

import pytest

pytest.importorskip("langchain_core", reason='needs pip install -e ".[langchain]"')
pytest.importorskip("langchain_classic", reason='needs pip install -e ".[langchain]"')
pytest.importorskip("langchain_community", reason="needs .ci/requirements-langchain.txt")
pytest.importorskip("langchain_chroma", reason="needs .ci/requirements-langchain.txt")
pytest.importorskip("faiss", reason="needs .ci/requirements-langchain.txt")

from langchain_chroma import Chroma  # noqa: E402
from langchain_classic.retrievers import ContextualCompressionRetriever  # noqa: E402
from langchain_community.vectorstores import FAISS  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402

from mempursuit_core.adapter import VectorResolver  # noqa: E402
from mempursuit_langchain import (MemPursuitCompressor, MemPursuitEmbeddings,  # noqa: E402
                                  MemPursuitRetriever)

from paraphrase_facts import CAT, FACTS, PARAPHRASES, QUESTION  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:chromadb.*")

FILLER = [f"Note {i}: the office plant on shelf {i} needs water every {i % 7 + 1} days."
          for i in range(40)]


class Counting(MemPursuitEmbeddings):
    """The packaged MiniLM, counting the texts it embeds as documents."""

    def __init__(self):
        super().__init__("minilm", threads=1)
        self.documents = 0

    def embed_documents(self, texts):
        self.documents += len(texts)
        return super().embed_documents(texts)


@pytest.fixture(scope="module")
def embeddings():
    return Counting()


def _docs(filler=False):
    return [Document(page_content=f, metadata={"source": f"/notes/{'alice' if i < 5 else 'misc'}"
                                                         f"-{i}.md", "topic": "alice"})
            for i, f in enumerate(FACTS)] + [
        Document(page_content=f, metadata={"source": "/notes/plants.md", "topic": "plants"})
        for f in (FILLER if filler else [])]


@pytest.fixture(params=["faiss", "chroma"])
def store(request, embeddings):
    if request.param == "faiss":
        return FAISS.from_documents(_docs(), embeddings)
    vs = Chroma(collection_name=f"t{uuid.uuid4().hex}", embedding_function=embeddings)
    vs.add_documents(_docs())
    return vs


def _texts(docs):
    return [d.page_content for d in docs]


def test_stored_vectors_are_read_and_no_pool_text_is_embedded(store, embeddings):
    retriever = MemPursuitRetriever(vectorstore=store, k=2)
    compressor = MemPursuitCompressor(k=2, vector_store=store)
    compressed = ContextualCompressionRetriever(
        base_compressor=compressor, base_retriever=store.as_retriever(search_kwargs={"k": 200}))
    before = embeddings.documents
    ours = _texts(retriever.invoke(QUESTION))
    assert CAT in ours and len(ours) == 2
    assert _texts(asyncio.run(retriever.ainvoke(QUESTION))) == ours
    assert _texts(compressed.invoke(QUESTION)) == ours
    assert _texts(asyncio.run(compressed.ainvoke(QUESTION))) == ours
    assert embeddings.documents == before  # every pool vector came from the store
    P = len(FACTS)
    assert retriever.vector_sources == {"store": 2 * P}
    assert compressor.vector_sources == {"store": 2 * P}
    native = _texts(store.as_retriever(search_kwargs={"k": 2}).invoke(QUESTION))
    assert set(native) <= set(PARAPHRASES)


def test_search_kwargs_k_never_breaks_the_read(store, caplog):
    """What an ``as_retriever`` user writes: ``search_kwargs={"k": 50}`` (it raised
    ``got multiple values for keyword argument 'k'``, then ``KeyError: 'k'`` in the fallback)."""
    with caplog.at_level(logging.WARNING, logger="mempursuit"):
        r = MemPursuitRetriever(vectorstore=store, k=2, search_kwargs={"k": 50})
        ours = _texts(r.invoke(QUESTION))
        assert CAT in ours and len(ours) == 2
        assert _texts(asyncio.run(r.ainvoke(QUESTION))) == ours
        assert r.pool == 50  # the store is asked for search_kwargs' k
        native = MemPursuitRetriever(vectorstore=store, k=2, search_kwargs={"k": 50},
                                     policy="native")
        alone = _texts(store.as_retriever(search_kwargs={"k": 2}).invoke(QUESTION))
        assert _texts(native.invoke(QUESTION)) == alone
        assert _texts(asyncio.run(native.ainvoke(QUESTION))) == alone
        # search_kwargs' k alone is the k returned, as VectorStoreRetriever reads it
        only = MemPursuitRetriever(vectorstore=store, search_kwargs={"k": 3})
        assert len(only.invoke(QUESTION)) == 3
    assert not [r for r in caplog.records if "could not reorder" in r.getMessage()]
    with pytest.raises(ValueError, match="give it once"):
        MemPursuitRetriever(vectorstore=store, k=2, pool=100, search_kwargs={"k": 50})


def test_faiss_with_a_filter_reads_the_whole_pool(embeddings):
    """FAISS fetches ``fetch_k=20`` before filtering: the pool read asks for ``fetch_k >= P``."""
    store = FAISS.from_documents(_docs(filler=True), embeddings)
    flt = {"topic": "plants"}
    native = store.similarity_search(QUESTION, k=200, filter=flt)
    assert len(native) < len(FILLER)  # LangChain's own read finds only part of them
    r = MemPursuitRetriever(vectorstore=store, k=5, search_kwargs={"filter": flt})
    pool = r.candidate_pool(QUESTION)
    assert len(pool) == len(FILLER)
    assert all(d.metadata["topic"] == "plants" for d in pool.items)
    assert len(r.invoke(QUESTION)) == 5
    assert len(r.invoke(QUESTION, filter={"topic": "alice"})) == 5
    assert len(r.candidate_pool(QUESTION, filter={"topic": "alice"})) == len(FACTS)


def test_document_signals_titles_and_sessions(store):
    pool = MemPursuitRetriever(vectorstore=store, k=2).candidate_pool(QUESTION)
    sources = [d.metadata["source"] for d in pool.items]
    assert pool.signals["session_ids"] == sources  # one session per source document
    assert pool.signals["titles"] == [s.rsplit("/", 1)[1][:-3] for s in sources]


def test_k_above_the_pool_one_rule_one_warning(caplog):
    store = InMemoryVectorStore(MemPursuitEmbeddings(threads=1))
    store.add_documents(_docs(filler=True))
    docs = store.similarity_search(QUESTION, k=8)
    with caplog.at_level(logging.WARNING, logger="mempursuit"):
        r = MemPursuitRetriever(vectorstore=store, k=10, pool=5)
        assert len(r.invoke(QUESTION)) == 10 and len(r.invoke(QUESTION)) == 10
        c = MemPursuitCompressor(k=10, pool=5, vector_store=store)
        assert len(c.compress_documents(docs, QUESTION)) == 8  # never more than it was given
        assert len(asyncio.run(c.acompress_documents(docs, QUESTION))) == 8
    warned = [x for x in caplog.records if "is above pool=5" in x.getMessage()]
    assert len(warned) == 2  # once per component
    assert not [x for x in caplog.records if "could not reorder" in x.getMessage()]


def test_another_stores_ids_say_so(embeddings, caplog):
    store = InMemoryVectorStore(embeddings)
    store.add_documents(_docs())
    other = InMemoryVectorStore(embeddings)
    other.add_documents(_docs())  # same texts, other ids
    docs = store.similarity_search(QUESTION, k=10)
    with caplog.at_level(logging.WARNING, logger="mempursuit_langchain.compressor"):
        MemPursuitCompressor(k=2, vector_store=other).compress_documents(docs, QUESTION)
    assert any("holds none of these document ids" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("where", ["vector read", "pool search", "policy"])
def test_an_injected_failure_returns_langchains_own_result_with_one_warning(
        store, where, monkeypatch, caplog):
    """Each reader's pool read and fallback (sync, async): the framework's own result and one
    warning, never an exception, with ``strict=False``; ``strict=True`` raises."""
    alone = _texts(store.similarity_search(QUESTION, k=2))
    docs = store.similarity_search(QUESTION, k=20)

    def boom(*args, **kwargs):
        raise RuntimeError(f"injected {where} failure")

    options = {}
    if where == "vector read":
        monkeypatch.setattr(VectorResolver, "read", boom)  # every reader goes through it
    elif where == "pool search":  # the store fails the pool's search, not the native one
        cls = type(store)
        sync, asyn = cls.similarity_search, cls.asimilarity_search

        def search(self, query, k=4, **kw):
            return boom() if k > 2 else sync(self, query, k=k, **kw)

        async def asearch(self, query, k=4, **kw):
            return boom() if k > 2 else await asyn(self, query, k=k, **kw)

        monkeypatch.setattr(cls, "similarity_search", search)
        monkeypatch.setattr(cls, "asimilarity_search", asearch)
    else:
        class Failing:
            def select(self, *a, **k):
                boom()

        options = {"policy": Failing()}
    readers = {"retriever": MemPursuitRetriever(vectorstore=store, k=2,
                                                search_kwargs={"k": 50}, **options)}
    if where != "pool search":
        compressor = MemPursuitCompressor(k=2, vector_store=store, **options)
        readers["compressor"] = ContextualCompressionRetriever(
            base_compressor=compressor, base_retriever=store.as_retriever(search_kwargs={"k": 20}))
    for name, reader in readers.items():
        for run in (reader.invoke, lambda q: asyncio.run(reader.ainvoke(q))):
            caplog.clear()
            with caplog.at_level(logging.WARNING, logger="mempursuit"):
                got = _texts(run(QUESTION))
            assert got == alone, (name, where)
            warned = [r for r in caplog.records if "could not reorder" in r.getMessage()]
            assert len(warned) == 1 and f"injected {where} failure" in warned[0].getMessage()
    with pytest.raises(RuntimeError, match="injected"):
        MemPursuitRetriever(vectorstore=store, k=2, strict=True, **options).invoke(QUESTION)
    if where != "pool search":
        with pytest.raises(RuntimeError, match="injected"):
            MemPursuitCompressor(k=2, vector_store=store, strict=True,
                                 **options).compress_documents(docs, QUESTION)


def test_the_doc_qa_example_keeps_both_files_and_native_does_not():
    from paraphrase_facts import run_example

    alone, retriever, compressor = run_example("docs_qa_langchain.py").split("(top 200 -> 3)")
    assert "extension 4410 found: False" in alone and "[travel-desk.md]" not in alone
    for ours in (retriever, compressor):
        assert "extension 4410 found: True" in ours
        assert "[travel-desk.md]" in ours and "[expense-claims.md]" in ours  # both files at K=3
