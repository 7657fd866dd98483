"""The second read is safe, through each framework's own read path on its real store: it stays in
the caller's scope (two users in one store: nothing of the other's ever comes back), its title
index follows the store (a delete plus an add, a title changed in place), what a store sends
back is checked (no duplicates, nothing not asked for, exactly K), a slow store gives the first
read's order within the deadline, and titles are compared in one Unicode form. Embedded with the
packaged MiniLM (offline)."""

from __future__ import annotations

import os
import time
import unicodedata
import warnings

import numpy as np
import pytest

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from mempursuit_core.embed import get_embedder  # noqa: E402

from two_users import K, PERFORMER, POOL, QUESTION, ROWS, SONG  # noqa: E402,F401
from two_users import text as _text  # noqa: E402


@pytest.fixture(scope="module")
def embed():
    model = get_embedder("minilm", threads=1)
    cache: dict[str, np.ndarray] = {}

    def vector(text: str) -> list[float]:
        if text not in cache:
            cache[text] = model.encode([text])[0]
        return cache[text].tolist()
    return vector



# -- Haystack ----------------------------------------------------------------------------------

def _haystack_store(embed, users=("A", "B"), cls=None, title_key="title"):
    pytest.importorskip("haystack", reason='needs pip install -e ".[haystack]"')
    from haystack import Document
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    store = (cls or InMemoryDocumentStore)(embedding_similarity_function="cosine")
    store.write_documents([Document(id=i, content=_text(t, x), embedding=embed(_text(t, x)),
                                    meta={title_key: t, "user": u})
                           for u in users for i, t, x in ROWS[u]])
    return store


def _haystack_read(store, embed, user="A", **options):
    from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever

    from mempursuit_haystack import MemPursuitRanker

    scope = {"field": "meta.user", "operator": "==", "value": user}
    docs = InMemoryEmbeddingRetriever(store, top_k=POOL, return_embedding=True,
                                      filters=scope).run(query_embedding=embed(QUESTION))
    options.setdefault("top_k", K)
    ranker = options.pop("ranker", None) or MemPursuitRanker(document_store=store, **options)
    return ranker.run(query=QUESTION, documents=docs["documents"],
                      query_embedding=embed(QUESTION))["documents"], ranker


def test_haystack_two_users_the_second_read_stays_in_the_rankers_scope(embed):
    store = _haystack_store(embed)
    scope = {"field": "meta.user", "operator": "==", "value": "A"}
    got, _ = _haystack_read(store, embed, filters=scope, strict=True)
    assert [d.id for d in got] == ["A-song", "A-performer"]  # followed, inside A's scope
    # without filters= the ranker cannot see the retriever's scope: no second read, one warning
    got, ranker = _haystack_read(store, embed, strict=True)
    assert all(d.meta["user"] == "A" for d in got) and "A-performer" not in [d.id for d in got]


def test_haystack_without_a_scope_says_how_to_turn_the_second_read_on(embed, caplog):
    store = _haystack_store(embed)
    with caplog.at_level("WARNING"):
        _, ranker = _haystack_read(store, embed)
        _haystack_read(store, embed, ranker=ranker)
    said = [r.getMessage() for r in caplog.records if "second read" in r.getMessage()]
    assert len(said) == 1 and "filters=" in said[0] and "whole_store=True" in said[0]


def test_haystack_title_index_follows_a_delete_plus_an_add_and_a_changed_title(embed):
    from haystack import Document
    from haystack.document_stores.types import DuplicatePolicy

    store = _haystack_store(embed, users=("A",))
    store.delete_documents(["A-performer"])
    ranker_opts = {"whole_store": True, "strict": True}
    got, ranker = _haystack_read(store, embed, **ranker_opts)
    assert "A-performer" not in [d.id for d in got]  # not in the store
    i, title, text = ROWS["A"][1]
    store.delete_documents(["A-filler-0"])  # the same count after the add
    store.write_documents([Document(id="A-new", content=_text(title, text),
                                    embedding=embed(_text(title, text)),
                                    meta={"title": title, "user": "A"})])
    got, _ = _haystack_read(store, embed, ranker=ranker)
    assert [d.id for d in got] == ["A-song", "A-new"]
    # a title changed in place: the new one is "Aretha Franklin", the old one gone
    store.delete_documents(["A-new"])
    store.write_documents([Document(id="A-filler-1", content=_text(title, text),
                                    embedding=embed(_text(title, text)),
                                    meta={"title": title, "user": "A"})],
                          policy=DuplicatePolicy.OVERWRITE)
    got, _ = _haystack_read(store, embed, ranker=ranker)
    assert [d.id for d in got] == ["A-song", "A-filler-1"]


