"""LightMem adapter against a real local Qdrant store, offline.

Part 1 (runs wherever qdrant-client and the packaged MiniLM are installed, i.e. in CI): a Qdrant
collection laid out exactly as LightMem's ``LightMemory.offline_update`` writes it (cosine,
one point per ``MemoryEntry``, vector = embedding of ``entry.memory``, payload = the entry's
fields), built from the LoCoMo-format observations of the project's dialogue fixture
(``tests/fixtures/dialogue.json``, conversation ``dlg-1``), read through a minimal stand-in with LightMem's
``retrieve`` semantics (one ``query_points`` call of ``limit`` hits, formatted
``"time_stamp weekday memory"``).

The same checks against the real ``lightmem`` package are in ``test_lightmem_real.py``.
"""

from __future__ import annotations

import os

os.environ.setdefault("MEMPURSUIT_PLUGINS", "")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import logging

import numpy as np
import pytest

qdrant_client = pytest.importorskip("qdrant_client", reason="needs the [lightmem] extra")
from qdrant_client import QdrantClient  # noqa: E402
from qdrant_client.models import Distance  # noqa: E402

from lightmem_fixtures import (  # noqa: E402,F401  (fixtures are used by name)
    COLLECTION,
    LIGHTMEM_PAYLOAD_KEYS,
    BrokenSelector,
    HFEmbedder,
    LightMemoryLike,
    QdrantRetrieverLike,
    locomo0,
    minilm_path,
    questions,
    sentence_model,
    store,
    write_like_offline_update,
)
from signal_probe import SignalProbe  # noqa: E402
from mempursuit_core import Selector, get_selector, select, testing  # noqa: E402
from mempursuit_lightmem import (  # noqa: E402
    MemPursuitLightMemory,
    StoreDeletionError,
    format_entry,
    protect_qdrant_store,
)


# --------------------------------------------------------------------------------------------
# Part 1: real Qdrant store with LightMem's layout
# --------------------------------------------------------------------------------------------

def test_store_layout_matches_offline_update(store, locomo0):
    client = store.embedding_retriever.client
    info = client.get_collection(COLLECTION)
    params = info.config.params.vectors
    assert params.distance == Distance.COSINE and params.size == 384
    assert client.count(COLLECTION).count == len(locomo0[0])
    point = client.scroll(COLLECTION, limit=1, with_payload=True)[0][0]
    assert list(point.payload) == LIGHTMEM_PAYLOAD_KEYS


@pytest.mark.parametrize("k", [1, 5, 10, 20])
def test_native_policy_is_lightmem_retrieve(store, locomo0, k):
    wrapped = MemPursuitLightMemory(store, policy="native")
    for q in questions(locomo0[1]):
        assert wrapped.retrieve(q, limit=k) == store.retrieve(q, limit=k)


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_query_is_lightmems_retrieve_with_one_warning(store, blank, caplog):
    """Issue 64: LightMem's own retrieve for an empty or blank query, and one warning per read
    (``select`` says why in ``fallback_reason``)."""
    wrapped = MemPursuitLightMemory(store)
    for read, theirs in ((lambda: wrapped.retrieve(blank, 5), store.retrieve(blank, 5)),
                         (lambda: [h["id"] for h in wrapped.select(blank, 5).entries],
                          [h["id"] for h in store.embedding_retriever.search(
                              query_vector=store.text_embedder.embed(blank), limit=5,
                              return_full=True)])):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert read() == theirs and len(theirs) == 5
        warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warned) == 1 and "MemPursuitLightMemory: the query is" in warned[0], warned
    assert wrapped.select(blank, 5).fallback_reason == "the query is empty or blank"

def test_pool_is_native_order_with_stored_vectors(store, locomo0, sentence_model):
    wrapped = MemPursuitLightMemory(store, pool=60)
    q = questions(locomo0[1])[0]
    pool = wrapped.pool(q)
    assert len(pool) == 60 and pool.vectors.shape == (60, 384)
    assert [format_entry(p) for p in pool.payloads] == store.retrieve(q, limit=60)
    assert np.all(np.diff(pool.scores) <= 1e-9)  # descending cosine
    # the stored vectors are the (unit) embeddings of each entry's memory text
    fresh = sentence_model.encode([p["memory"] for p in pool.payloads[:5]],
                                  normalize_embeddings=True)
    assert np.allclose(pool.vectors[:5], fresh, atol=1e-5)
    # the query vector is LightMem's embedding of the query; Qdrant's scores are its cosines
    qv = pool.query_vector / np.linalg.norm(pool.query_vector)
    assert np.allclose(pool.vectors @ qv, pool.scores, atol=1e-5)


