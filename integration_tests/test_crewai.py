"""The CrewAI adapter on the real framework: ``MemPursuitMemory`` over a real local LanceDB folder
(CrewAI's ``LanceDBStorage``), written by CrewAI's own ``Memory.remember`` with every field given
(its path without an LLM) and embedded with the packaged MiniLM (``MemPursuitEmbedder``); shallow
recall, and deep recall with ``exploration_budget=0`` and a short query (RecallFlow without its
LLM)."""

import logging
import os
import warnings

import numpy as np
import pytest

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # before importing crewai
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")  # each save would wait out a timeout
_WARN = warnings.warn

pytest.importorskip("crewai.memory.unified_memory",
                    reason='needs pip install -e ".[crewai]" (CI: .ci/nodeps-crewai.txt)')

from crewai.memory.storage.lancedb_storage import LanceDBStorage  # noqa: E402
from crewai.memory.unified_memory import Memory  # noqa: E402

# crewai's import replaces warnings.warn with a wrapper that drops pydantic's deprecation
# warnings in the whole process: put it back, so that the rest of the session (and these tests)
# keep the project's filterwarnings = error
warnings.warn = _WARN

from mempursuit_core import testing  # noqa: E402
from mempursuit_core.embed import get_embedder  # noqa: E402
from mempursuit_crewai import MemPursuitEmbedder, MemPursuitMemory  # noqa: E402

from paraphrase_facts import CAT, FACTS, PARAPHRASES, QUESTION  # noqa: E402
from parity import Recorder  # noqa: E402

TIMES = [f"2024-03-0{i + 1}T10:00:00" for i in range(len(FACTS))]
EMBEDDER = MemPursuitEmbedder(threads=1)


def _remember(memory, fact, **metadata):
    """CrewAI's own save with every field given: no LLM analysis (EncodingFlow's fast path)."""
    return memory.remember(fact, scope="/", categories=[], importance=0.5, metadata=metadata)


def _writer(path, cls=Memory, **kw):
    """A memory that saves without an LLM: every field given to ``remember`` and consolidation
    off (``consolidation_threshold=1.0``: the paraphrases score above CrewAI's 0.85)."""
    return cls(storage=str(path), embedder=EMBEDDER, consolidation_threshold=1.0, **kw)


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    """One LanceDB folder written once through CrewAI's own ``remember``."""
    folder = str(tmp_path_factory.mktemp("lancedb"))
    memory = _writer(folder)
    for fact, when in zip(FACTS, TIMES):
        _remember(memory, fact, speaker="alice", timestamp=when)
    memory.close()
    return folder


def _memory(path, cls=Memory, **kw):
    return cls(storage=path, embedder=EMBEDDER, read_only=True, **kw)


def _texts(matches):
    return [m.record.content for m in matches]


def _same(ours, theirs):
    """The same records in the same order with the same reasons; the scores agree (CrewAI's
    recency term is computed at each call's own clock)."""
    return ([(m.record.id, m.match_reasons) for m in ours]
            == [(m.record.id, m.match_reasons) for m in theirs]
            and np.allclose([m.score for m in ours], [m.score for m in theirs], atol=1e-6))


def test_recall_keeps_the_complement_and_drops_a_paraphrase(path):
    alone = _texts(_memory(path).recall(QUESTION, limit=2, depth="shallow"))
    assert set(alone) <= set(PARAPHRASES)  # CrewAI's own top 2: two paraphrases, no cat
    ours = _texts(_memory(path, MemPursuitMemory).recall(QUESTION, limit=2, depth="shallow"))
    assert len(ours) == 2 and CAT in ours and (set(ours) - {CAT}) <= set(PARAPHRASES)


def test_deep_recall_without_an_llm_keeps_the_complement(path):
    """RecallFlow with a short query and no exploration budget makes no LLM call; each of its
    searches (``2 * limit`` asked) returns the policy's ``limit``."""
    alone = _memory(path, exploration_budget=0).recall(QUESTION, limit=2)
    assert set(_texts(alone)) <= set(PARAPHRASES)
    recorder = Recorder()
    ours = _memory(path, MemPursuitMemory, exploration_budget=0, policy=recorder).recall(
        QUESTION, limit=2)
    assert CAT in _texts(ours) and len(ours) == 2
    assert [c["P"] for c in recorder.calls] == [len(FACTS)]
    native = _memory(path, MemPursuitMemory, exploration_budget=0, policy="native")
    assert _same(native.recall(QUESTION, limit=2), alone)


