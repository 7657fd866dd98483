"""MemoryBank adapter against a real FAISS index (``faiss-cpu``), offline.

MemoryBank itself is not installable; ``test_matches_memorybank_own_code`` compares with digests
of what MemoryBank's own read path (``memory_bank/memory_retrieval/local_doc_qa.py`` under
``langchain==0.0.146``, as its ``requirement.txt`` pins) returned for the same documents and
vectors: the digests were produced once, outside this repository, by running its
``JsonMemoryLoader.load`` + ``FAISS.from_documents`` + its patched
``similarity_search_with_score_by_vector`` + ``LocalMemoryRetrieval.search_memory`` with the
deterministic ``hash_vec`` embedder below on the summary-augmented sample users built by
``augment``. Everything else uses either that embedder (fast, exact) or the packaged MiniLM.

Data: the project's own MemoryBank-format files in ``tests/fixtures/memorybank`` (invented users,
laid out and named like MemoryBank's sample files), so the module runs on a fresh clone. Only the
tests in ``SAMPLE_ONLY`` read MemoryBank's published sample (``MEMPURSUIT_MEMORYBANK_DATA``, else
``../shared/data/memorybank``) and skip, with the reason, when it is absent.
"""

import hashlib
import json
import os
import shutil
import warnings
from pathlib import Path

os.environ.setdefault("MEMPURSUIT_PLUGINS", "")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import pytest

faiss = pytest.importorskip("faiss", reason='needs the [memorybank] extra (faiss-cpu)')

from mempursuit_core import select  # noqa: E402
from mempursuit_core.selectors import NativeSelector  # noqa: E402
from mempursuit_core.plugins import UnknownNameError, load_adapter  # noqa: E402
from mempursuit_memorybank import (  # noqa: E402
    MemoryBankFormatError,
    MemoryBankStore,
    UnknownUserError,
    default_index_dir,
    read_from_seeds,
    read_user,
)

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "fixtures" / "memorybank"
EN_FILE, CN_FILE, PROBES = DATA / "memory_bank_en.json", DATA / "memory_bank_cn.json", DATA / "probing_en.jsonl"
SAMPLE = Path(os.environ.get("MEMPURSUIT_MEMORYBANK_DATA", ROOT.parent / "shared/data/memorybank"))
SAMPLE_EN, SAMPLE_CN = SAMPLE / "memory_bank_en.json", SAMPLE / "memory_bank_cn.json"
#: Tests that check MemoryBank's published sample files themselves (digests of MemoryBank's own
#: output on them, a hand-checked answer from them).
SAMPLE_ONLY = {"test_matches_memorybank_own_code", "test_hand_checked_probe"}


@pytest.fixture(autouse=True)
def _data(request):
    if request.node.originalname in SAMPLE_ONLY and not (SAMPLE_EN.exists() and SAMPLE_CN.exists()):
        pytest.skip(f"checks MemoryBank's published sample files, not found in {SAMPLE} "
                    "(set MEMPURSUIT_MEMORYBANK_DATA)")


def hash_vec(text, d=32):
    """A deterministic unit vector from a text's SHA-256 (version-independent, no model)."""
    buf = b""
    i = 0
    while len(buf) < d:
        buf += hashlib.sha256(f"{i}:{text}".encode("utf-8")).digest()
        i += 1
    v = np.frombuffer(buf[:d], dtype=np.uint8).astype(np.float32) / np.float32(255.0) - np.float32(0.5)
    return (v / np.linalg.norm(v)).astype(np.float32)


class HashEmbedder:
    name = "hash32"
    dim = 32

    def __init__(self):
        self.calls = []

    def encode(self, texts):
        self.calls.append(len(texts))
        return np.stack([hash_vec(t) for t in texts]) if texts else np.zeros((0, 32), np.float32)


def augment(data, users):
    """Sample users with daily summaries (dict and string), an orphan summary and overall fields."""
    data = json.loads(json.dumps(data))
    for u in users:
        m = data[u]
        dates = list(m["history"])
        m["summary"] = {}
        for j, d in enumerate(dates[:6]):
            m["summary"][d] = {"content": f"Day {j}: talk about 'films' and tea."} if j % 2 == 0 else f"Day {j} summary"
        m["summary"]["2099-01-01"] = "orphan"
        m["overall_history"] = "past"
        m["overall_personality"] = "kind"
    return {u: data[u] for u in users}


def digest(memos, dates):
    return hashlib.sha1(json.dumps([list(memos), dates], ensure_ascii=False).encode("utf-8")).hexdigest()[:10]


def load(path):
    return json.loads(Path(path).read_text(encoding="utf-8"))


