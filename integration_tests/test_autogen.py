"""The AutoGen adapter on the real framework: ``MemPursuitChromaDBVectorMemory`` over a real
local Chroma folder (AutoGen's ``PersistentChromaDBVectorMemoryConfig``), written by AutoGen's
own ``add`` and embedded with the packaged MiniLM (``MemPursuitEmbeddingFunction``); the
memory's ``update_context`` on a real ``BufferedChatCompletionContext``."""

import asyncio
import logging

import numpy as np
import pytest

pytest.importorskip("autogen_ext.memory.chromadb",
                    reason='needs pip install -e ".[autogen]" (CI: .ci/nodeps-autogen.txt)')

from autogen_core.memory import MemoryContent, MemoryMimeType  # noqa: E402
from autogen_core.model_context import BufferedChatCompletionContext  # noqa: E402
from autogen_core.models import UserMessage  # noqa: E402
from autogen_ext.memory.chromadb import (ChromaDBVectorMemory,  # noqa: E402
                                         CustomEmbeddingFunctionConfig,
                                         PersistentChromaDBVectorMemoryConfig)

from mempursuit_autogen import (MemPursuitChromaDBVectorMemory,  # noqa: E402
                                MemPursuitEmbeddingFunction)
from mempursuit_core import testing  # noqa: E402
from mempursuit_core.embed import get_embedder  # noqa: E402

from paraphrase_facts import CAT, FACTS, PARAPHRASES, QUESTION  # noqa: E402
from parity import Recorder  # noqa: E402

TIMES = [f"2024-03-0{i + 1}T10:00:00" for i in range(len(FACTS))]


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    """One Chroma folder written once through AutoGen's own ``add``."""
    folder = str(tmp_path_factory.mktemp("chroma"))
    memory = ChromaDBVectorMemory(config=_config(folder))

    async def fill():
        for fact, when in zip(FACTS, TIMES):
            await memory.add(MemoryContent(content=fact, mime_type=MemoryMimeType.TEXT,
                                           metadata={"speaker": "alice", "timestamp": when}))
    run(fill())
    run(memory.close())
    return folder


def _config(folder, **kw):
    return PersistentChromaDBVectorMemoryConfig(
        collection_name="facts", persistence_path=folder,
        embedding_function_config=CustomEmbeddingFunctionConfig(
            function=MemPursuitEmbeddingFunction, params={"threads": 1}), **kw)


def _texts(result):
    return [m.content for m in result.results]


def _same(ours, theirs):
    return [(m.content, m.metadata) for m in ours.results] == [
        (m.content, m.metadata) for m in theirs.results]


def test_query_keeps_the_complement_and_drops_a_paraphrase(path):
    alone = _texts(run(ChromaDBVectorMemory(config=_config(path, k=2)).query(QUESTION)))
    assert set(alone) <= set(PARAPHRASES)  # AutoGen's own top 2: two paraphrases, no cat
    ours = _texts(run(MemPursuitChromaDBVectorMemory(config=_config(path, k=2)).query(QUESTION)))
    assert len(ours) == 2 and CAT in ours and (set(ours) - {CAT}) <= set(PARAPHRASES)


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_native_policy_is_autogens_own_query(path, k):
    alone = run(ChromaDBVectorMemory(config=_config(path, k=k)).query(QUESTION))
    ours = run(MemPursuitChromaDBVectorMemory(config=_config(path, k=k), policy="native")
               .query(QUESTION))
    assert _same(ours, alone) and len(ours.results) == k


def test_the_default_k_is_autogens_and_update_context_is_unchanged(path):
    memory = MemPursuitChromaDBVectorMemory(config=_config(path))  # AutoGen's k=3
    context = BufferedChatCompletionContext(buffer_size=10)
    run(context.add_message(UserMessage(content=QUESTION, source="user")))
    result = run(memory.update_context(context))
    assert len(result.memories.results) == 3 and CAT in _texts(result.memories)
    added = run(context.get_messages())[-1].content
    assert "Relevant memory content" in added and CAT in added


def test_the_policy_sees_the_pool_and_the_stored_vectors(path):
    recorder = Recorder()
    run(MemPursuitChromaDBVectorMemory(config=_config(path, k=2), policy=recorder)
        .query(QUESTION))
    small = Recorder()
    run(MemPursuitChromaDBVectorMemory(config=_config(path, k=2), policy=small, pool=4)
        .query(QUESTION))
    assert [c["P"] for c in recorder.calls] == [len(FACTS)]
    assert [c["P"] for c in small.calls] == [4]
    pool = run(MemPursuitChromaDBVectorMemory(config=_config(path)).candidate_pool(QUESTION))
    encoder = get_embedder("minilm", threads=1)
    texts = [m.content for m in pool.items]
    assert np.allclose(pool.vectors, encoder.encode(texts), atol=1e-5)  # stored, not re-embedded
    assert np.allclose(pool.query_vector, encoder.encode([QUESTION])[0], atol=1e-5)
    assert list(pool.signals["speakers"]) == ["alice"] * len(FACTS)
    assert list(pool.signals["timestamps"]) == [TIMES[FACTS.index(t)] for t in texts]
    assert np.all(np.diff(pool.native_scores) <= 1e-9)  # AutoGen's scores, its order