@pytest.mark.parametrize("limit", [1, 2, 3, 5])
def test_native_policy_is_crewais_own_recall(path, limit):
    alone = _memory(path).recall(QUESTION, limit=limit, depth="shallow")
    ours = _memory(path, MemPursuitMemory, policy="native").recall(QUESTION, limit=limit,
                                                                   depth="shallow")
    assert _same(ours, alone) and len(ours) == limit
    assert not hasattr(ours[0], "embedding")  # CrewAI's own MemoryMatch objects


def test_a_crew_keeps_the_memory_and_its_recall(path):
    """``Crew(memory=...)`` takes it as a ``Memory`` (the crew's memory is this object); nothing
    is run, so the agent's LLM is never called."""
    from crewai import LLM, Agent, Crew, Task

    memory = _memory(path, MemPursuitMemory)
    agent = Agent(role="assistant", goal="answer", backstory="-", llm=LLM(model="gpt-4o-mini"))
    crew = Crew(agents=[agent], memory=memory,
                tasks=[Task(description=QUESTION, expected_output="-", agent=agent)])
    assert crew._memory is memory
    assert CAT in _texts(crew._memory.recall(QUESTION, limit=2, depth="shallow"))


def test_the_policy_sees_the_pool_and_the_stored_vectors(path):
    recorder, small = Recorder(), Recorder()
    _memory(path, MemPursuitMemory, policy=recorder).recall(QUESTION, limit=2, depth="shallow")
    _memory(path, MemPursuitMemory, policy=small, pool=4).recall(QUESTION, limit=2,
                                                                 depth="shallow")
    assert [c["P"] for c in recorder.calls] == [len(FACTS)]
    assert [c["P"] for c in small.calls] == [4]
    pool = _memory(path, MemPursuitMemory).candidate_pool(QUESTION)
    encoder = get_embedder("minilm", threads=1)
    texts = [r.content for r, _ in pool.items]
    assert sorted(texts) == sorted(FACTS)
    assert np.allclose(pool.vectors, encoder.encode(texts), atol=1e-5)  # stored, not re-embedded
    assert np.allclose(pool.query_vector, encoder.encode([QUESTION])[0], atol=1e-5)
    assert list(pool.signals["speakers"]) == ["alice"] * len(FACTS)
    assert list(pool.signals["timestamps"]) == [TIMES[FACTS.index(t)] for t in texts]
    assert pool.signals["query_text"] == QUESTION
    assert np.all(np.diff(pool.native_scores) <= 1e-9)  # CrewAI's scores, its order
    assert recorder.calls[0]["signals"]["texts"] == texts


def test_the_policys_k_is_what_crewai_scores(path):
    """The policy's K records, each with its own search score, are what CrewAI's composite
    score orders: the result is the policy's set in CrewAI's order."""
    memory = _memory(path, MemPursuitMemory)
    pool = memory.candidate_pool(QUESTION)
    picked = pool.select(memory._selector, 3).items
    got = memory.recall(QUESTION, limit=3, depth="shallow")
    assert {m.record.id for m in got} == {r.id for r, _ in picked}
    scores = [m.score for m in got]
    assert scores == sorted(scores, reverse=True)


def test_k_caps_the_limit_and_the_scope_filter_is_crewais(tmp_path):
    memory = _writer(tmp_path)
    for fact in FACTS:
        memory.remember(fact, scope="/alice", categories=[], importance=0.5)
    memory.remember("Alice's neighbour adopted a cat too.", scope="/bob", categories=[],
                    importance=0.5)
    ours = MemPursuitMemory(storage=str(tmp_path), embedder=EMBEDDER, k=2)
    assert len(ours.recall(QUESTION, limit=5, depth="shallow")) == 2
    scoped = ours.recall(QUESTION, scope="/alice", limit=5, depth="shallow")
    assert {m.record.scope for m in scoped} == {"/alice"} and CAT in _texts(scoped)
    memory.close()


