"""mempursuit_langgraph on LangGraph's real stores: InMemoryStore, SqliteStore (sqlite-vec, on a
file) and PostgresStore (pgvector, on a PostgreSQL server these tests start and stop), each with
the packaged MiniLM (int8 ONNX) as the store's own embedding function; LangMem's search tool
over the wrapped store; the ``langgraph`` evaluation store.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("langgraph.store.memory", reason='needs the [langgraph] extra: '
                    'pip install -e ".[langgraph]"')

from dialogue_fixture import fixture_conversation  # noqa: E402
from langgraph.store.base import BaseStore  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402
from pg_fixture import postgres_server  # noqa: E402

import mempursuit_langgraph  # noqa: E402
from mempursuit_core import Selector, testing  # noqa: E402
from mempursuit_core import vectors as vector_registry  # noqa: E402
from mempursuit_core.embed import get_embedder  # noqa: E402
from mempursuit_langgraph import MemPursuitStore, register_vector_reader  # noqa: E402
from mempursuit_langgraph import readers as lg_readers  # noqa: E402

NS = ("users", "u")
OTHER = ("users", "other")
PRIYA = {
    "job1": ("Priya works as a nurse at the city hospital.", 1),
    "job2": ("Priya is a nurse; she works at the city hospital.", 1),
    "job3": ("At the city hospital, Priya has a job as a nurse.", 1),
    "shift": ("Priya's hospital shifts start at six in the morning, Monday to Thursday.", 2),
}
QUERIES = ["When does Priya start work at the hospital?", "Where does Kenji go running?",
           "What did Marisol cook for the party?", "Who is visiting next month?"]
STORES = ["memory", "sqlite", "postgres"]


class CountingEmbed:
    """The packaged MiniLM as LangGraph's embedding function, recording every text embedded."""

    def __init__(self):
        self.model = get_embedder()
        self.texts: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, texts):
        texts = list(texts)
        with self.lock:
            self.texts.extend(texts)
        return self.model.encode(texts).tolist()


@pytest.fixture(scope="module")
def embed():
    return CountingEmbed()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("langgraph")


@pytest.fixture(scope="module")
def pg_uri(workdir):
    with postgres_server(workdir / "pg") as server:
        yield server.get_uri()


def _index(embed):
    # SqliteStore reads "text_fields", the other stores "fields"; flat: exact pgvector search
    return {"dims": 384, "embed": embed, "fields": ["text"], "text_fields": ["text"],
            "ann_index_config": {"kind": "flat"}}


def _fill(store: BaseStore) -> None:
    conv = fixture_conversation(1)
    for t in conv["turns"]:
        store.put(NS, t["dia_id"], {"text": t["text"], "session": t["session"],
                                    "speaker": t["speaker"], "timestamp": t["created_at"]})
    for key, (text, session) in PRIYA.items():
        store.put(NS, key, {"text": text, "session": session, "speaker": "Priya"})
        store.put(OTHER, key, {"text": text + " (someone else's)", "session": session})


def _open(kind: str, workdir: Path, embed, pg_uri=None):
    if kind == "memory":
        return InMemoryStore(index=_index(embed)), lambda: None
    if kind == "sqlite":
        from langgraph.store.sqlite import SqliteStore

        from mempursuit_eval.backends.langgraph import _sqlite_module

        conn = _sqlite_module().connect(str(workdir / "store.sqlite"), check_same_thread=False,
                                        isolation_level=None)
        store = SqliteStore(conn, index=_index(embed))
        store.setup()
        return store, conn.close
    from langgraph.store.postgres import PostgresStore
    from psycopg import Connection
    from psycopg.rows import dict_row

    conn = Connection.connect(pg_uri, autocommit=True, prepare_threshold=0, row_factory=dict_row)
    store = PostgresStore(conn, index=_index(embed))
    store.setup()
    return store, conn.close


@pytest.fixture(scope="module", params=STORES)
def store(request, workdir, embed):
    pg = request.getfixturevalue("pg_uri") if request.param == "postgres" else None
    (workdir / request.param).mkdir()
    store, close = _open(request.param, workdir / request.param, embed, pg)
    _fill(store)
    yield store
    close()