def _misbehaving_store(embed, answer, users=("A",)):
    pytest.importorskip("haystack", reason='needs pip install -e ".[haystack]"')
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    class Misbehaving(InMemoryDocumentStore):
        def filter_documents(self, filters=None):
            found = super().filter_documents(filters)
            if filters and "title" in repr(filters):
                return answer(self, found)
            return found
    return _haystack_store(embed, users=users, cls=Misbehaving)


def test_haystack_a_store_that_returns_duplicates_pool_and_unasked_documents(embed):
    def junk(store, found):
        everything = store.storage.values()
        return list(everything) + found + found  # pool documents, repeats, what nobody asked
    store = _misbehaving_store(embed, junk)
    for k in (2, 3, 5):
        got, _ = _haystack_read(store, embed, whole_store=True, strict=True, top_k=k)
        ids = [d.id for d in got]
        assert len(ids) == len(set(ids)) == min(k, POOL)  # never more than retrieved
        assert set(ids) - {"A-performer"} <= {d.id for d in _haystack_read(
            store, embed, whole_store=True, follow=0, top_k=POOL)[0]}


def test_haystack_in_memory_fetch_by_id_gives_what_the_filter_gives(embed):
    """The stock InMemoryDocumentStore is read by id (its filter scans every document); a
    subclass with its own filter_documents is asked through it. Both give the same read."""
    store = _haystack_store(embed, users=("A", "B"))
    asked = []

    def spy(store, found):
        asked.append(len(found))
        return found
    filtered = _misbehaving_store(embed, spy, users=("A", "B"))
    scope = {"field": "meta.user", "operator": "==", "value": "A"}
    by_id, ranker = _haystack_read(store, embed, filters=scope, strict=True)
    by_filter, _ = _haystack_read(filtered, embed, filters=scope, strict=True)
    assert [d.id for d in by_id] == [d.id for d in by_filter]
    assert "A-performer" in [d.id for d in by_id]  # the second read fetched it
    assert asked  # the subclass's own filter was asked for the title
    assert ranker.last_trace.second_read["fetched"] >= 1


def test_haystack_a_slow_store_gives_the_first_read_within_the_deadline(embed):
    def slow(store, found):
        time.sleep(1.0)
        return found
    store = _misbehaving_store(embed, slow)
    base, _ = _haystack_read(store, embed, whole_store=True, follow=0)
    with pytest.warns(RuntimeWarning, match="slower than its deadline"):
        got, ranker = _haystack_read(store, embed, whole_store=True, follow_timeout=0.05)
    assert [d.id for d in got] == [d.id for d in base]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # one warning per store
        _haystack_read(store, embed, ranker=ranker)


def test_haystack_a_store_that_raises_in_the_second_read_gives_the_first_read(embed):
    def broken(store, found):
        raise ConnectionError("the store went away")
    store = _misbehaving_store(embed, broken)
    base, _ = _haystack_read(store, embed, whole_store=True, follow=0)
    with pytest.warns(RuntimeWarning, match="ConnectionError"):
        got, _ = _haystack_read(store, embed, whole_store=True)
    assert [d.id for d in got] == [d.id for d in base]  # the first read's, not the native one


def test_haystack_a_composed_text_follows_a_decomposed_title(embed):
    from haystack import Document

    store = _haystack_store(embed, users=("A",))
    title = unicodedata.normalize("NFD", PERFORMER.replace("Aretha", "Arétha"))
    i, _, text = ROWS["A"][1]
    store.delete_documents(["A-performer", "A-song"])
    song = f"{SONG} is a song recorded by Arétha Franklin in 1969."
    store.write_documents([
        Document(id="A-song", content=_text(SONG, song), embedding=embed(_text(SONG, song)),
                 meta={"title": SONG, "user": "A"}),
        Document(id="A-performer", content=_text(title, text), embedding=embed(_text(title, text)),
                 meta={"title": title, "user": "A"})])
    got, _ = _haystack_read(store, embed, whole_store=True, strict=True)
    assert [d.id for d in got] == ["A-song", "A-performer"]