def test_remembers_own_search_is_crewais(tmp_path, caplog):
    """The consolidation search inside ``remember`` is not a read: the policy never sees it;
    and the save asked no LLM (CrewAI logs a failed analysis, no key being set)."""
    recorder = Recorder()
    memory = _writer(tmp_path, MemPursuitMemory, policy=recorder)
    with caplog.at_level(logging.WARNING):
        for fact in FACTS:
            _remember(memory, fact)
    assert not [r for r in caplog.records if "analysis" in r.getMessage().lower()
                or "OPENAI_API_KEY" in r.getMessage()]
    assert recorder.calls == [] and memory.info().record_count == len(FACTS)
    assert len(memory.recall(QUESTION, limit=3, depth="shallow")) == 3
    assert len(recorder.calls) == 1
    memory.close()


def test_private_records_the_caller_may_not_see_stay_out_of_the_pool(tmp_path):
    memory = _writer(tmp_path)
    for fact in FACTS:
        _remember(memory, fact)
    secret = "Alice moved to Lisbon in March; her new cat is called Pixel."
    memory.remember(secret, scope="/", categories=[], importance=0.5, source="bob", private=True)
    recorder = Recorder()
    ours = MemPursuitMemory(storage=str(tmp_path), embedder=EMBEDDER, policy=recorder)
    got = ours.recall(QUESTION, limit=3, depth="shallow")
    assert len(got) == 3 and secret not in _texts(got)
    assert secret not in recorder.calls[-1]["signals"]["texts"]
    assert recorder.calls[-1]["P"] == len(FACTS)
    mine = ours.recall(QUESTION, limit=3, depth="shallow", source="bob")
    assert recorder.calls[-1]["P"] == len(FACTS) + 1 and len(mine) == 3
    memory.close()


def test_without_timestamp_metadata_the_timestamps_are_crewais_created_at(tmp_path):
    memory = _writer(tmp_path)
    for fact in FACTS[:4]:
        _remember(memory, fact)
    pool = MemPursuitMemory(storage=str(tmp_path), embedder=EMBEDDER).candidate_pool(QUESTION)
    assert list(pool.signals["timestamps"]) == [r.created_at.isoformat() for r, _ in pool.items]
    assert "speakers" not in pool.signals
    memory.close()


class _NoVectors(LanceDBStorage):
    """A storage backend (CrewAI's pluggable protocol) whose search leaves the vectors out."""

    def search(self, *args, **kwargs):
        return [(r.model_copy(update={"embedding": None}), s)
                for r, s in super().search(*args, **kwargs)]


def test_a_failing_read_returns_crewais_own_with_one_warning(path, caplog):
    memory = MemPursuitMemory(storage=_NoVectors(path=path), embedder=EMBEDDER, read_only=True)
    with caplog.at_level(logging.WARNING):
        got = memory.recall(QUESTION, limit=3, depth="shallow")
    assert _same(got, _memory(path).recall(QUESTION, limit=3, depth="shallow"))
    assert sum("without their stored embedding" in r.getMessage() for r in caplog.records) == 1
    assert "without their stored embedding" in memory.last_trace.fallback  # the trace says so
    assert list(memory.last_trace.final) == [m.record.id for m in got]


def test_a_strict_deep_recall_raises_though_recallflow_swallows_search_errors(path):
    memory = _memory(path, MemPursuitMemory, exploration_budget=0,
                     policy=testing.FailingSelector(), strict=True)
    with pytest.raises(RuntimeError, match="fails on purpose"):
        memory.recall(QUESTION, limit=2)


def test_the_conformance_checks_every_adapter_runs(path):
    testing.check_adapter(
        MemPursuitMemory,
        build=lambda **o: _memory(path, MemPursuitMemory, **o),
        read=lambda memory: memory.recall(QUESTION, limit=3, depth="shallow"),
        native=lambda: _memory(path).recall(QUESTION, limit=3, depth="shallow"),
        same=_same)