def hash_store(data, user, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the orphan summary
        return MemoryBankStore.from_memory(data, user, embedder=HashEmbedder(), **kw)


# MemoryBank's own output (see the module docstring): per user, the number of documents and one
# digest per (query in q0..q5) x (k in 1, 2, 3, 5, 8), in that order.
GOLDEN = {
    "Emily": (55, "cfc6115a8a 54949291d2 eb1a7ea3b8 75efb80b55 4604abb97a 0ed5eb6bfa 40b41b8368 4d42b8f2d8 "
                  "f1b6d95c98 ec13f73cb4 f14cdedb02 1f4f30524e 6811023ed1 995a7f2fe9 0d40ab879b 382c92fb28 "
                  "cfa2a33ae5 dc99cbc03a 88b001e19e e1979cb6d1 3d7073237c d14bfb7a16 c463e363bf 7a839d19c6 "
                  "a550a52308 4757544c78 aa12387e8e e4fb8afe9b 27ca17eeab 3cf317ffee"),
    " Jason ": (49, "d8d5b56fb4 61864e4a89 35fa7ce431 67e03cba09 25796315f2 fef74494fc c04caea299 b7a18ab260 "
                    "1510894dba 77403c4347 7557cb76ee a045c06b7d 66bbbd3e98 e7d39e4680 9305de3710 4499c363a7 "
                    "46d5d0467a 357c5bf667 8dc0675790 53740d198d 4a6b70d626 ca29205cf4 090bc37dad cebed3ce78 "
                    "2dfb6fcf10 b9f2c1da7c 6c9b0d27cc a58e02c018 43d2147bed eed18b3be4"),
    "张曼婷": (55, "b2dad4115f 0f1e4ff49c 06ee3542a9 a73eeafc11 43eb7334e4 21f4e5aea3 a72de1a3b1 5c9659902d "
                  "9fd0b27883 3ee2c48876 ba2bf91bc3 9492abc4fa c4dc9c847a 564b61909e bfad072351 af4ba619b9 "
                  "7abda0985c 7b804c67ad a735affb2e 3dfed08c2d cc9357fc08 096077695b ea171b5f69 349bc1fdc4 "
                  "76d208ce5a aa4869ed7c a10c5e4427 8a1ccb537a bfc8e8a41f 1a8a97a261"),
    "王峰": (58, "5e6d1ac85f a8797a1ba7 9b98f07574 dc3cb468f9 eb316fd7e6 dbfe466d32 3c9a60537c 4bc0a65e6d "
                "a4687960f7 44d5b9195e 7cfac0ce76 f68621f694 b23ed89c4b 5ad6eef255 507211e931 46997c8dfe "
                "e70e5a4a6c 21b5e1bcff a90552cd2e 2ffccc289b dbfe466d32 7d21f57cb5 d03fc30a90 8d817c5aea "
                "ffd989b3b9 c8b7b38c6c af67587c47 35d15662ae 3db60b1668 e8188617f2"),
}
QUERIES = [f"q{i}" for i in range(6)]
KS = (1, 2, 3, 5, 8)


@pytest.mark.parametrize("user", list(GOLDEN))
def test_matches_memorybank_own_code(user):
    lang, path = ("cn", SAMPLE_CN) if user in ("张曼婷", "王峰") else ("en", SAMPLE_EN)
    users = [u for u in GOLDEN if (u in ("张曼婷", "王峰")) == (lang == "cn")]
    store = hash_store(augment(load(path), users), user)  # language detected: "auto"
    assert store.language == lang
    n_docs, digests = GOLDEN[user]
    assert len(store) == n_docs
    assert store.unindexed_summaries == ["2099-01-01"]
    got = [digest(*store.read(q, k, policy="native").as_memorybank()) for q in QUERIES for k in KS]
    assert got == digests.split()


# ------------------------------------------------------------------------------ real MiniLM
@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("onnxruntime", reason='needs the [memorybank] extra (packaged MiniLM, onnxruntime)')
    from mempursuit_core.embed import get_embedder

    return get_embedder(threads=1)


@pytest.fixture(scope="module")
def emily(minilm):
    return MemoryBankStore.open(EN_FILE, "Emily", embedder=minilm, persist=False)


@pytest.fixture(scope="module")
def sample_emily(minilm):
    if not SAMPLE_EN.exists():  # module scope: set up before the autouse skip above runs
        pytest.skip(f"checks MemoryBank's published sample files, not found in {SAMPLE} "
                    "(set MEMPURSUIT_MEMORYBANK_DATA)")
    return MemoryBankStore.open(SAMPLE_EN, "Emily", embedder=minilm, persist=False)


def probes(user):
    for line in PROBES.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if user in row:
            return row[user]
    return []


def test_native_seeds_are_faiss_l2_top_k(emily):
    vectors = emily.vectors().astype(np.float64)
    assert vectors.shape == (49, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)  # MiniLM: L2 order == cosine order
    for q in probes("Emily"):
        qv = emily.embed_query(q).astype(np.float64)
        d2 = ((vectors - qv) ** 2).sum(axis=1)
        for k in (1, 2, 5):
            res = emily.read(q, k, policy="native")
            assert list(res.seeds) == list(np.argsort(d2, kind="stable")[:k])
            assert np.allclose(res.seed_distances, d2[list(res.seeds)], atol=1e-4)


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_query_is_memorybanks_own_read_with_one_warning(emily, blank, caplog):
    """Issue 64: MemoryBank's own top-k seeds for an empty or blank query, and one warning."""
    import logging

    native = emily.read(blank, 3, policy="native")
    with caplog.at_level(logging.WARNING):
        ours = emily.read(blank, 3)
    assert ours.policy == "native" and list(ours.seeds) == list(native.seeds)
    assert len(ours.seeds) == 3 and ours.pieces == native.pieces
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1 and "MemoryBankStore: the query is" in warned[0], warned

def test_hand_checked_probe(sample_emily):
    emily = sample_emily
    res = emily.read("I recommended a science fiction movie before, what was it?", k=2,
                     policy="native")
    assert "The Wandering Earth" in emily.documents[res.seeds[0]].text
    assert "2023-04-30" in res.dates
    # English turns are longer than the 200-character budget: nothing is added around the seeds
    assert res.expanded == tuple(sorted(res.seeds))
    assert res.related_memos[0].startswith("Conversation content on 2023-04-30:[|User|]:")


@pytest.mark.parametrize("k", [1, 3, 10])
def test_pursuit_changes_only_the_seeds(emily, k):
    for q in probes("Emily"):
        native = emily.read(q, k, policy="native")
        via_native_selector = emily.read(q, k, policy=NativeSelector())
        assert via_native_selector.seeds == native.seeds
        assert via_native_selector.related_memos == native.related_memos
        pursuit = emily.read(q, k, policy="mempursuit")
        assert pursuit.policy == "mempursuit" and len(pursuit.seeds) == min(k, len(emily))  # K counts seeds
        assert pursuit.seeds[0] == native.seeds[0]  # the first pick is the best match
        assert set(pursuit.seeds) <= set(pursuit.pool)
        assert pursuit.pool[: len(native.seeds)] == native.seeds  # pool = native top-P in order
        # everything after the seeds is the native procedure
        again = read_from_seeds(pursuit.seeds, [d.text for d in emily.documents],
                                [d.date for d in emily.documents], emily.resident())
        assert (again.expanded, again.runs, again.related_memos, again.dates) == (
            pursuit.expanded, pursuit.runs, pursuit.related_memos, pursuit.dates)
        # the selector saw the stored vectors of the pool, normalised
        pool_vecs = emily.vectors(pursuit.pool)
        expected = select(emily.embed_query(q), pool_vecs / np.linalg.norm(pool_vecs, axis=1, keepdims=True), k)
        assert [pursuit.pool[i] for i in expected.order] == list(pursuit.seeds)


def test_pool_size_and_other_selectors(emily):
    q = probes("Emily")[0]
    small = emily.read(q, 3, policy="mempursuit", pool=5)
    assert len(small.pool) == 5 and set(small.seeds) <= set(small.pool)
    assert len(emily.read(q, 3, policy="mmr").seeds) == 3
    adaptive = emily.read(q, 20, policy="mempursuit", policy_options={"adaptive": True})
    assert 1 <= len(adaptive.seeds) <= 20
    with pytest.raises(UnknownNameError, match="unknown selector 'nope'"):
        emily.read(q, 2, policy="nope")
    # MemoryBank keeps no keyword index: the default policy scores the pool's own texts
    center = emily.read(q, 5, policy="centered-fusion")
    assert center.selection.info["lexical"] == "pool" and len(center.seeds) == 5


def test_default_policy_fallback_and_old_option_names(emily, caplog):
    from mempursuit_core import DEFAULT_POLICY, get_selector

    q = probes("Emily")[1]
    res = emily.read(q, 4)
    assert res.policy == DEFAULT_POLICY and len(res.seeds) == 4
    from mempursuit_core.signals import pool_signals

    pool_vecs = emily.vectors(res.pool)
    docs = emily.documents
    want = get_selector(DEFAULT_POLICY).select(
        emily.embed_query(q), pool_vecs / np.linalg.norm(pool_vecs, axis=1, keepdims=True), 4,
        signals=pool_signals([docs[i].text for i in res.pool], emily._query_text(q),
                             timestamps=[docs[i].date for i in res.pool]))
    assert list(res.seeds) == [res.pool[i] for i in want.order]
    trace = emily.last_trace  # the read's trace: documents by position
    assert trace.final == res.seeds and trace.native == res.pool and trace.fallback is None
    assert trace.vectors == {"store": len(res.pool)} and trace.policy == DEFAULT_POLICY
    other = emily.read(q, 3, policy="mempursuit", pool=5)
    assert other.policy == "mempursuit" and len(other.pool) == 5

    class Broken(NativeSelector):
        def select(self, *a, **kw):
            raise RuntimeError("boom")

    with caplog.at_level("WARNING"):
        fell_back = emily.read(q, 3, policy=Broken())
    assert "boom" in caplog.text and fell_back.seeds == emily.read(q, 3, policy="native").seeds
    assert emily.last_trace.final == fell_back.seeds and emily.last_trace.policy == "native"
    emily.read(q, 3, policy=Broken())
    assert "boom" in emily.last_trace.fallback and emily.last_trace.final == fell_back.seeds
    with pytest.raises(RuntimeError, match="boom"):
        emily.read(q, 3, policy=Broken(), strict=True)
    strict_store = MemoryBankStore.from_memory(emily.memory, embedder=emily.embedder, strict=True,
                                               policy="mmr")
    assert strict_store.read(q, 3).policy == "mmr"


def test_pursuit_reads_vectors_from_the_index_not_the_embedder():
    emb = HashEmbedder()
    store = MemoryBankStore.from_memory(load(EN_FILE), "Emily", embedder=emb)
    emb.calls.clear()
    store.read("q0", 4, policy="mempursuit")
    assert emb.calls == [1]  # only the query was embedded


# ------------------------------------------------------------------------------ appends
def _strip_for_append(user_obj):
    """A shorter memory plus the appends that complete it (turns at the end of existing dates,
    a new date, summaries of earlier dates)."""
    part = json.loads(json.dumps(user_obj))
    dates = list(part["history"])
    turn_appends = [(dates[2], *part["history"][dates[2]].pop().values())]
    last = part["history"].pop(dates[-1])
    turn_appends += [(dates[-1], t["query"], t["response"]) for t in last]
    summary_appends = [(d, part["summary"].pop(d)) for d in dates[:3]]
    return part, turn_appends, summary_appends


@pytest.mark.parametrize("window", ["literal", "full"])
def test_incremental_append_equals_full_rebuild(window):
    full_data = augment(load(CN_FILE), ["王峰"])["王峰"]
    full = hash_store(full_data, "王峰", window=window)
    part_data, turns, summaries = _strip_for_append(full_data)
    inc = hash_store(part_data, "王峰", window=window)
    first = inc.embedded_count
    inc.add_turns(turns)
    for date, value in summaries:
        inc.add_summary(date, value)
    # only the new documents were embedded, each once
    assert inc.embedded_count - first == len(turns) + len(summaries)
    assert inc.status == "built" and len(inc._stored) == len(inc)
    assert list(inc._fids) != sorted(inc._fids)  # FAISS ids are in insertion order, not position order
    assert [(d.key, d.text) for d in inc.documents] == [(d.key, d.text) for d in full.documents]
    assert np.array_equal(inc.vectors(), full.vectors())
    for q in QUERIES:
        for k in KS:
            a, b = inc.read(q, k), full.read(q, k)
            assert (a.seeds, a.related_memos, a.dates) == (b.seeds, b.related_memos, b.dates)
            p, r = inc.read(q, k, policy="mempursuit"), full.read(q, k, policy="mempursuit")
            assert (p.seeds, p.related_memos) == (r.seeds, r.related_memos)


def test_add_summary_rules_and_compaction():
    store = hash_store(augment(load(EN_FILE), ["Emily"]), "Emily")
    date = list(store.memory.history)[0]
    n, count = len(store), store.embedded_count
    with pytest.raises(ValueError, match="already has a summary; pass replace=True"):
        store.add_summary(date, "again")
    store.add_summary(date, {"content": "replaced"}, replace=True)
    assert store.embedded_count == count + 1 and len(store) == n and store._index.ntotal == n
    assert store.documents[[d.key for d in store.documents].index((date, "summary", 0))].text.endswith(
        "is: {'content': 'replaced'}")
    with pytest.raises(MemoryBankFormatError, match="a summary object needs a string 'content'"):
        store.add_summary("2023-05-01", {"text": "x"}, replace=True)
    with pytest.raises(TypeError, match=r"turns\[0\] must be a \(date, query, response\)"):
        store.add_turns([("2023-05-01", "only query")])
    store.add_turn("hello", "hi")  # today's date, a new date at the end
    assert store.documents[-1].kind == "turn" and len(store) == n + 1


def test_empty_user_then_first_turn():
    store = MemoryBankStore.from_memory({"Zed": {"name": "Zed"}}, "Zed", embedder=HashEmbedder())
    assert len(store) == 0
    res = store.read("anything", 2)
    assert res.related_memos == () and res.memo_dates == "" and not res.uses_memory_prompt
    assert store.read("anything", 2, policy="mempursuit").seeds == ()
    store.add_turn("I like tea", "Noted", date="2023-06-01")
    assert store.read("tea", 2).related_memos == ("Conversation content on 2023-06-01:[|User|]: I like tea; [|AI|]: Noted",)


def test_chinese_output_loses_its_own_prefix():
    store = hash_store(load(CN_FILE), "张曼婷")
    for q in QUERIES:
        res = store.read(q, 5)
        for piece in res.pieces:
            assert f"时间{piece.date}的对话内容：" not in piece.text


# ------------------------------------------------------------------------------ persistence
def test_index_persisted_beside_the_file_and_reloaded(tmp_path):
    path = tmp_path / "memory.json"
    shutil.copy(EN_FILE, path)
    original = path.read_bytes()
    store = MemoryBankStore.open(path, "Emily", embedder=HashEmbedder())
    folder = default_index_dir(path, "Emily")
    assert store.status == "built" and store.index_dir == folder
    assert folder.parent == tmp_path / "memory.json.mempursuit"
    assert sorted(p.name for p in folder.iterdir()) == ["index.faiss", "manifest.json"]
    res = store.read("q1", 3)

    again = MemoryBankStore.open(path, "Emily", embedder=HashEmbedder())
    assert again.status == "loaded" and again.embedded_count == 0
    assert again.read("q1", 3) == res

    # reads and appends never touch the memory file
    again.add_turn("new query", "new answer", date="2023-05-06")
    assert path.read_bytes() == original

    # the file gains a turn elsewhere: the next open embeds only that document
    data = load(path)
    data["Emily"]["history"]["2023-05-07"] = [{"query": "later", "response": "ok"}]
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    third = MemoryBankStore.open(path, "Emily", embedder=HashEmbedder())
    assert third.status == "loaded, 1 new documents embedded" and third.embedded_count == 1
    fresh = MemoryBankStore.open(path, "Emily", embedder=HashEmbedder(), persist=False)
    assert fresh.embedded_count == len(fresh) == len(third)
    assert third.read("q2", 4) == fresh.read("q2", 4)

    # a different embedder (or options) rebuilds
    class Other(HashEmbedder):
        name = "other"

    assert MemoryBankStore.open(path, "Emily", embedder=Other()).status == "rebuilt: embedder changed"
    assert MemoryBankStore.open(path, "Emily", embedder=Other(), rebuild=True).embedded_count == len(fresh)

    # written back only when asked, other users kept
    third.add_turn("saved query", "saved answer", date="2023-05-07")
    third.save_memory()
    saved = load(path)
    assert saved["Emily"]["history"]["2023-05-07"][-1] == {"query": "saved query", "response": "saved answer"}
    assert saved["Frank"] == load(EN_FILE)["Frank"]


class Hash16(HashEmbedder):
    """Same name as ``HashEmbedder``, another dimension."""

    dim = 16

    def encode(self, texts):
        return np.stack([hash_vec(t, 16) for t in texts]) if texts else np.zeros((0, 16), np.float32)


def _edit_manifest(folder, edit, keep_checksum=True):
    path = folder / "manifest.json"
    manifest = load(path)
    manifest = edit(manifest)
    if isinstance(manifest, dict) and not keep_checksum:
        manifest.pop("index_sha256", None)
    path.write_text(json.dumps(manifest), encoding="utf-8")


def _set_doc(i, value):
    def edit(m):
        m["documents"][i] = value
        return m
    return edit


def _nan_index(folder):
    index = faiss.read_index(str(folder / "index.faiss"))
    vecs = index.reconstruct_n(0, index.ntotal)
    vecs[3, 0] = np.nan
    bad = faiss.IndexFlatL2(index.d)
    bad.add(vecs)
    faiss.write_index(bad, str(folder / "index.faiss"))
    _edit_manifest(folder, lambda m: {**m, "index_sha256": hashlib.sha256(
        (folder / "index.faiss").read_bytes()).hexdigest()})


def _truncate(folder, keep_checksum=True):
    index = folder / "index.faiss"
    index.write_bytes(index.read_bytes()[: index.stat().st_size // 2])
    if not keep_checksum:
        _edit_manifest(folder, lambda m: m, keep_checksum=False)


def _random(folder, keep_checksum=True):
    index = folder / "index.faiss"
    index.write_bytes(np.random.default_rng(0).bytes(index.stat().st_size))
    if not keep_checksum:
        _edit_manifest(folder, lambda m: m, keep_checksum=False)


def _foreign_index(folder):
    """Another index of the same shape (rows in reverse order) beside a checksum-less manifest:
    it loads without error, so only the checksum can tell."""
    index = faiss.read_index(str(folder / "index.faiss"))
    other = faiss.IndexFlatL2(index.d)
    other.add(np.ascontiguousarray(index.reconstruct_n(0, index.ntotal)[::-1]))
    faiss.write_index(other, str(folder / "index.faiss"))
    _edit_manifest(folder, lambda m: m, keep_checksum=False)


def _file_to_folder(path):
    path.unlink()
    (path / "inside").mkdir(parents=True)


DAMAGE = {
    # name: (damage(folder), words the warning names)
    "truncated index": (_truncate, "SHA-256 differs"),
    "truncated index, old manifest without checksum": (
        lambda f: _truncate(f, keep_checksum=False), "manifest.json has no 'index_sha256'"),
    "random-bytes index": (_random, "SHA-256 differs"),
    "random-bytes index, old manifest without checksum": (
        lambda f: _random(f, keep_checksum=False), "manifest.json has no 'index_sha256'"),
    "empty index": (lambda f: (f / "index.faiss").write_bytes(b""), "SHA-256 differs"),
    "empty index, old manifest without checksum": (
        lambda f: ((f / "index.faiss").write_bytes(b""), _edit_manifest(f, lambda m: m, keep_checksum=False)),
        "manifest.json has no 'index_sha256'"),
    "foreign index of the same shape, manifest without checksum": (
        _foreign_index, "manifest.json has no 'index_sha256'"),
    "manifest.json is a folder": (lambda f: _file_to_folder(f / "manifest.json"),
                                  "manifest.json is a folder, not a file"),
    "index.faiss is a folder": (lambda f: _file_to_folder(f / "index.faiss"),
                                "index.faiss is a folder, not a file"),
    "index missing": (lambda f: (f / "index.faiss").unlink(), "only manifest.json is there"),
    "manifest not JSON": (lambda f: (f / "manifest.json").write_text("{", encoding="utf-8"),
                          "manifest.json is unreadable"),
    "manifest is a list": (lambda f: (f / "manifest.json").write_text("[]", encoding="utf-8"),
                           "manifest.json holds a JSON list, not an object"),
    "documents not a list": (lambda f: _edit_manifest(f, lambda m: {**m, "documents": "x"}),
                             "'documents' must be a list, got str"),
    "document of two items": (lambda f: _edit_manifest(f, _set_doc(0, [["2023-04-27", "turn", 0], "t"])),
                              r"documents[0] must be a [key, text, date] list"),
    "unhashable document key": (lambda f: _edit_manifest(f, _set_doc(1, [["d", ["turn"], 0], "t", "d"])),
                                "documents[1] has a malformed key"),
    "document text not a string": (lambda f: _edit_manifest(f, _set_doc(2, [["d", "turn", 0], 5, "d"])),
                                   "documents[2] needs a string text and date"),
    "bad dim": (lambda f: _edit_manifest(f, lambda m: {**m, "dim": "32"}), "'dim' must be a positive int"),
    "fewer documents than vectors": (lambda f: _edit_manifest(f, lambda m: {**m, "documents": m["documents"][:-1]}),
                                     "manifest.json 48 documents of dimension 32"),
    "non-finite vectors": (_nan_index, "non-finite vectors"),
    # issue 47: a document's text edited in place, every shape intact (the index checks pass)
    "edited document text": (lambda f: _edit_manifest(f, lambda m: {**m, "documents": [
        [d[0], d[1] + " (edited)", d[2]] if i == 0 else d for i, d in enumerate(m["documents"])]}),
        "manifest.json's documents were edited"),
    "manifest without documents_sha256": (
        lambda f: _edit_manifest(f, lambda m: {k: v for k, v in m.items() if k != "documents_sha256"}),
        "manifest.json has no 'documents_sha256'"),
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_damaged_index_folder_is_rebuilt_with_one_warning(tmp_path, caplog, case):
    path = tmp_path / "memory.json"
    shutil.copy(EN_FILE, path)
    folder = MemoryBankStore.open(path, "Emily", embedder=HashEmbedder()).index_dir
    damage, words = DAMAGE[case]
    damage(folder)
    with caplog.at_level("INFO", logger="mempursuit_memorybank.store"):
        store = MemoryBankStore.open(path, "Emily", embedder=HashEmbedder())
    records = [r for r in caplog.records if r.name == "mempursuit_memorybank.store"]
    assert len(records) == 1 and records[0].levelname == "WARNING"
    message = records[0].getMessage()
    assert str(folder) in message and words in message and "\n" not in message
    assert store.status.startswith("rebuilt: ") and words in store.status
    fresh = MemoryBankStore.open(path, "Emily", embedder=HashEmbedder(), persist=False)
    assert store.embedded_count == len(fresh) == len(store)
    for q in QUERIES[:3]:
        assert store.read(q, 3) == fresh.read(q, 3)
        assert store.read(q, 3, policy="mempursuit") == fresh.read(q, 3, policy="mempursuit")
    assert MemoryBankStore.open(path, "Emily", embedder=HashEmbedder()).status == "loaded"  # repaired


def test_index_folder_path_that_is_a_file_is_built_in_memory_and_left_alone(tmp_path, caplog):
    path = tmp_path / "memory.json"
    shutil.copy(EN_FILE, path)
    blocker = tmp_path / "index-here"
    blocker.write_text("not an index folder")
    with caplog.at_level("WARNING", logger="mempursuit_memorybank.store"):
        store = MemoryBankStore.open(path, "Emily", embedder=HashEmbedder(), index_dir=blocker)
    (record,) = caplog.records
    assert str(blocker) in record.getMessage() and "path is a file" in record.getMessage()
    assert store.status.startswith("rebuilt: ") and blocker.read_text() == "not an index folder"
    fresh = MemoryBankStore.open(path, "Emily", embedder=HashEmbedder(), persist=False)
    assert store.read("q1", 3) == fresh.read("q1", 3) and len(store) == len(fresh)


def test_a_name_that_is_not_a_string_is_refused(tmp_path):
    data = load(EN_FILE)
    data["Emily"]["name"] = 5
    path = tmp_path / "memory.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(MemoryBankFormatError, match=r"memory.json.*Emily.*'name' must be a string, got int"):
        MemoryBankStore.open(path, "Emily", embedder=HashEmbedder(), persist=False)


def test_index_of_another_dimension_under_the_same_embedder_name_is_rebuilt(tmp_path, caplog):
    path = tmp_path / "memory.json"
    shutil.copy(EN_FILE, path)
    assert MemoryBankStore.open(path, "Emily", embedder=Hash16()).dim == 16
    with caplog.at_level("WARNING", logger="mempursuit_memorybank.store"):
        store = MemoryBankStore.open(path, "Emily", embedder=HashEmbedder())  # both named "hash32"
    assert [r.getMessage() for r in caplog.records] == [
        f"MemoryBank index in {store.index_dir} not used (the index has dimension 16, embedder 'hash32' "
        f"gives 32); rebuilding it"]
    fresh = MemoryBankStore.open(path, "Emily", embedder=HashEmbedder(), persist=False)
    assert store.dim == 32 and store.read("q1", 3) == fresh.read("q1", 3)
    store.add_turn("after", "ok", date="2023-05-09")  # appends work on the rebuilt index
    assert len(store) == len(fresh) + 1


def test_open_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        MemoryBankStore.open(tmp_path / "none.json", "Emily", embedder=HashEmbedder())
    with pytest.raises(UnknownUserError, match="'Nobody' is not in .*memory_bank_en.json"):
        MemoryBankStore.open(EN_FILE, "Nobody", embedder=HashEmbedder(), persist=False)
    with pytest.raises(TypeError, match="user must be a str .* got int 123"):
        MemoryBankStore.open(EN_FILE, 123, embedder=HashEmbedder(), persist=False)
    with pytest.raises(TypeError, match="user must be a str .* got int 123"):
        MemoryBankStore.from_memory(load(EN_FILE), 123, embedder=HashEmbedder())
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OSError, match="cannot create the index folder .*pass index_dir=... or persist=False"):
        MemoryBankStore.open(EN_FILE, "Emily", embedder=HashEmbedder(), index_dir=blocker / "idx")
    store = MemoryBankStore.open(EN_FILE, " Jason ", embedder=HashEmbedder(), persist=False)
    with pytest.raises(ValueError, match="k must be >= 1"):
        store.read("q", 0)
    with pytest.raises(ValueError, match="query vector has dimension 3, the index 32"):
        store.read_vector(np.ones(3), 2)
    with pytest.raises(ValueError, match="window must be 'literal' or 'full'"):
        MemoryBankStore.from_memory(load(EN_FILE), "Emily", embedder=HashEmbedder(), window="wide")

    class Broken:
        def encode(self, texts):
            return np.zeros((len(texts) + 1, 4), np.float32)

    with pytest.raises(ValueError, match=r"returned shape \(2, 4\) for 1 texts; expected \(n, d\)"):
        MemoryBankStore.from_memory(load(EN_FILE), "Emily", embedder=Broken())


def test_adapter_registered_and_loadable():
    module = load_adapter("memorybank")
    assert module.MemoryBankStore is MemoryBankStore
    assert read_user(EN_FILE, "Jason").name == " Jason "


# ------------------------------------------------------------------------------ eval backend
def test_eval_backend_pools_are_memorybank_l2_search():
    from mempursuit_eval.base import MemoryUnit
    from mempursuit_eval.runner import build_backend

    backend = build_backend("memorybank")
    units = []
    for user in ("Emily", "Frank"):
        for date, turns in load(EN_FILE)[user]["history"].items():
            for i, t in enumerate(turns):
                units.append(MemoryUnit(f"{user}:{date}:{i}", f"{t['query']} {t['response']}", user,
                                        date, (f"{date}:{i}",), f"{date}T10:00:00", "user"))
    progress = []
    backend.build(units, embedder=HashEmbedder(), workdir=None, progress=progress.append)
    assert sum(progress) == len(units)
    emily = [u for u in units if u.group == "Emily"]
    pool = backend.pool("Emily", "q3", 200)
    assert sorted(pool.items) == sorted(u.uid for u in emily)  # the whole group, nothing else
    docs = [backend.document_text(u) for u in emily]
    assert docs[0].startswith("Conversation content on 2023-04-27:Hello, my name is Emily.")
    d2 = [float(((hash_vec(t) - hash_vec("q3")) ** 2).sum()) for t in docs]
    assert pool.items == [emily[i].uid for i in np.argsort(d2, kind="stable")]
    assert np.allclose(-pool.native_scores, sorted(d2), atol=1e-5)
    nearest = next(u for u in emily if u.uid == pool.items[0])
    assert np.array_equal(pool.vectors[0], hash_vec(backend.document_text(nearest)))
    assert np.all(np.diff(pool.signals["dense"]) <= 1e-6)  # unit vectors: L2 order == cosine order
    assert len(backend.pool("Frank", "q3", 5).items) == 5
    with pytest.raises(KeyError, match="no units in group 'Nobody'"):
        backend.pool("Nobody", "q", 5)
    with pytest.raises(ValueError, match="native order is its L2 search"):
        build_backend("memorybank", native_order="hybrid")
    backend.close()


def test_eval_backend_reads_through_the_adapter():
    """Parity: ``mempursuit eval --framework memorybank`` builds its pools with the adapter's own
    read path (``memorybank_pool``, behind ``MemoryBankStore.read``): over the same documents in
    the same index order, the policy is handed the same signals and keeps the same seeds."""
    from mempursuit_eval.base import MemoryUnit
    from mempursuit_eval.runner import build_backend
    from mempursuit_memorybank.documents import get_templates
    from parity import Recorder, assert_parity, harness_order

    history = load(EN_FILE)["Emily"]["history"]  # turns only: no summaries in either index
    t = get_templates("en")
    units = [MemoryUnit(f"Emily:{date}:{i}",
                        f"{t.user_label} {turn['query'].strip()}; {t.ai_label} {turn['response'].strip()}",
                        "Emily", date, (f"{date}:{i}",), f"{date}T10:00:00", None)
             for date, turns in history.items() for i, turn in enumerate(turns)]
    backend = build_backend("memorybank")
    backend.build(units, embedder=HashEmbedder())
    store = MemoryBankStore.from_memory({"history": history}, "Emily", embedder=HashEmbedder(),
                                        language="en")
    assert [d.text for d in store.documents] == [backend.document_text(u) for u in units]
    P, K = 30, 8
    for q in QUERIES:
        want, handed = harness_order(backend.pool("Emily", q, P), K)
        rec = Recorder()
        res = store.read(q, K, pool=P, policy=rec, strict=True)
        assert [units[i].uid for i in res.seeds] == want
        assert_parity(handed, rec.calls[-1]["signals"],
                      {"texts", "query_text", "timestamps", "session_ids", "positions", "dense"})
        assert "speakers" not in handed  # a turn document holds the user's and the AI's message
    backend.dataset_signals = True  # --dataset-signals: the benchmark's labels, on request only
    pool = backend.pool("Emily", QUERIES[0], P)
    assert pool.signals["session_ids"] == [u.split(":")[1] for u in pool.items]
    assert pool.signals["speakers"] == [None] * len(pool.items)
    backend.close()
