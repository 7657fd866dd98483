"""The default's second read through each framework's own filter API, on its real store: a
titled store whose second-hop passage ("the performer of song X": hers) is outside the
retrieved pool; the swap fetches it by the title the first pick names, with ``follow=0`` it
stays out, and a store that cannot filter by title gives the first read's order with one
warning. Embedded with the packaged MiniLM (offline)."""

from __future__ import annotations

import os
import warnings

import pytest

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from mempursuit_core.embed import get_embedder  # noqa: E402

SONG = "I Can't See Myself Leaving You"
PERFORMER = "Aretha Franklin"
PASSAGES = [(SONG, f"{SONG} is a song recorded by Aretha Franklin in 1969."),
            (PERFORMER, "Aretha Louise Franklin was an American singer. She died in Detroit, "
                        "Michigan in 2018."),
            ("Leaving You", "Leaving You is a song by a band."),
            ("Detroit Lions", "The Detroit Lions are a football team.")]
PASSAGES += [(f"Filler {i}", f"Filler paragraph number {i} about songs and leaving.")
             for i in range(30)]
QUESTION = f"Where did the performer of song {SONG} die?"
POOL = 3  # the performer's passage is never among the 3 nearest


@pytest.fixture(scope="module")
def vectors():
    emb = get_embedder("minilm", threads=1)
    return emb.encode([f"{t}: {x}" for t, x in PASSAGES]), emb.encode([QUESTION])[0]


def test_haystack_ranker_follows_through_filter_documents(vectors):
    pytest.importorskip("haystack", reason='needs pip install -e ".[haystack]"')
    from haystack import Document
    from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from mempursuit_haystack import MemPursuitRanker

    V, q = vectors
    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents([Document(content=f"{t}: {x}", embedding=v.tolist(),
                                    meta={"title": t, "user": "u1" if i != 1 else "u2"})
                           for i, ((t, x), v) in enumerate(zip(PASSAGES, V))])
    got = InMemoryEmbeddingRetriever(store, top_k=POOL, return_embedding=True).run(
        query_embedding=q.tolist())["documents"]
    assert PERFORMER not in [d.meta["title"] for d in got]

    def titles(**kw):
        ranker = MemPursuitRanker(top_k=2, document_store=store, strict=True, **kw)
        out = ranker.run(query=QUESTION, documents=got, query_embedding=q.tolist())
        return [d.meta["title"] for d in out["documents"]]
    assert titles(whole_store=True) == [SONG, PERFORMER]
    assert PERFORMER not in titles(whole_store=True, follow=0)
    # the retriever's scope: her passage belongs to another user, so it is not fetched
    scope = {"field": "meta.user", "operator": "==", "value": "u1"}
    assert PERFORMER not in titles(filters=scope)
    # no scope and not told the store holds one: no second read
    assert PERFORMER not in titles()


def test_llamaindex_retriever_follows_through_metadata_filters(vectors):
    pytest.importorskip("llama_index.core", reason='needs pip install -e ".[llamaindex]"')
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode

    from mempursuit_llamaindex import MemPursuitEmbedding, MemPursuitRetriever

    V, _ = vectors
    nodes = [TextNode(text=f"{t}: {x}", metadata={"title": t}, embedding=v.tolist())
             for (t, x), v in zip(PASSAGES, V)]
    index = VectorStoreIndex(nodes, embed_model=MemPursuitEmbedding(threads=1))
    native = [n.node.metadata["title"] for n in
              index.as_retriever(similarity_top_k=POOL).retrieve(QUESTION)]
    assert PERFORMER not in native
    swap = MemPursuitRetriever(index.as_retriever(similarity_top_k=POOL), k=2, strict=True)
    assert [n.node.metadata["title"] for n in swap.retrieve(QUESTION)] == [SONG, PERFORMER]
    off = MemPursuitRetriever(index.as_retriever(similarity_top_k=POOL), k=2, follow=0)
    assert PERFORMER not in [n.node.metadata["title"] for n in off.retrieve(QUESTION)]


def test_llamaindex_faiss_cannot_filter_first_read_and_one_warning(vectors):
    pytest.importorskip("llama_index.vector_stores.faiss",
                        reason="needs .ci/requirements-llamaindex.txt (FAISS)")
    import faiss
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.schema import TextNode
    from llama_index.vector_stores.faiss import FaissVectorStore

    from mempursuit_llamaindex import MemPursuitEmbedding, MemPursuitRetriever

    V, _ = vectors
    store = FaissVectorStore(faiss_index=faiss.IndexFlatIP(V.shape[1]))
    nodes = [TextNode(text=f"{t}: {x}", metadata={"title": t}, embedding=v.tolist())
             for (t, x), v in zip(PASSAGES, V)]
    index = VectorStoreIndex(nodes, embed_model=MemPursuitEmbedding(threads=1),
                             storage_context=StorageContext.from_defaults(vector_store=store))
    swap = MemPursuitRetriever(index.as_retriever(similarity_top_k=POOL), k=2)
    base = MemPursuitRetriever(index.as_retriever(similarity_top_k=POOL), k=2, follow=0)
    with pytest.warns(RuntimeWarning, match="second read through FaissVectorStore failed"):
        got = [n.node.node_id for n in swap.retrieve(QUESTION)]
    assert got == [n.node.node_id for n in base.retrieve(QUESTION)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        swap.retrieve(QUESTION)  # once per store


@pytest.mark.parametrize("kind", ["in-memory", "faiss"])
def test_langchain_retriever_follows_through_the_store_filter(vectors, kind):
    pytest.importorskip("langchain_core", reason='needs pip install -e ".[langchain]"')
    from langchain_core.documents import Document

    from mempursuit_langchain import MemPursuitEmbeddings, MemPursuitRetriever

    docs = [Document(page_content=f"{t}: {x}", metadata={"title": t}) for t, x in PASSAGES]
    if kind == "faiss":
        pytest.importorskip("langchain_community.vectorstores",
                            reason="needs .ci/requirements-langchain.txt")
        from langchain_community.vectorstores import FAISS

        store = FAISS.from_documents(docs, MemPursuitEmbeddings(threads=1))
    else:
        from langchain_core.vectorstores import InMemoryVectorStore

        store = InMemoryVectorStore(MemPursuitEmbeddings(threads=1))
        store.add_documents(docs)
    assert PERFORMER not in [d.metadata["title"] for d in store.similarity_search(QUESTION,
                                                                                  k=POOL)]
    got = MemPursuitRetriever(vectorstore=store, k=2, pool=POOL, strict=True).invoke(QUESTION)
    assert [d.metadata["title"] for d in got] == [SONG, PERFORMER]
    off = MemPursuitRetriever(vectorstore=store, k=2, pool=POOL, follow=0).invoke(QUESTION)
    assert PERFORMER not in [d.metadata["title"] for d in off]