def test_haystack_a_title_under_another_key_is_read_and_fetched_by_that_key(embed):
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from mempursuit_core.adapter import DEFAULT_METADATA_KEYS

    class Filtering(InMemoryDocumentStore):  # asked through its own filter, not by id
        def filter_documents(self, filters=None):
            return super().filter_documents(filters)

    keys = {**DEFAULT_METADATA_KEYS, "titles": "headline"}
    scope = {"field": "meta.user", "operator": "==", "value": "A"}
    for cls in (InMemoryDocumentStore, Filtering):
        store = _haystack_store(embed, cls=cls, title_key="headline")
        got, _ = _haystack_read(store, embed, filters=scope, strict=True, metadata_keys=keys)
        assert [d.id for d in got] == ["A-song", "A-performer"], cls.__name__
        got, _ = _haystack_read(store, embed, filters=scope, strict=True)  # meta.title: none
        assert "A-performer" not in [d.id for d in got]


# -- LlamaIndex --------------------------------------------------------------------------------

def _llamaindex(embed, users=("A", "B")):
    pytest.importorskip("llama_index.core", reason='needs pip install -e ".[llamaindex]"')
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode

    from mempursuit_llamaindex import MemPursuitEmbedding

    nodes = [TextNode(id_=i, text=_text(t, x), metadata={"title": t, "user": u},
                      embedding=embed(_text(t, x))) for u in users for i, t, x in ROWS[u]]
    return VectorStoreIndex(nodes, embed_model=MemPursuitEmbedding(threads=1))


def _only(user):
    from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters

    return MetadataFilters(filters=[MetadataFilter(key="user", value=user)])