@pytest.mark.parametrize("k", [5, 10, 20])
def test_pursuit_reorders_the_same_pool(store, locomo0, k):
    wrapped = MemPursuitLightMemory(store, policy="mempursuit", pool=60)  # the paper's rule
    changed = 0
    for q in questions(locomo0[1]):
        pool = wrapped.pool(q)
        pool_strings = [format_entry(p) for p in pool.payloads]
        got = wrapped.retrieve(q, limit=k)
        assert len(got) == k
        assert set(got) <= set(pool_strings)
        expected = select(pool.query_vector, pool.vectors, k).order
        assert got == [pool_strings[i] for i in expected]
        changed += got != store.retrieve(q, limit=k)
    assert changed > 0, "MemPursuit never changed LightMem's top-K on 12 LoCoMo questions"


def test_return_full_and_selection_details(store, locomo0):
    wrapped = MemPursuitLightMemory(store, pool=30, policy="mempursuit")
    q = questions(locomo0[1])[3]
    full = wrapped.retrieve(q, limit=8, return_full=True)
    assert all(set(h) == {"id", "score", "payload"} for h in full)
    strings = wrapped.retrieve(q, limit=8)
    assert strings == [format_entry(h["payload"]) for h in full]
    details = wrapped.select(q, limit=8)
    assert details.fallback_reason is None and len(details.pool) == 30
    assert [h["id"] for h in details.entries] == [h["id"] for h in full]
    assert details.selection.weights is not None


def test_pool_is_raised_to_the_budget(store, locomo0):
    wrapped = MemPursuitLightMemory(store, pool=7)
    q = questions(locomo0[1])[1]
    got = wrapped.retrieve(q, limit=50)
    assert sorted(got) == sorted(store.retrieve(q, limit=50))


def test_default_policy_budget_and_old_option_names(store, locomo0):
    from mempursuit_core import DEFAULT_POLICY, get_selector
    from mempursuit_core.signals import pool_signals

    wrapped = MemPursuitLightMemory(store)
    assert wrapped.selector.name == DEFAULT_POLICY and wrapped.options.pool == 200
    q = questions(locomo0[1])[2]
    pool = wrapped.pool(q, size=200)
    texts = [str(p.get("memory", "")) for p in pool.payloads]
    want = get_selector(DEFAULT_POLICY).select(
        pool.query_vector, pool.vectors, 10, native_scores=pool.scores,
        signals=pool_signals(texts, q, timestamps=[p.get("time_stamp") for p in pool.payloads]))
    assert wrapped.retrieve(q, limit=10) == [format_entry(pool.payloads[i]) for i in want.order]
    capped = MemPursuitLightMemory(store, k=4)
    assert len(capped.retrieve(q, limit=10)) == 4 and len(capped.retrieve(q, limit=3)) == 3
    with pytest.raises(TypeError, match="pool_size"):  # a name from before 0.1: unknown
        MemPursuitLightMemory(store, pool_size=30)


def test_filters_pass_through(store, locomo0):
    speaker = locomo0[0][0]["speaker_name"]
    q = questions(locomo0[1])[2]
    flt = {"speaker_name": speaker}
    native = MemPursuitLightMemory(store, policy="native")
    assert native.retrieve(q, 10, flt) == store.retrieve(q, 10, flt)
    hits = MemPursuitLightMemory(store).retrieve(q, 10, flt, return_full=True)
    assert len(hits) == 10 and all(h["payload"]["speaker_name"] == speaker for h in hits)
    # range filters on float_time_stamp, LightMem's own filter syntax
    first = min(e["float_time_stamp"] for e in locomo0[0])
    early = MemPursuitLightMemory(store).retrieve(
        q, 5, {"float_time_stamp": {"lte": first}}, return_full=True)
    assert early and all(h["payload"]["float_time_stamp"] <= first for h in early)


def test_native_policy_queries_limit_not_pool_size(store, locomo0):
    """Native is LightMem's own query of ``limit`` hits, whatever ``pool`` is."""
    native = MemPursuitLightMemory(store, policy="native", pool=7, strict=True)
    for q in questions(locomo0[1], 4):
        assert native.retrieve(q, limit=20) == store.retrieve(q, limit=20)
        details = native.select(q, limit=20)
        assert len(details.pool) == 20 and details.fallback_reason is None