def test_the_trace_of_a_recall(path):
    """``last_trace``: the storage's own order of the pool, the recall's result, by record id."""
    memory = _memory(path, MemPursuitMemory)
    got = memory.recall(QUESTION, limit=3, depth="shallow")
    trace = memory.last_trace
    assert list(trace.final) == [m.record.id for m in got] and len(got) == 3
    assert list(trace.native) == [r.id for r, _ in memory.candidate_pool(QUESTION).items]
    assert trace.vectors == {"store": len(trace.native)} and trace.fallback is None
    native = _memory(path, MemPursuitMemory, policy="native")
    got = native.recall(QUESTION, limit=3, depth="shallow")
    assert list(native.last_trace.final) == [m.record.id for m in got]
    assert native.last_trace.policy == "native"


@pytest.mark.parametrize("bad", [dict(k=0), dict(pool="200"), dict(policy="no-such-policy"),
                                 dict(strict="yes"), dict(policy_options={"no_such_option": 1}),
                                 dict(metadata_keys=["speaker"]), dict(pol1cy="native")])
def test_bad_options_fail_at_construction(path, bad):
    with pytest.raises((TypeError, ValueError, KeyError)):
        _memory(path, MemPursuitMemory, **bad)


def test_a_misspelt_option_names_itself():
    with pytest.raises(TypeError, match="pol1cy= is neither a read option"):
        MemPursuitMemory(pol1cy="native")


def test_the_example_runs_as_written():
    from paraphrase_facts import run_example

    stdout = run_example("crewai_quickstart.py")
    alone, ours = stdout.split("MemPursuitMemory:")
    assert CAT not in alone and CAT in ours


def test_eval_backend_pools_are_crewais_own_read(tmp_path):
    """``mempursuit eval --framework crewai``: units written by ``LanceDBStorage.save`` with the
    harness's vectors, one table per group; the pool is the storage's own top-P, read by
    ``MemPursuitMemory.candidate_pool`` with the stored vectors and the metadata's signals; the
    policy picks from it exactly what the memory's recall keeps; a rerun reopens the store."""
    from mempursuit_eval.backends.crewai import CrewAIBackend
    from mempursuit_eval.runner import build_backend
    from parity import assert_parity, built_pool, harness_order

    backend = build_backend("crewai")
    assert isinstance(backend, CrewAIBackend)
    encoder = get_embedder("minilm", threads=1)
    units, pool, texts = built_pool(backend, encoder, tmp_path, FACTS, QUESTION)
    assert list(pool.signals["speakers"]) == ["alice"] * len(texts)
    by_uid = {u.uid: u for u in units}
    assert list(pool.signals["session_ids"]) == [by_uid[u].session_id for u in pool.items]
    memory = backend._memory("alice")
    alone = Memory(storage=memory._storage, embedder=EMBEDDER).recall(QUESTION, limit=3,
                                                                      depth="shallow")
    assert set(backend.pool("alice", QUESTION, 3).items) == {m.record.metadata["uid"]
                                                            for m in alone}
    order, harness_signals = harness_order(pool, 3)
    recorder = Recorder()
    ours = MemPursuitMemory(storage=memory._storage, embedder=EMBEDDER, policy=recorder)
    got = ours.recall(QUESTION, limit=3, depth="shallow")
    assert {m.record.metadata["uid"] for m in got} == set(order)
    assert_parity(harness_signals, recorder.calls[-1]["signals"])
    again = CrewAIBackend(dataset_signals=True)
    assert again.load_existing(units, embedder=encoder, workdir=tmp_path)  # the saved store
    assert again.pool("alice", QUESTION, 200).items == pool.items
    assert not CrewAIBackend().load_existing(units[:-1], embedder=encoder, workdir=tmp_path)
    backend.close()


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_query_is_crewais_own_recall_with_one_warning(path, blank, caplog):
    """Issue 64: CrewAI's own recall for an empty or blank query (it finds nothing), and one
    warning."""
    alone = _memory(path).recall(blank, limit=2, depth="shallow")
    with caplog.at_level(logging.WARNING):
        ours = _memory(path, MemPursuitMemory).recall(blank, limit=2, depth="shallow")
    assert _same(ours, alone)
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1 and "MemPursuitMemory: the query is" in warned[0], warned
