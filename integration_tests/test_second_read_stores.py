"""The second read through the memory frameworks' own stores (issue 63): LangGraph, Agno, CrewAI,
AutoGen, Semantic Kernel, Mem0, Graphiti. Per framework, on its real store: the swap fetches the
performer's passage by the title the song's passage names (a pool of 3, K=2), ``follow=0`` does
not, and with two users in one store nothing of the other user's ever comes back, second read
included (her passage removed from the user's own memory: the other's is never fetched).
Embedded with the packaged MiniLM (offline)."""

from __future__ import annotations

import numpy as np
import pytest

from mempursuit_core.embed import get_embedder

SONG = "I Can't See Myself Leaving You"
PERFORMER = "Aretha Franklin"
QUESTION = f"Where did the performer of song {SONG} die?"
POOL, K = 3, 2


def _passages(user: str) -> list[tuple[str, str, str]]:
    """``(id, title, text)``: the user's song (near the question), her performer's passage (far
    from it: never in a pool of 3) and fillers."""
    rows = [(f"{user}-song", SONG, f"{SONG} is a song recorded by Aretha Franklin in 1969."),
            (f"{user}-performer", PERFORMER, f"Aretha Louise Franklin ({user}) was an American "
                                             "singer. She died in Detroit, Michigan in 2018."),
            (f"{user}-leaving", "Leaving You", "Leaving You is a song by a band.")]
    rows += [(f"{user}-filler-{i}", f"Filler {i}",
              f"Filler paragraph number {i} about songs and leaving.") for i in range(12)]
    return rows


ROWS = {"A": _passages("A"), "B": _passages("B")}


def _text(title: str, text: str) -> str:
    return f"{title}: {text}"


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