def keys(items):
    return [i.key for i in items]


def same_items(ours, theirs) -> bool:
    return [(i.key, i.score, i.value) for i in ours] == [(i.key, i.score, i.value) for i in theirs]


# ------------------------------------------------------------------------------ the swap


def test_readme_swap_in_a_graph(store):
    """``store = MemPursuitStore(store)`` before ``builder.compile(store=store)``."""
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        question: str
        memories: list

    def recall(state: State, *, store: BaseStore):
        found = store.search(NS, query=state["question"], limit=5)
        return {"memories": [m.key for m in found]}

    builder = StateGraph(State)
    builder.add_node("recall", recall)
    builder.add_edge(START, "recall")
    builder.add_edge("recall", END)
    wrapped = MemPursuitStore(store)
    graph = builder.compile(store=wrapped)
    q = QUERIES[0]
    got = graph.invoke({"question": q, "memories": []})["memories"]
    assert got == keys(wrapped.search(NS, query=q, limit=5))
    assert len(got) == 5


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_query_is_the_stores_own_search_with_one_warning(store, blank, caplog):
    """An empty or blank query string, sync and async, with and without ``k``: what
    ``policy="native"`` returns (the store's own search, ``k`` capping it), and one warning
    (issue 64); ``query=None`` (a listing) says nothing."""
    sync_only = type(store).__name__ == "SqliteStore"  # async is AsyncSqliteStore's
    for options in ({}, {"k": 3}):
        theirs = MemPursuitStore(store, policy="native", **options).search(NS, query=blank,
                                                                          limit=4)
        wrapped = MemPursuitStore(store, **options)
        reads = [lambda: wrapped.search(NS, query=blank, limit=4)]
        if not sync_only:
            reads.append(lambda: asyncio.run(wrapped.asearch(NS, query=blank, limit=4)))
        for read in reads:
            caplog.clear()
            with caplog.at_level(logging.WARNING):
                assert same_items(read(), theirs) and theirs
            warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
            assert len(warned) == 1 and "MemPursuitStore: the query is" in warned[0], warned
    assert same_items(MemPursuitStore(store).search(NS, query=blank, limit=4),
                      store.search(NS, query=blank, limit=4))
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        MemPursuitStore(store).search(NS, limit=4)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]

def test_paraphrase_pushed_out_complement_kept(store):
    q = QUERIES[0]
    native = keys(store.search(NS, query=q, limit=3))
    assert sum(k.startswith("job") for k in native) >= 2  # the store's top 3: paraphrases
    got = keys(MemPursuitStore(store, policy="mempursuit").search(NS, query=q, limit=3))
    pushed = [k for k in native if k.startswith("job") and k not in got]
    assert pushed, (native, got)  # a paraphrase of a kept memory is gone
    assert "shift" in got  # the complementary memory (when she works) is kept
    assert sum(k.startswith("job") for k in got) == 1


def test_default_reorders_and_native_is_exact(store):
    reordered = 0
    for q in QUERIES:
        for limit, offset, flt in [(5, 0, None), (3, 2, None), (4, 0, {"session": 2})]:
            ref = store.search(NS, query=q, limit=limit, offset=offset, filter=flt)
            nat = MemPursuitStore(store, policy="native").search(
                NS, query=q, limit=limit, offset=offset, filter=flt)
            assert [(i.key, i.score, i.value) for i in nat] == \
                [(i.key, i.score, i.value) for i in ref]
        default = keys(MemPursuitStore(store).search(NS, query=q, limit=5))
        reordered += default != keys(store.search(NS, query=q, limit=5))
    assert reordered >= 1