def test_llamaindex_retriever_with_filters_follows_inside_its_scope(embed):
    from mempursuit_llamaindex import MemPursuitRetriever

    index = _llamaindex(embed)
    swap = MemPursuitRetriever(index.as_retriever(similarity_top_k=POOL, filters=_only("A")),
                               k=K, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no "nested filters" failure
        got = [n.node.node_id for n in swap.retrieve(QUESTION)]
    assert got == ["A-song", "A-performer"]


def test_llamaindex_query_engine_with_filters_never_returns_the_other_users_nodes(embed):
    from llama_index.core import Settings
    from llama_index.core.llms import MockLLM

    from mempursuit_llamaindex import MemPursuitPostprocessor

    index = _llamaindex(embed)
    Settings.llm = MockLLM()

    def engine(**options):
        return index.as_query_engine(
            similarity_top_k=POOL, filters=_only("A"), response_mode="no_text",
            node_postprocessors=[MemPursuitPostprocessor(k=K, index=index, strict=True,
                                                         **options)])
    # the engine does not hand its filters to postprocessors: no second read without them
    unscoped = [n.node.node_id for n in engine().query(QUESTION).source_nodes]
    assert unscoped and all(i.startswith("A-") for i in unscoped)
    assert "A-performer" not in unscoped
    scoped = [n.node.node_id for n in engine(filters=_only("A")).query(QUESTION).source_nodes]
    assert scoped == ["A-song", "A-performer"]


def test_llamaindex_title_index_follows_a_delete_plus_an_add(embed):
    from llama_index.core.schema import TextNode

    from mempursuit_llamaindex import MemPursuitRetriever

    index = _llamaindex(embed, users=("A",))
    index.delete_nodes(["A-performer"], delete_from_docstore=True)
    swap = MemPursuitRetriever(index.as_retriever(similarity_top_k=POOL), k=K, strict=True)
    assert "A-performer" not in [n.node.node_id for n in swap.retrieve(QUESTION)]
    _, title, text = ROWS["A"][1]
    index.delete_nodes(["A-filler-0"], delete_from_docstore=True)
    index.insert_nodes([TextNode(id_="A-new", text=_text(title, text),
                                 metadata={"title": title, "user": "A"},
                                 embedding=embed(_text(title, text)))])
    swap = MemPursuitRetriever(index.as_retriever(similarity_top_k=POOL), k=K, strict=True)
    assert [n.node.node_id for n in swap.retrieve(QUESTION)] == ["A-song", "A-new"]


# -- LangChain ---------------------------------------------------------------------------------

def _langchain_store(embed, kind="in-memory", users=("A", "B"), title_key="title"):
    pytest.importorskip("langchain_core", reason='needs pip install -e ".[langchain]"')
    from langchain_core.documents import Document

    from mempursuit_langchain import MemPursuitEmbeddings

    docs = [Document(id=i, page_content=_text(t, x), metadata={title_key: t, "user": u})
            for u in users for i, t, x in ROWS[u]]
    if kind == "faiss":
        pytest.importorskip("langchain_community.vectorstores",
                            reason="needs .ci/requirements-langchain.txt")
        from langchain_community.vectorstores import FAISS

        return FAISS.from_documents(docs, MemPursuitEmbeddings(threads=1), ids=[d.id for d in docs])
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(MemPursuitEmbeddings(threads=1))
    store.add_documents(docs)
    return store


def _user_filter(kind, user):
    return {"user": user} if kind == "faiss" else (lambda doc: doc.metadata["user"] == user)


@pytest.mark.parametrize("kind", ["in-memory", "faiss"])
def test_langchain_retriever_with_a_filter_never_returns_the_other_users_documents(embed, kind):
    from mempursuit_langchain import MemPursuitRetriever

    store = _langchain_store(embed, kind)
    swap = MemPursuitRetriever(vectorstore=store, k=K, pool=POOL, strict=True,
                               search_kwargs={"filter": _user_filter(kind, "A")})
    assert [d.id for d in swap.invoke(QUESTION)] == ["A-song", "A-performer"]
    # a filter given per call is the scope too
    swap = MemPursuitRetriever(vectorstore=store, k=K, pool=POOL, strict=True)
    got = swap.invoke(QUESTION, filter=_user_filter(kind, "B"))
    assert [d.id for d in got] == ["B-song", "B-performer"]


@pytest.mark.parametrize("kind", ["in-memory", "faiss"])
def test_langchain_a_title_under_another_key_is_read_and_fetched_by_that_key(embed, kind):
    from mempursuit_core.adapter import DEFAULT_METADATA_KEYS
    from mempursuit_langchain import MemPursuitRetriever

    store = _langchain_store(embed, kind, title_key="headline")
    keys = {**DEFAULT_METADATA_KEYS, "titles": "headline"}
    swap = MemPursuitRetriever(vectorstore=store, k=K, pool=POOL, strict=True, metadata_keys=keys,
                               search_kwargs={"filter": _user_filter(kind, "A")})
    assert [d.id for d in swap.invoke(QUESTION)] == ["A-song", "A-performer"]


@pytest.mark.parametrize("kind", ["in-memory", "faiss"])
def test_langchain_compressor_under_a_scoped_base_retriever(embed, kind, caplog):
    from langchain_classic.retrievers import ContextualCompressionRetriever

    from mempursuit_langchain import MemPursuitCompressor

    store = _langchain_store(embed, kind)
    base = store.as_retriever(search_kwargs={"k": POOL, "filter": _user_filter(kind, "A")})

    def read(**options):
        return [d.id for d in ContextualCompressionRetriever(
            base_compressor=MemPursuitCompressor(k=K, vector_store=store, strict=True,
                                                 **options),
            base_retriever=base).invoke(QUESTION)]
    with caplog.at_level("WARNING"):
        unscoped = read()  # it never sees the base retriever's filter: no second read
    assert all(i.startswith("A-") for i in unscoped) and "A-performer" not in unscoped
    assert any("filter=" in r.getMessage() for r in caplog.records)
    assert read(filter=_user_filter(kind, "A")) == ["A-song", "A-performer"]


def test_langchain_a_store_that_returns_more_than_asked_keeps_the_first_read_going(embed):
    from mempursuit_langchain import MemPursuitRetriever

    store = _langchain_store(embed, users=("A",))
    plain = store.similarity_search_by_vector

    def more(embedding, k=4, **kwargs):
        found = plain(embedding, k=k, **kwargs)
        return found * 12 + plain(embedding, k=30)  # repeats and documents nobody asked for
    object.__setattr__(store, "similarity_search_by_vector", more)
    got = MemPursuitRetriever(vectorstore=store, k=3, pool=POOL, strict=True).invoke(QUESTION)
    ids = [d.id for d in got]
    assert len(ids) == len(set(ids)) == 3 and "A-performer" in ids


def test_langchain_title_index_follows_a_title_changed_in_place(embed):
    from langchain_core.documents import Document

    from mempursuit_langchain import MemPursuitRetriever

    store = _langchain_store(embed, users=("A",))
    store.delete(["A-performer"])
    swap = MemPursuitRetriever(vectorstore=store, k=K, pool=POOL, strict=True)
    assert "A-performer" not in [d.id for d in swap.invoke(QUESTION)]
    _, title, text = ROWS["A"][1]
    store.add_documents([Document(id="A-filler-3", page_content=_text(title, text),
                                  metadata={"title": title, "user": "A"})])  # overwritten
    assert [d.id for d in swap.invoke(QUESTION)] == ["A-song", "A-filler-3"]
