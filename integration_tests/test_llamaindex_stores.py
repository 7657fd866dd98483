"""The LlamaIndex adapter as a document app uses it: FAISS and Chroma (in-process) with the
packaged MiniLM (``MemPursuitEmbedding``, given to the index, not ``Settings``), the retriever
wrapper, a sync-only Qdrant client on the async path, ``k`` above the pool, misleading-store
warnings, and a failure injected into each pool read and each fallback. Offline, no LLM."""

import asyncio
import logging
import uuid

import pytest

pytest.importorskip("llama_index.core", reason='needs pip install -e ".[llamaindex]"')
for _module in ("llama_index.vector_stores.faiss", "llama_index.vector_stores.chroma",
                "llama_index.vector_stores.qdrant"):
    pytest.importorskip(_module, reason="needs .ci/requirements-llamaindex.txt")

import chromadb  # noqa: E402
import faiss  # noqa: E402
from llama_index.core import StorageContext, VectorStoreIndex  # noqa: E402
from llama_index.core.llms import MockLLM  # noqa: E402
from llama_index.core.schema import QueryBundle, TextNode  # noqa: E402
from llama_index.vector_stores.chroma import ChromaVectorStore  # noqa: E402
from llama_index.vector_stores.faiss import FaissVectorStore  # noqa: E402
from llama_index.vector_stores.qdrant import QdrantVectorStore  # noqa: E402
from qdrant_client import QdrantClient  # noqa: E402

from mempursuit_core.adapter import VectorResolver  # noqa: E402
from mempursuit_llamaindex import (MemPursuitEmbedding, MemPursuitPostprocessor,  # noqa: E402
                                   MemPursuitRetriever)

from paraphrase_facts import CAT, FACTS, PARAPHRASES, QUESTION  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning:chromadb.*"),
              pytest.mark.filterwarnings("ignore:Payload indexes have no effect")]


class Counting(MemPursuitEmbedding):
    """The packaged MiniLM, counting the texts it embeds (queries apart)."""

    def _get_text_embeddings(self, texts):
        Counting.texts += len(texts)
        return super()._get_text_embeddings(texts)

    def _get_query_embedding(self, query):
        return self._encoder.encode([query])[0].tolist()

    async def _aget_query_embedding(self, query):
        return self._get_query_embedding(query)


Counting.texts = 0


@pytest.fixture(autouse=True)
def offline_settings(monkeypatch):
    """MockLLM for engines; ``Settings.embed_model`` left at LlamaIndex's default (OpenAI, not
    installed): every embed model here is given to the index, as a real app does."""
    from llama_index.core import Settings

    monkeypatch.setattr(Settings, "_llm", MockLLM())
    monkeypatch.setattr(Settings, "_embed_model", None)


@pytest.fixture(scope="module")
def embed_model():
    return Counting(threads=1)


def _nodes():
    return [TextNode(text=f, id_=str(uuid.uuid5(uuid.NAMESPACE_URL, f)),
                     metadata={"file_name": f"note-{i}.md", "file_path": f"/notes/note-{i}.md"},
                     excluded_embed_metadata_keys=["file_name", "file_path"])
            for i, f in enumerate(FACTS)]


def _index(kind, embed_model, tmp_path=None):
    if kind == "faiss":
        store = FaissVectorStore(faiss_index=faiss.IndexFlatL2(384))
    elif kind == "chroma":
        collection = chromadb.EphemeralClient().get_or_create_collection(f"t{uuid.uuid4().hex}")
        store = ChromaVectorStore(chroma_collection=collection)
    elif kind == "qdrant-sync":
        store = QdrantVectorStore(collection_name="docs",
                                  client=QdrantClient(path=str(tmp_path / "qdrant")))
    else:
        store = None
    context = StorageContext.from_defaults(vector_store=store)
    return VectorStoreIndex(_nodes(), storage_context=context, embed_model=embed_model)


def _texts(nodes):
    return [n.node.get_content() for n in nodes]