def test_namespace_filter_offset_limit(store):
    wrapped = MemPursuitStore(store)
    for q in QUERIES:
        got = wrapped.search(NS, query=q, limit=8)
        assert len(got) == 8 and all(i.namespace == NS for i in got)
        assert keys(wrapped.search(NS, query=q, limit=3, offset=2)) == keys(got)[2:5]
        only2 = wrapped.search(NS, query=q, limit=6, filter={"session": 2})
        assert only2 and all(i.value["session"] == 2 for i in only2)
        both = wrapped.search(("users",), query=q, limit=20)
        assert {i.namespace for i in both} <= {NS, OTHER}
    mine = wrapped.search(OTHER, query=QUERIES[0], limit=10)
    assert len(mine) == len(PRIYA) and all("someone else" in i.value["text"] for i in mine)
    assert len(MemPursuitStore(store, k=2).search(NS, query=QUERIES[0], limit=5)) == 2
    assert keys(MemPursuitStore(store, k=2, policy="native").search(NS, query=QUERIES[0],
                                                                    limit=5)) == \
        keys(store.search(NS, query=QUERIES[0], limit=2))


def test_puts_gets_deletes_pass_through(store, embed):
    wrapped = MemPursuitStore(store)
    wrapped.put(NS, "tmp", {"text": "Priya's hospital badge number is 4471.", "session": 9})
    assert store.get(NS, "tmp").value["session"] == 9
    assert wrapped.get(NS, "tmp").value == store.get(NS, "tmp").value
    assert "tmp" in keys(wrapped.search(NS, query="Priya's hospital badge number", limit=3))
    assert NS in wrapped.list_namespaces(prefix=("users",))
    wrapped.delete(NS, "tmp")
    assert store.get(NS, "tmp") is None
    assert "tmp" not in keys(wrapped.search(NS, query="Priya's hospital badge number", limit=50))


def test_query_embedded_once(store, embed):
    wrapped = MemPursuitStore(store)
    for q in QUERIES:
        before = len(embed.texts)
        wrapped.search(NS, query=q, limit=5)
        assert embed.texts[before:] == [q]  # the store's own query embedding, and no pool texts


