"""Where a candidate's vector comes from (``mempursuit_core.vectors``): the item, the store by
id through the one registry of readers, else the text embedded once, said once."""

import asyncio
import logging

import pytest

from mempursuit_core import vectors as vectors_mod
from mempursuit_core.vectors import EmbeddedVectors, VectorResolver

def test_embedded_vectors_embed_each_text_once():
    vectors = EmbeddedVectors()
    embedded = []

    def embed(texts):
        embedded.extend(texts)
        return [[float(len(t)), 1.0] for t in texts]

    rows = [None, [9.0, 9.0], None, None]
    vectors.count("store", 1)
    missing, texts = [0, 2, 3], ["ab", "abc", "ab"]
    new = vectors.to_embed(texts)
    assert new == ["ab", "abc"]
    vectors.fill(rows, missing, texts, new, embed(new))
    assert rows == [[2.0, 1.0], [9.0, 9.0], [3.0, 1.0], [2.0, 1.0]]
    assert vectors.to_embed(["abc", "ab", "d"]) == ["d"]  # the cache
    assert embedded == ["ab", "abc"] and vectors.sources == {"store": 1, "embedded": 3}
    with pytest.raises(ValueError, match="returned 1 vectors for 2 texts"):
        vectors.fill([None, None], [0, 1], ["x", "y"], ["x", "y"], [[1.0, 0.0]])


def test_one_vector_reader_registry_found_through_the_class_and_its_bases(monkeypatch):
    class Store:
        pass

    class SubStore(Store):
        pass

    monkeypatch.setattr(vectors_mod, "_VECTOR_READERS", {})
    path = f"{Store.__module__}.{Store.__qualname__}"
    vectors_mod.register_vector_reader(path, "store reader", framework="demo")
    assert vectors_mod.vector_reader_for(SubStore(), "demo") == "store reader"
    assert vectors_mod.vector_reader_for(SubStore(), "other") is None
    assert vectors_mod.vector_reader_for(object(), "demo") is None
    assert vectors_mod.supported_stores("demo") == [path] and vectors_mod.supported_stores("x") == []
    vectors_mod.register_vector_reader(f"{SubStore.__module__}.{SubStore.__qualname__}",
                                    "sub reader", framework="demo")
    assert vectors_mod.vector_reader_for(SubStore(), "demo") == "sub reader"
    assert vectors_mod.vector_reader_for(Store(), "demo") == "store reader"


class Store:
    """A store keeping vectors by id."""

    def __init__(self, table):
        self.table = table
        self.reads = []


def read_table(store, keys, **context):
    store.reads.append((list(keys), context))
    return [store.table.get(k) for k in keys]


def _resolve(resolver, items, store, embedded, **context):
    def embed(texts):
        embedded.extend(texts)
        return [[float(len(t)), 0.0] for t in texts]

    return resolver.resolve(len(items), own=[v for _, _, v in items], store=store,
                            keys=lambda rows: [items[i][0] for i in rows],
                            texts=lambda rows: [items[i][1] for i in rows],
                            embed=embed, embedder=lambda: "TheModel", **context)


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setattr(vectors_mod, "_VECTOR_READERS", {})
    vectors_mod.register_vector_reader(f"{Store.__module__}.{Store.__qualname__}", read_table,
                                       framework="demo")


def test_own_then_store_then_embedded_each_once(registry, caplog):
    resolver = VectorResolver("demo", own="documents", fix="Pass store= to read them.")
    store = Store({"b": [2.0, 2.0]})
    items = [("a", "one", [1.0, 1.0]), ("b", "two", None), ("c", "three", None),
             ("d", "three", None)]
    embedded = []
    with caplog.at_level(logging.WARNING, logger="mempursuit"):
        got = _resolve(resolver, items, store, embedded, tag="x")
        again = _resolve(resolver, items, store, embedded)
    assert got == again == [[1.0, 1.0], [2.0, 2.0], [5.0, 0.0], [5.0, 0.0]]
    assert store.reads[0] == (["b", "c", "d"], {"tag": "x"})  # only the missing rows
    assert embedded == ["three"]  # one text embedded once, cached by content
    assert resolver.sources == {"documents": 2, "store": 2, "embedded": 4}
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1
    assert warned[0].startswith("mempursuit: 2 retrieved documents came without their vectors")
    assert "embedding their text with TheModel" in warned[0]
    assert warned[0].endswith("Pass store= to read them.")


def test_the_warning_says_why_the_store_gave_nothing(registry, caplog):
    cases = [(None, "no vector_store= was given"),
             (object(), "object cannot return stored vectors by id"),
             (Store({}), "Store holds none of these node ids (is it the store they were "
                         "retrieved from?)")]
    for store, why in cases:
        resolver = VectorResolver("demo", item="node")
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="mempursuit"):
            got = _resolve(resolver, [("a", "xy", None)], store, [])
        assert got == [[2.0, 0.0]] and resolver.sources == {"embedded": 1}
        assert [why in r.getMessage() for r in caplog.records] == [True], why


def test_a_fallback_reads_stores_without_a_registered_reader(registry):
    class Other:
        def __init__(self):
            self.table, self.reads = {"a": [7.0, 7.0]}, []

    resolver = VectorResolver("demo", fallback=read_table)
    store = Other()
    assert _resolve(resolver, [("a", "x", None)], store, []) == [[7.0, 7.0]]
    assert resolver.reader(store) is read_table
    assert resolver.reader(Store({})) is read_table  # the registered one, the same function here
    assert VectorResolver("other").reader(Store({})) is None  # another framework's is not used
    assert VectorResolver("demo").read(object(), ["a"]) is None


def test_the_async_resolution_matches_and_takes_the_async_read(registry):
    items = [("a", "one", None), ("b", "two", None)]
    store = Store({"a": [1.0, 0.0]})
    awaited = []

    async def aread(store, keys, **context):
        awaited.append(list(keys))
        return read_table(store, keys, **context)

    async def aembed(texts):
        return [[float(len(t)), 0.0] for t in texts]

    def run(resolver, **kw):
        return asyncio.run(resolver.aresolve(
            2, own=None, store=store, keys=lambda rows: [items[i][0] for i in rows],
            texts=lambda rows: [items[i][1] for i in rows], aembed=aembed,
            embedder=lambda: "M", **kw))

    sync = _resolve(VectorResolver("demo"), items, store, [])
    assert run(VectorResolver("demo")) == sync == [[1.0, 0.0], [3.0, 0.0]]  # reader in a thread
    assert awaited == []
    assert run(VectorResolver("demo"), aread=aread) == sync and awaited == [["a", "b"]]