@pytest.mark.parametrize("kind", ["faiss", "chroma"])
def test_the_retriever_wrapper_reads_stored_vectors_and_the_indexs_embed_model(kind, embed_model):
    index = _index(kind, embed_model)
    alone = _texts(index.as_retriever(similarity_top_k=2).retrieve(QUESTION))
    assert set(alone) <= set(PARAPHRASES)
    retriever = MemPursuitRetriever(index.as_retriever(similarity_top_k=200), k=2)
    before = Counting.texts
    ours = _texts(retriever.retrieve(QUESTION))
    assert CAT in ours and len(ours) == 2
    assert _texts(asyncio.run(retriever.aretrieve(QUESTION))) == ours
    assert Counting.texts == before  # no pool text embedded: FAISS reconstruct / Chroma get
    assert retriever.vector_sources == {"store": 2 * len(FACTS)}
    native = MemPursuitRetriever(index.as_retriever(similarity_top_k=200), k=2, policy="native")
    assert _texts(native.retrieve(QUESTION)) == alone


def test_a_query_engine_over_chroma_reads_the_stored_vectors(embed_model):
    index = _index("chroma", embed_model)
    post = MemPursuitPostprocessor(k=2, vector_store=index.vector_store)
    engine = index.as_query_engine(response_mode="no_text", similarity_top_k=200,
                                   node_postprocessors=[post])
    before = Counting.texts
    ours = [n.node.get_content() for n in engine.query(QUESTION).source_nodes]
    assert CAT in ours and Counting.texts == before
    assert post.vector_sources == {"store": len(FACTS)}


@pytest.mark.parametrize("kind", ["faiss", "chroma", "simple"])
def test_a_query_engine_postprocessor_given_the_index_reads_what_the_retriever_does(kind,
                                                                                     embed_model):
    """``index=``: the index's embed model (``Settings.embed_model`` is LlamaIndex's OpenAI
    default, not installed), its stored vectors (FAISS rows by the index's id map) and its
    docstore; the same nodes as the retriever wrapper, nothing embedded but the query."""
    index = _index(None if kind == "simple" else kind, embed_model)
    post = MemPursuitPostprocessor(k=2, index=index)
    assert post.embed_model is embed_model and post.vector_store is index.vector_store
    assert post.docstore is index.docstore
    engine = index.as_query_engine(response_mode="no_text", similarity_top_k=200,
                                   node_postprocessors=[post])
    before = Counting.texts
    ours = [n.node.get_content() for n in engine.query(QUESTION).source_nodes]
    assert CAT in ours and len(ours) == 2 and Counting.texts == before
    assert post.vector_sources == {"store": len(FACTS)}
    assert ours == _texts(MemPursuitRetriever(index.as_retriever(similarity_top_k=200),
                                              k=2).retrieve(QUESTION))
    again = [n.node.get_content() for n in asyncio.run(engine.aquery(QUESTION)).source_nodes]
    assert again == ours


def test_index_takes_an_index():
    with pytest.raises(TypeError, match="index= takes a LlamaIndex vector index"):
        MemPursuitPostprocessor(k=2, index=object())


def test_faiss_store_given_to_the_postprocessor_takes_the_documented_fallback(embed_model, caplog):
    """FAISS's ``get_nodes`` is not implemented (the node id -> row map is the index's): the
    postprocessor embeds the texts with one warning that says why, and still reorders."""
    index = _index("faiss", embed_model)
    post = MemPursuitPostprocessor(k=2, vector_store=index.vector_store, embed_model=embed_model)
    engine = index.as_query_engine(response_mode="no_text", similarity_top_k=200,
                                   node_postprocessors=[post])
    with caplog.at_level(logging.WARNING):
        ours = [n.node.get_content() for n in engine.query(QUESTION).source_nodes]
    assert CAT in ours and post.vector_sources == {"embedded": len(FACTS)}
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    vectors = [w for w in warned if "second read" not in w]
    assert len(vectors) == 1 and "FaissVectorStore cannot return stored vectors" in vectors[0]
    # titled nodes and no docstore: the second read is off, said once with the fix
    assert [w for w in warned if "second read" in w and "index=" in w] == warned[1:]