def test_fallback_equals_native_with_filters(store, locomo0, caplog):
    speaker = locomo0[0][0]["speaker_name"]
    first = min(e["float_time_stamp"] for e in locomo0[0])
    native = MemPursuitLightMemory(store, policy="native", strict=True)
    broken = MemPursuitLightMemory(store, policy=BrokenSelector())
    with caplog.at_level(logging.WARNING, logger="mempursuit_lightmem"):
        for flt in ({"speaker_name": speaker}, {"float_time_stamp": {"lte": first}}, None):
            for q in questions(locomo0[1], 4):
                for k in (3, 10):
                    assert broken.retrieve(q, k, flt) == native.retrieve(q, k, flt)
                    assert (broken.retrieve(q, k, flt, return_full=True)
                            == native.retrieve(q, k, flt, return_full=True))
                    assert broken.select(q, k, flt).entries == native.select(q, k, flt).entries


@pytest.mark.parametrize("policy, options", [
    ("mempursuit", {"adaptive": True}), ("mmr", {}), ("experimental/pursuit-rank", {}),
    ("experimental/pursuit-joint", {}), ("experimental/pursuit-time", {})])
def test_other_policies(store, locomo0, policy, options):
    wrapped = MemPursuitLightMemory(store, policy=policy, policy_options=options)
    q = questions(locomo0[1])[4]
    pool = [format_entry(p) for p in wrapped.pool(q).payloads]
    got = wrapped.retrieve(q, limit=10)
    assert 1 <= len(got) <= 10 and set(got) <= set(pool)


def test_failure_falls_back_to_native_with_logged_reason(store, locomo0, caplog):
    wrapped = MemPursuitLightMemory(store, policy=BrokenSelector())
    q = questions(locomo0[1])[5]
    with caplog.at_level(logging.WARNING, logger="mempursuit_lightmem"):
        got = wrapped.retrieve(q, limit=10)
    assert got == store.retrieve(q, limit=10)
    assert any("selector exploded" in r.getMessage() and r.levelno == logging.WARNING
               for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="mempursuit_lightmem"):
        full = wrapped.retrieve(q, limit=10, return_full=True)
        details = wrapped.select(q, limit=10)
    assert [format_entry(h["payload"]) for h in full] == got
    assert details.fallback_reason == "RuntimeError: selector exploded"
    assert len([r for r in caplog.records if "selector exploded" in r.getMessage()]) == 2
    with pytest.raises(RuntimeError, match="selector exploded"):
        MemPursuitLightMemory(store, policy=BrokenSelector(), strict=True).retrieve(q, 10)


def test_bad_stored_vector_falls_back(tmp_path, sentence_model, locomo0, caplog):
    """A wrong-dimension query embedder breaks selection, never the answer."""
    client = QdrantClient(path=str(tmp_path / "q"))
    embedder = HFEmbedder(sentence_model)
    write_like_offline_update(client, embedder, locomo0[0][:40])
    memory = LightMemoryLike(embedder, QdrantRetrieverLike(client, COLLECTION))

    class Truncating(Selector):
        name = "dim-mismatch"

        def select(self, query, candidates, k, *, native_scores=None, signals=None):
            return get_selector("mempursuit").select(query[:100], candidates, k)

    with caplog.at_level(logging.WARNING, logger="mempursuit_lightmem"):
        got = MemPursuitLightMemory(memory, policy=Truncating()).retrieve("dog", limit=4)
    assert got == memory.retrieve("dog", limit=4)
    assert any("dimension mismatch" in r.getMessage() for r in caplog.records)
    client.close()


def test_the_conformance_checks_every_adapter_runs(store, locomo0):
    """``mempursuit_core.testing`` (what a plugin's tests run): the option surface, bad options
    refused at construction, ``policy="native"`` is LightMem's own retrieve, a failing policy
    returns it with one warning, ``strict=True`` raises."""
    q = questions(locomo0[1])[5]
    testing.check_adapter(MemPursuitLightMemory,
                          build=lambda **o: MemPursuitLightMemory(store, **o),
                          read=lambda wrapped: wrapped.retrieve(q, limit=10),
                          native=lambda: store.retrieve(q, limit=10))
    # the trace, on the hit dicts (LightMem's own hits for the native order, by id)
    testing.check_trace(lambda **o: MemPursuitLightMemory(store, **o),
                        read=lambda wrapped: wrapped.retrieve(q, limit=10, return_full=True),
                        native=lambda: store.embedding_retriever.search(
                            query_vector=store.text_embedder.embed(q), limit=10,
                            return_full=True),
                        ids=lambda hits: [h["id"] for h in hits])