def test_async_path_and_concurrency(store, embed):
    wrapped = MemPursuitStore(store)
    ref = {q: keys(wrapped.search(NS, query=q, limit=6)) for q in QUERIES}

    async def both():
        return await asyncio.gather(*(wrapped.asearch(NS, query=q, limit=6) for q in QUERIES))

    if type(store).__name__ == "SqliteStore":  # async is AsyncSqliteStore's (tested below)
        with pytest.raises(NotImplementedError, match="AsyncSqliteStore"):
            asyncio.run(both())
    else:
        got = asyncio.run(both())
        assert [keys(g) for g in got] == [ref[q] for q in QUERIES]
    out: dict[str, list] = {}

    def run(q):
        out[q] = keys(wrapped.search(NS, query=q, limit=6))

    threads = [threading.Thread(target=run, args=(q,)) for q in QUERIES[:2]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == {q: ref[q] for q in QUERIES[:2]}


def test_langmem_search_tool(store):
    from langmem import create_search_memory_tool

    wrapped = MemPursuitStore(store)
    tool = create_search_memory_tool(namespace=NS, store=wrapped,
                                     response_format="content_and_artifact")
    q = QUERIES[0]
    msg = tool.invoke({"type": "tool_call", "id": "1", "name": tool.name,
                       "args": {"query": q, "limit": 4}})
    assert keys(msg.artifact) == keys(wrapped.search(NS, query=q, limit=4))


# ------------------------------------------------------------------------------ faults


class Broken(Selector):
    name = "broken"

    def select(self, query, candidates, k, **kw):
        raise RuntimeError("policy exploded")


def test_the_conformance_checks_every_adapter_runs(store):
    """``mempursuit_core.testing`` (what a plugin's tests run): the option surface, bad options
    refused at construction, ``policy="native"`` is the store's own search (keys, scores,
    values), a failing policy returns it with one warning, ``strict=True`` raises."""
    q = QUERIES[1]
    testing.check_adapter(MemPursuitStore, build=lambda **o: MemPursuitStore(store, **o),
                          read=lambda wrapped: wrapped.search(NS, query=q, limit=4),
                          native=lambda: store.search(NS, query=q, limit=4), same=same_items,
                          ids=keys)


def test_fallback_and_strict(store, caplog):
    q = QUERIES[1]
    ref = keys(store.search(NS, query=q, limit=4))
    with caplog.at_level(logging.WARNING, logger="mempursuit_langgraph"):
        got = MemPursuitStore(store, policy=Broken()).search(NS, query=q, limit=4)
    assert keys(got) == ref
    assert sum("policy exploded" in r.getMessage() for r in caplog.records) == 1
    with pytest.raises(RuntimeError, match="policy exploded"):
        MemPursuitStore(store, policy=Broken(), strict=True).search(NS, query=q, limit=4)


def test_items_without_a_vector_are_kept(embed):
    store = InMemoryStore(index=_index(embed))
    _fill(store)
    store.put(NS, "plain", {"text": "Priya's locker is number 12."}, index=False)
    wrapped = MemPursuitStore(store)
    pool = wrapped.pool(NS, QUERIES[0])
    assert keys(pool.unscored) == ["plain"] and "plain" not in keys(pool.candidates.items)
    everything = keys(wrapped.search(NS, query=QUERIES[0], limit=500))
    assert everything[-1] == "plain" and len(everything) == len(set(everything))
    assert set(everything) == set(keys(store.search(NS, query=QUERIES[0], limit=500)))


def test_a_title_field_is_the_titles_signal_and_the_default_follows_it(embed):
    """Documents stored with a ``title``: the pool hands them over as ``titles`` and the
    default brings in the passage the first one names (the question never mentions it)."""
    store = InMemoryStore(index=_index(embed))
    docs = {"song": ("Blue Lantern", "Blue Lantern is a 1998 single by the singer Mara Voss."),
            "mara": ("Mara Voss", "Mara Voss retired to Lisbon, where she died in 2019.")}
    for i in range(12):
        docs[f"other{i}"] = (f"Lantern song {i}", f"Lantern song {i} is a 1998 single about "
                             f"blue lanterns and the sea, track {i}.")
    for key, (title, text) in docs.items():
        store.put(("docs",), key, {"text": text, "title": title})
    store.put(("docs",), "untitled", {"text": "A note without a title."})
    q = "Where did the singer of Blue Lantern die?"
    wrapped = MemPursuitStore(store)
    pool = wrapped.pool(("docs",), q)
    titles = list(pool.candidates.signals["titles"])
    assert titles == [docs[i.key][0] if i.key in docs else None for i in pool.candidates.items]
    native = keys(store.search(("docs",), query=q, limit=3))
    got = keys(wrapped.search(("docs",), query=q, limit=3))
    assert "mara" not in native and got[0] == "song" and "mara" in got, (native, got)
    plain = InMemoryStore(index=_index(embed))
    plain.put(("docs",), "a", {"text": "No titles here."})
    assert "titles" not in MemPursuitStore(plain).pool(("docs",), q).candidates.signals
    # a file's name is its title, derived as every adapter derives it (document_title)
    files = InMemoryStore(index=_index(embed))
    files.put(("docs",), "p", {"text": "Leave is 25 days.", "file_name": "travel_policy.md"})
    files.put(("docs",), "h", {"text": "Welcome aboard.", "source": "/kb/handbook.txt"})
    pool = MemPursuitStore(files).pool(("docs",), "leave")
    assert sorted(pool.candidates.signals["titles"]) == ["handbook", "travel_policy"]


class ThirdPartyStore(BaseStore):
    """A store LangGraph does not ship: delegates to an InMemoryStore, embeds by itself."""

    def __init__(self, inner: InMemoryStore):
        self.inner = inner
        self.index_config = {"fields": ["text"]}

    @property
    def embeddings(self):  # read-only: the adapter cannot wrap it
        return self.inner.embeddings

    def batch(self, ops):
        return self.inner.batch(ops)

    async def abatch(self, ops):
        return await self.inner.abatch(ops)


def test_store_without_a_reader(embed, caplog):
    inner = InMemoryStore(index=_index(embed))
    _fill(inner)
    store = ThirdPartyStore(inner)
    q = QUERIES[0]
    with pytest.raises(mempursuit_langgraph.VectorAccessError, match="mempursuit embeds"):
        MemPursuitStore(store, strict=True).search(NS, query=q, limit=4)
    wrapped = MemPursuitStore(store, policy="mempursuit")
    with caplog.at_level(logging.WARNING, logger="mempursuit_langgraph"):
        got = [keys(wrapped.search(NS, query=q, limit=3)) for _ in range(2)]
    warned = [r.getMessage() for r in caplog.records]
    assert sum("embeds the pool" in m for m in warned) == 1  # once, saying what it costs
    expected = keys(MemPursuitStore(inner, policy="mempursuit").search(NS, query=q, limit=3))
    assert got == [expected, expected]
    path = f"{ThirdPartyStore.__module__}.{ThirdPartyStore.__qualname__}"
    register_vector_reader(path, lambda s, ks: lg_readers._read_memory(s.inner, ks))
    try:
        assert path in mempursuit_langgraph.supported_stores()
        before = len(embed.texts)
        assert keys(MemPursuitStore(store, policy="mempursuit").search(
            NS, query=q, limit=3)) == expected
        # no pool text embedded, and the query once: wrapping `inner` above put a
        # QueryCapture on the embeddings this store hands out, and the adapter reuses it
        assert embed.texts[before:] == [q]
    finally:
        vector_registry._VECTOR_READERS.pop(path)


def test_a_sync_search_over_an_async_only_reader_says_so(embed, caplog):
    """The sync read takes the registered reader as the async one does: with only ``aread=``,
    it says to use ``asearch`` (and falls back), not that no reader is registered."""
    inner = InMemoryStore(index=_index(embed))
    _fill(inner)
    store = ThirdPartyStore(inner)
    path = f"{ThirdPartyStore.__module__}.{ThirdPartyStore.__qualname__}"

    async def aread(s, ks):
        return lg_readers._read_memory(s.inner, ks)

    register_vector_reader(path, aread=aread)
    try:
        q = QUERIES[0]
        with caplog.at_level(logging.WARNING):
            got = keys(MemPursuitStore(store).search(NS, query=q, limit=3))
        assert got == keys(inner.search(NS, query=q, limit=3))  # LangGraph's own result
        warned = [r.getMessage() for r in caplog.records]
        assert any("only an async vector reader; use the store's async API" in m for m in warned)
        assert not any("embeds the pool" in m for m in warned)
        expected = keys(MemPursuitStore(inner, policy="mempursuit").search(NS, query=q, limit=3))
        assert keys(asyncio.run(MemPursuitStore(store, policy="mempursuit").asearch(
            NS, query=q, limit=3))) == expected
    finally:
        vector_registry._VECTOR_READERS.pop(path)


def test_async_postgres_store(pg_uri, embed, workdir):
    from langgraph.store.postgres.aio import AsyncPostgresStore

    async def run():
        index = {**_index(embed), "ann_index_config": {"kind": "hnsw"}}  # its setup: no "flat"
        async with AsyncPostgresStore.from_conn_string(pg_uri, index=index) as astore:
            await astore.setup()
            await astore.aput(("async",), "a", {"text": "Kenji runs along the river at dawn."})
            await astore.aput(("async",), "b", {"text": "Kenji jogs by the river every morning."})
            await astore.aput(("async",), "c", {"text": "Kenji's marathon is in October."})
            wrapped = MemPursuitStore(astore, policy="native")
            q = "Where does Kenji run?"
            nat = await astore.asearch(("async",), query=q, limit=3)
            got = await wrapped.asearch(("async",), query=q, limit=3)
            pool = await MemPursuitStore(astore).apool(("async",), q)
            ours = await MemPursuitStore(astore).asearch(("async",), query=q, limit=2)
            return keys(nat), keys(got), pool, keys(ours)

    nat, got, pool, ours = asyncio.run(run())
    assert got == nat and keys(pool.candidates.items) == nat
    assert pool.candidates.vectors.shape == (3, 384) and not pool.unscored
    assert len(ours) == 2 and set(ours) <= set(nat)


def test_async_sqlite_store(embed, tmp_path):
    import functools

    import aiosqlite
    from langgraph.store.sqlite.aio import AsyncSqliteStore

    from mempursuit_eval.backends.langgraph import _sqlite_module

    async def run():
        connect = functools.partial(_sqlite_module().connect, str(tmp_path / "a.sqlite"),
                                    check_same_thread=False, isolation_level=None)
        async with aiosqlite.Connection(connect, 64) as conn:
            astore = AsyncSqliteStore(conn, index=_index(embed))
            await astore.setup()
            for key, (text, session) in PRIYA.items():
                await astore.aput(NS, key, {"text": text, "session": session})
            q = QUERIES[0]
            nat = await astore.asearch(NS, query=q, limit=3)
            got = await MemPursuitStore(astore, policy="native").asearch(NS, query=q, limit=3)
            pool = await MemPursuitStore(astore).apool(NS, q)
            ours = await MemPursuitStore(astore, policy="mempursuit").asearch(NS, query=q,
                                                                              limit=2)
            return keys(nat), keys(got), pool, keys(ours)

    nat, got, pool, ours = asyncio.run(run())
    assert got == nat and keys(pool.candidates.items)[:3] == nat
    assert pool.candidates.vectors.shape == (4, 384) and not pool.unscored
    assert "shift" in ours and len(ours) == 2


# ------------------------------------------------------------------------------ eval store


@pytest.mark.parametrize("kind", STORES)
def test_eval_backend_reads_the_adapter_pool(kind, embed, tmp_path, request):
    from mempursuit_eval.backends.langgraph import LangGraphBackend
    from mempursuit_eval.datasets import load_locomo
    from dialogue_fixture import fixture_path

    opts = {"store": kind}
    if kind == "postgres":
        opts["conninfo"] = request.getfixturevalue("pg_uri")
    ds = load_locomo(fixture_path())
    backend = LangGraphBackend(**opts)
    try:
        backend.build(ds.units, embedder=embed.model, workdir=tmp_path)
        q = ds.questions[0]
        pool = backend.pool(q.group, q.text, 200)
        units = {u.uid: u for u in ds.units}
        assert {units[u].group for u in pool.items} == {q.group}
        assert len(pool.items) == sum(u.group == q.group for u in ds.units)
        np.testing.assert_allclose(pool.vectors, embed.model.encode(
            [units[u].text for u in pool.items]), atol=1e-5)
        assert list(pool.signals["session_ids"]) == [units[u].session_id for u in pool.items]
        assert list(pool.signals["speakers"]) == [units[u].speaker for u in pool.items]
        assert np.all(np.diff(pool.native_scores) <= 1e-6)
    finally:
        backend.close()


def test_example_runs(tmp_path):
    import os
    import subprocess
    import sys

    example = Path(__file__).resolve().parents[1] / "examples" / "langgraph_quickstart.py"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MEMPURSUIT_PLUGINS": ""}
    res = subprocess.run([sys.executable, str(example)], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    native, rest = res.stdout.split("MemPursuitStore's 3 (the default policy")
    ours, paper = rest.split("the paper's rule")
    assert "reproduction" in paper.splitlines()[0]
    # the store's top 3 are the paraphrases; the default ranks the answer (the shift) first
    assert "shift" not in native and ours.splitlines()[1].split()[0] == "shift"
    assert "shift" in paper and sum(f"job-{i}" in paper for i in (1, 2, 3)) == 1


def test_eval_backend_takes_dataset_signals(embed, tmp_path):
    """``mempursuit eval --framework langgraph --dataset-signals``: the store takes the option
    (it used to fail on a ``--backend-opt`` never passed) and puts the benchmark's own session
    ids and speakers over what the adapter reads."""
    from mempursuit_eval.datasets import load_locomo
    from mempursuit_eval.runner import build_backend
    from dialogue_fixture import fixture_path

    ds = load_locomo(fixture_path())
    backend = build_backend("langgraph", options={"store": "memory", "dataset_signals": True})
    try:
        backend.build(ds.units, embedder=embed.model, workdir=tmp_path)
        q = ds.questions[0]
        pool = backend.pool(q.group, q.text, 200)
        units = {u.uid: u for u in ds.units}
        assert len(pool.items) == sum(u.group == q.group for u in ds.units)
        assert list(pool.signals["session_ids"]) == [units[u].session_id for u in pool.items]
        assert list(pool.signals["speakers"]) == [units[u].speaker for u in pool.items]
    finally:
        backend.close()