def test_postprocess_nodes_without_an_embed_model_names_embed_model(embed_model, caplog):
    index = _index(None, embed_model)
    nodes = index.as_retriever(similarity_top_k=200).retrieve(QUESTION)
    post = MemPursuitPostprocessor(k=2, vector_store=index.vector_store)
    with caplog.at_level(logging.WARNING, logger="mempursuit"):
        got = post.postprocess_nodes(nodes, query_str=QUESTION)  # no query embedding given
    assert _texts(got) == _texts(nodes[:2])
    assert any("embed_model=" in r.getMessage() for r in caplog.records)
    with_model = MemPursuitPostprocessor(k=2, vector_store=index.vector_store,
                                         embed_model=embed_model)
    assert CAT in _texts(with_model.postprocess_nodes(nodes, query_str=QUESTION))


def test_misleading_stores_are_named(embed_model, caplog):
    index = _index(None, embed_model)
    with pytest.raises(ValueError, match=r"index\.vector_store"):
        MemPursuitPostprocessor(k=2, vector_store=index)
    other = _index(None, embed_model)  # same texts; node ids of the same text agree, so
    other.vector_store.data.embedding_dict.clear()  # empty it: these ids are not there
    nodes = index.as_retriever(similarity_top_k=200).retrieve(QUESTION)
    post = MemPursuitPostprocessor(k=2, vector_store=other.vector_store, embed_model=embed_model)
    with caplog.at_level(logging.WARNING):
        assert CAT in _texts(post.postprocess_nodes(nodes, query_str=QUESTION))
    assert any("holds none of these node ids" in r.getMessage() for r in caplog.records)


def test_a_sync_only_qdrant_client_on_the_async_path_reads_in_a_thread(embed_model, tmp_path,
                                                                       caplog):
    index = _index("qdrant-sync", embed_model, tmp_path)
    nodes = index.as_retriever(similarity_top_k=200).retrieve(QUESTION)
    post = MemPursuitPostprocessor(k=2, vector_store=index.vector_store, embed_model=embed_model)
    with caplog.at_level(logging.WARNING):
        got = asyncio.run(post.apostprocess_nodes(nodes, query_bundle=QueryBundle(QUESTION)))
    assert CAT in _texts(got) and post.vector_sources == {"store": len(FACTS)}
    # (titled nodes without the index's docstore: the second read's one warning, no other)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING
                and "second read" not in r.getMessage()]
    index.vector_store.client.close()


def test_k_above_the_pool_one_rule_one_warning(embed_model, caplog):
    index = _index(None, embed_model)
    nodes = index.as_retriever(similarity_top_k=6).retrieve(QUESTION)
    post = MemPursuitPostprocessor(k=10, pool=5, embed_model=embed_model,
                                   vector_store=index.vector_store)
    with caplog.at_level(logging.WARNING, logger="mempursuit"):
        assert len(post.postprocess_nodes(nodes, query_str=QUESTION)) == 6  # all it was given
        assert len(post.postprocess_nodes(nodes, query_str=QUESTION)) == 6
    warned = [r for r in caplog.records if "is above pool=5" in r.getMessage()]
    assert len(warned) == 1


def test_document_signals(embed_model):
    index = _index(None, embed_model)
    nodes = index.as_retriever(similarity_top_k=200).retrieve(QUESTION)
    pool = MemPursuitPostprocessor(k=2, vector_store=index.vector_store).candidate_pool(
        nodes, QueryBundle(QUESTION, embedding=embed_model.get_query_embedding(QUESTION)))
    files = [n.node.metadata["file_path"] for n in nodes]
    assert pool.signals["session_ids"] == files  # one session per source document
    assert pool.signals["titles"] == [f.rsplit("/", 1)[1][:-3] for f in files]