def test_bad_input_is_an_error_not_a_fallback(store):
    wrapped = MemPursuitLightMemory(store)
    with pytest.raises(ValueError):
        wrapped.retrieve("x", limit=0)
    with pytest.raises(TypeError):
        wrapped.retrieve("x", limit=2.5)
    with pytest.raises(KeyError, match="unknown selector"):
        MemPursuitLightMemory(store, policy="no-such-policy")
    with pytest.raises(ValueError):
        MemPursuitLightMemory(store, pool=0)


def test_wrapper_delegates_everything_else(store):
    wrapped = MemPursuitLightMemory(store)
    assert wrapped.add_memory([]) == "delegated"
    assert wrapped.embedding_retriever is store.embedding_retriever
    assert MemPursuitLightMemory(wrapped).memory is store  # no double wrapping


def test_empty_collection(tmp_path, sentence_model):
    client = QdrantClient(path=str(tmp_path / "empty"))
    embedder = HFEmbedder(sentence_model)
    write_like_offline_update(client, embedder, [])
    memory = LightMemoryLike(embedder, QdrantRetrieverLike(client, COLLECTION))
    assert MemPursuitLightMemory(memory).retrieve("anything", limit=5) == []
    client.close()


# --------------------------------------------------------------------------------------------
# The on_disk guard
# --------------------------------------------------------------------------------------------

def test_store_guard(tmp_path):
    path = tmp_path / "store"
    cfg = {"embedding_retriever": {"model_name": "qdrant",
                                   "configs": {"collection_name": "c", "path": str(path)}}}
    guarded = protect_qdrant_store(cfg)
    assert guarded["embedding_retriever"]["configs"]["on_disk"] is True
    assert "on_disk" not in cfg["embedding_retriever"]["configs"]  # input untouched
    # explicit on_disk=False over an existing store is refused ...
    path.mkdir()
    (path / "meta.json").write_text("{}")
    cfg["embedding_retriever"]["configs"]["on_disk"] = False
    with pytest.raises(StoreDeletionError, match="on_disk=True"):
        protect_qdrant_store(cfg)
    # ... unless asked for; a fresh path or a server store is left alone
    assert protect_qdrant_store(cfg, allow_reset=True)["embedding_retriever"]["configs"][
        "on_disk"] is False
    cfg["embedding_retriever"]["configs"]["path"] = str(tmp_path / "new")
    protect_qdrant_store(cfg)
    server = {"embedding_retriever": {"configs": {"host": "localhost", "port": 6333}}}
    assert "on_disk" not in protect_qdrant_store(server)["embedding_retriever"]["configs"]
    # summary_retriever is guarded too; a config without retrievers passes through
    both = {"summary_retriever": {"configs": {"path": str(path)}}}
    assert protect_qdrant_store(both)["summary_retriever"]["configs"]["on_disk"] is True
    assert protect_qdrant_store({"index_strategy": "embedding"}) == {"index_strategy": "embedding"}


def test_store_guard_on_a_dict_holding_config_objects(tmp_path):
    """``LightMemory.from_config`` takes a dict whose retriever block is a config object.

    Stand-ins with the shape of LightMem's ``EmbeddingRetrieverConfig`` / ``QdrantConfig``
    (pydantic models, ``on_disk`` defaulting to False); the real classes are checked in Part 2.
    """
    from typing import Any, Optional

    from pydantic import BaseModel

    class QdrantConfigLike(BaseModel):
        model_config = {"arbitrary_types_allowed": True}
        collection_name: str = "lightmem"
        client: Optional[Any] = None
        path: Optional[str] = "/tmp/qdrant"
        on_disk: Optional[bool] = False

    class RetrieverConfigLike(BaseModel):
        model_name: str = "qdrant"
        configs: Optional[Any] = None

    path = tmp_path / "store"
    block = RetrieverConfigLike(configs=QdrantConfigLike(path=str(path)))
    cfg = {"index_strategy": "embedding", "embedding_retriever": block}
    guarded = protect_qdrant_store(cfg)
    assert isinstance(guarded, dict) and guarded["index_strategy"] == "embedding"
    assert guarded["embedding_retriever"].configs.on_disk is True
    assert cfg["embedding_retriever"] is block and block.configs.on_disk is False  # untouched
    # an explicit on_disk=False over an existing store is refused in this shape too
    path.mkdir()
    (path / "meta.json").write_text("{}")
    explicit = {"embedding_retriever": RetrieverConfigLike(
        configs=QdrantConfigLike(path=str(path), on_disk=False))}
    with pytest.raises(StoreDeletionError):
        protect_qdrant_store(explicit)
    assert protect_qdrant_store(explicit, allow_reset=True)[
        "embedding_retriever"].configs.on_disk is False
    # a config-object block in a dict, for a non-Qdrant store, passes through as it is
    other = {"embedding_retriever": RetrieverConfigLike(model_name="chroma")}
    assert protect_qdrant_store(other)["embedding_retriever"] is other["embedding_retriever"]