def test_the_conformance_checks_every_adapter_runs(path):
    testing.check_adapter(
        MemPursuitChromaDBVectorMemory,
        build=lambda **o: MemPursuitChromaDBVectorMemory(config=_config(path), **o),
        read=lambda memory: memory.query(QUESTION),
        native=lambda: ChromaDBVectorMemory(config=_config(path)).query(QUESTION),
        same=_same, ids=lambda r: [(m.metadata or {}).get("id") for m in r.results])


def test_k_caps_autogens_k_and_the_threshold_is_autogens(path):
    assert len(run(MemPursuitChromaDBVectorMemory(config=_config(path, k=5), k=2)
                   .query(QUESTION)).results) == 2
    strict = _config(path, k=5, score_threshold=0.6)
    alone = run(ChromaDBVectorMemory(config=strict).query(QUESTION))
    ours = run(MemPursuitChromaDBVectorMemory(config=strict).query(QUESTION))
    assert set(_texts(ours)) <= {m.content for m in run(
        ChromaDBVectorMemory(config=_config(path, k=7, score_threshold=0.6)).query(
            QUESTION)).results}
    assert len(ours.results) == len(alone.results)


def test_a_failing_read_returns_autogens_own_with_one_warning(path, caplog):
    memory = MemPursuitChromaDBVectorMemory(config=_config(path, k=3))
    run(memory.query(QUESTION))  # initialises the collection
    original = memory._collection.get
    memory._collection.get = lambda **kw: {"ids": [], "embeddings": []}  # vectors unreadable
    with caplog.at_level(logging.WARNING):
        got = run(memory.query(QUESTION))
    memory._collection.get = original
    assert _same(got, run(ChromaDBVectorMemory(config=_config(path, k=3)).query(QUESTION)))
    assert sum("no stored embedding" in r.getMessage() for r in caplog.records) == 1


@pytest.mark.parametrize("bad", [dict(k=0), dict(pool="200"), dict(policy="no-such-policy"),
                                 dict(strict="yes"), dict(policy_options={"no_such_option": 1})])
def test_bad_options_fail_at_construction(path, bad):
    with pytest.raises((TypeError, ValueError, KeyError)):
        MemPursuitChromaDBVectorMemory(config=_config(path), **bad)


def test_the_example_runs_as_written():
    from paraphrase_facts import run_example

    stdout = run_example("autogen_quickstart.py")
    alone, ours = stdout.split("MemPursuitChromaDBVectorMemory:")
    assert CAT not in alone and CAT in ours


def test_eval_backend_pools_are_autogens_own_read(tmp_path):
    """``mempursuit eval --framework autogen``: the pool is AutoGen's own query (k = P) over
    the group's collection with the stored vectors; the policy reorders it exactly as the
    memory's ``query`` does, with the same signals."""
    from mempursuit_eval.backends.autogen import AutoGenBackend
    from mempursuit_eval.runner import build_backend
    from parity import assert_parity, built_pool, harness_order

    backend = build_backend("autogen")
    assert isinstance(backend, AutoGenBackend)
    encoder = get_embedder("minilm", threads=1)
    units, pool, texts = built_pool(backend, encoder, tmp_path, FACTS, QUESTION)
    assert not {"speakers", "session_ids", "timestamps", "titles"} & set(pool.signals)
    memory = backend._memories["alice"]
    order, harness_signals = harness_order(pool, 3)
    recorder = Recorder()
    ours = MemPursuitChromaDBVectorMemory(config=memory._config.model_copy(update={"k": 3}),
                                          policy=recorder)
    got = run(ours.query(QUESTION))
    assert [m.metadata["uid"] for m in got.results] == order
    assert_parity(harness_signals, recorder.calls[-1]["signals"])
    backend.close()
    again = AutoGenBackend(dataset_signals=True)
    assert again.load_existing(units, embedder=encoder, workdir=tmp_path)  # the saved store
    mixed = again.pool("alice", QUESTION, 200)
    assert mixed.items == pool.items and set(mixed.signals["speakers"]) == {"alice"}
    again.close()
    assert not AutoGenBackend().load_existing(units[:-1], embedder=encoder, workdir=tmp_path)


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_query_is_autogens_own_query_with_one_warning(path, blank, caplog):
    """Issue 64: AutoGen's own answer to an empty or blank query (text or MemoryContent), and
    one warning."""
    alone = run(ChromaDBVectorMemory(config=_config(path, k=2)).query(blank))
    for query in (blank, MemoryContent(content=blank, mime_type=MemoryMimeType.TEXT)):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            ours = run(MemPursuitChromaDBVectorMemory(config=_config(path, k=2)).query(query))
        assert _same(ours, alone) and len(ours.results) == 2
        warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warned) == 1 and "the query is" in warned[0], warned