def test_an_empty_query_is_one_warning_and_no_nodes_and_strict_names_it(embed_model, caplog):
    """LlamaIndex's own retriever raises a TypeError from its store on ``""`` (nothing to
    embed): the wrapper says so once and returns no nodes, sync and async."""
    index = _index(None, embed_model)
    with pytest.raises(TypeError):
        index.as_retriever(similarity_top_k=2).retrieve("")
    retriever = MemPursuitRetriever(index.as_retriever(similarity_top_k=200), k=2)
    with caplog.at_level(logging.WARNING, logger="mempursuit"):
        assert retriever.retrieve("") == []
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1 and "the query is empty" in warned[0]
    assert asyncio.run(retriever.aretrieve("")) == []
    # blank text is LlamaIndex's to embed: its own order, and one warning (issue 64)
    alone = _texts(index.as_retriever(similarity_top_k=2).retrieve("   "))
    for read in (retriever.retrieve, lambda q: asyncio.run(retriever.aretrieve(q))):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert _texts(read("   ")) == alone and len(alone) == 2
        warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warned) == 1 and "the query is blank" in warned[0], warned
    strict = MemPursuitRetriever(index.as_retriever(similarity_top_k=200), k=2, strict=True)
    with pytest.raises(ValueError, match="the query is empty .*pass the question's text"):
        strict.retrieve("")


@pytest.mark.parametrize("where", ["store read", "policy"])
def test_an_injected_failure_returns_llamaindexs_own_result_with_one_warning(
        where, embed_model, monkeypatch, caplog):
    index = _index(None, embed_model)
    alone = _texts(index.as_retriever(similarity_top_k=2).retrieve(QUESTION))

    def boom(*args, **kwargs):
        raise RuntimeError(f"injected {where} failure")

    options = {}
    if where == "store read":
        monkeypatch.setattr(VectorResolver, "read", boom)  # every reader goes through it
    else:
        class Failing:
            def select(self, *a, **k):
                boom()

        options = {"policy": Failing()}
    post = MemPursuitPostprocessor(k=2, vector_store=index.vector_store, embed_model=embed_model,
                                   **options)
    engine = index.as_query_engine(response_mode="no_text", similarity_top_k=200,
                                   node_postprocessors=[post])
    wrapper = MemPursuitRetriever(index.as_retriever(similarity_top_k=200), k=2, **options)
    runs = {"engine": lambda: [n for n in engine.query(QUESTION).source_nodes],
            "engine async": lambda: asyncio.run(engine.aquery(QUESTION)).source_nodes,
            "retriever": lambda: wrapper.retrieve(QUESTION),
            "retriever async": lambda: asyncio.run(wrapper.aretrieve(QUESTION))}
    for name, run in runs.items():
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="mempursuit"):
            assert _texts(run()) == alone, name
        warned = [r for r in caplog.records if "could not reorder" in r.getMessage()]
        assert len(warned) == 1 and f"injected {where}" in warned[0].getMessage(), name
    strict = MemPursuitRetriever(index.as_retriever(similarity_top_k=200), k=2, strict=True,
                                 **options)
    with pytest.raises(RuntimeError, match="injected"):
        strict.retrieve(QUESTION)


def test_the_doc_qa_example_keeps_both_files_and_native_does_not():
    """Both swaps, the retriever and the query engine's postprocessor, with no warning (the
    engine's postprocessor found the index's embed model and stored vectors through index=)."""
    from paraphrase_facts import run_example

    out, err = run_example("docs_qa_llamaindex.py", stderr=True)
    alone, retriever, engine = out.split("with MemPursuit")
    assert "extension 4410 found: False" in alone and "[travel-desk.md]" not in alone
    for ours in (retriever, engine):
        assert "extension 4410 found: True" in ours
        assert "[travel-desk.md]" in ours and "[expense-claims.md]" in ours  # both files at K=3
    assert retriever.split(":", 1)[1].strip() == engine.split(":", 1)[1].strip()  # same chunks
    assert "mempursuit" not in err.lower() and "warning" not in err.lower(), err