def test_guarded_from_config_reopens_a_stand_in_store(tmp_path, monkeypatch, sentence_model,
                                                      locomo0):
    """``from_config`` keeps the store, where the real LightMem is not installed.

    ``lightmem.memory.lightmem`` is replaced by a stand-in whose ``LightMemory.from_config``
    opens the store as LightMem's ``Qdrant.__init__`` does: ``rmtree(path)`` unless ``on_disk``.
    (Part 2 runs the same check on the real LightMem.)
    """
    import shutil
    import sys
    import types

    embedder = HFEmbedder(sentence_model)

    class LightMemoryStandIn(LightMemoryLike):
        @classmethod
        def from_config(cls, config):
            cfg = config["embedding_retriever"]["configs"]
            if not cfg.get("on_disk") and os.path.isdir(cfg["path"]):
                shutil.rmtree(cfg["path"])
            client = QdrantClient(path=cfg["path"])
            return cls(embedder, QdrantRetrieverLike(client, cfg["collection_name"]))

    module = types.ModuleType("lightmem.memory.lightmem")
    module.LightMemory = LightMemoryStandIn
    monkeypatch.setitem(sys.modules, "lightmem.memory.lightmem", module)

    path = str(tmp_path / "store")
    config = {"embedding_retriever": {"model_name": "qdrant",
                                      "configs": {"collection_name": COLLECTION, "path": path}}}
    first = MemPursuitLightMemory.from_config(config, policy="native")
    assert isinstance(first.memory, LightMemoryStandIn)
    write_like_offline_update(first.embedding_retriever.client, embedder, locomo0[0][:60])
    reads = [(q, k) for q in questions(locomo0[1], 4) for k in (5, 10)]
    before = [first.retrieve(q, k) for q, k in reads]
    pursuit_before = [MemPursuitLightMemory(first).retrieve(q, k) for q, k in reads]
    stored = first.embedding_retriever.client.scroll(COLLECTION, limit=100, with_payload=True)[0]
    ids = sorted(str(p.id) for p in stored)
    first.embedding_retriever.client.close()

    again = MemPursuitLightMemory.from_config(config, policy="native")
    client = again.embedding_retriever.client
    points = client.scroll(COLLECTION, limit=100, with_payload=True)[0]
    assert sorted(str(p.id) for p in points) == ids
    assert ({str(p.id): p.payload for p in points}
            == {str(p.id): p.payload for p in stored})
    assert [again.retrieve(q, k) for q, k in reads] == before
    assert [MemPursuitLightMemory(again).retrieve(q, k) for q, k in reads] == pursuit_before
    client.close()
    assert "on_disk" not in config["embedding_retriever"]["configs"]  # config untouched
    # explicit on_disk=False over the store is refused before anything opens it
    config["embedding_retriever"]["configs"]["on_disk"] = False
    with pytest.raises(StoreDeletionError):
        MemPursuitLightMemory.from_config(config)
    assert os.listdir(path)
    # the stand-in's own from_config (LightMem's behaviour) deletes it
    unguarded = LightMemoryStandIn.from_config(config)
    assert not unguarded.embedding_retriever.client.collection_exists(COLLECTION)
    unguarded.embedding_retriever.client.close()


def test_policies_get_lexical_and_time_signals(store, locomo0):
    q = questions(locomo0[1])[4]
    probe = SignalProbe()
    got = MemPursuitLightMemory(store, policy=probe, strict=True).retrieve(q, limit=10)
    probe.assert_saw_signals(len(got), 10)


