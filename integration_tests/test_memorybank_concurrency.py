"""MemoryBank writes under concurrency and on unusual files (``MemoryBankStore.save_memory``).

Before the locked, merging write, two processes saving different users of one file corrupted
it, two threads failed on a shared ``<file>.tmp``, a store that saved after another writer had
changed the same user dropped that writer's turn, a 0600 file became 0644 and a symlinked file
was replaced by a regular file, and two stores persisting one index folder at once failed on a
shared ``index.faiss.tmp``. Each test below failed on that code, except the refusal to
overwrite an unreadable file, which it shares. A tiny deterministic embedder keeps every store
fast; ``persist=False`` keeps the index folder out of the picture except in the last test.
"""

import hashlib
import json
import multiprocessing
import os
import stat
import threading
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("faiss", reason='needs the [memorybank] extra (faiss-cpu)')

from mempursuit_memorybank import MemoryBankFormatError, MemoryBankStore  # noqa: E402

N_SAVES = 30
DATES = ("2023-05-01", "2023-05-02", "2023-05-03")


class TinyEmbedder:
    name = "tiny8"
    dim = 8

    def encode(self, texts):
        rows = [np.frombuffer(hashlib.sha256(t.encode("utf-8")).digest()[:8], np.uint8) for t in texts]
        return np.asarray(rows, np.float32).reshape(len(texts), 8) / 255.0


def write_memory(path, users=("Ann", "Bob", "Shared")):
    data = {u: {"name": u, "history": {DATES[0]: [{"query": f"{u} first", "response": "hello"}]}} for u in users}
    Path(path).write_text(json.dumps(data), encoding="utf-8")


def load(path):
    return json.loads(Path(path).read_text(encoding="utf-8"))


def queries(data, user):
    return [t["query"] for turns in data[user]["history"].values() for t in turns]


def open_store(path, user):
    return MemoryBankStore.open(path, user, embedder=TinyEmbedder(), persist=False)


def save_many(path, me, n, start):
    """``n`` rounds of: a turn for ``me`` and a turn for ``"Shared"``, each saved at once."""
    own, shared = open_store(path, me), open_store(path, "Shared")
    start.wait(60)
    for i in range(n):
        own.add_turn(f"{me} own {i}", "ok", date=DATES[i % 3])
        own.save_memory()
        shared.add_turn(f"{me} shared {i}", "ok", date=DATES[(i + 1) % 3])
        shared.save_memory()


def check_every_turn_once(path, writers, n):
    data = load(path)  # valid JSON
    for me in writers:
        own = queries(data, me)
        assert sorted(own) == sorted([f"{me} first"] + [f"{me} own {i}" for i in range(n)])
    shared = queries(data, "Shared")
    expected = ["Shared first"] + [f"{me} shared {i}" for me in writers for i in range(n)]
    assert sorted(shared) == sorted(expected)
    for me in writers:  # each writer's turns keep its order within a date
        for date in DATES:
            mine = [q for q in (t["query"] for t in data["Shared"]["history"].get(date, [])) if q.startswith(me)]
            assert mine == sorted(mine, key=lambda q: int(q.rsplit(" ", 1)[1]))
    leftovers = sorted(p.name for p in Path(path).parent.iterdir() if p.name.endswith(".tmp"))
    assert leftovers == []


def test_two_processes_save_different_and_same_users(tmp_path):
    path = tmp_path / "memory.json"
    write_memory(path)
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    procs = [ctx.Process(target=save_many, args=(str(path), me, N_SAVES, start)) for me in ("Ann", "Bob")]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    check_every_turn_once(path, ("Ann", "Bob"), N_SAVES)


def test_two_threads_save_different_and_same_users(tmp_path):
    path = tmp_path / "memory.json"
    write_memory(path)
    start, errors = threading.Event(), []

    def run(me):
        try:
            save_many(path, me, N_SAVES, start)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(me,)) for me in ("Ann", "Bob")]
    for t in threads:
        t.start()
    start.set()
    for t in threads:
        t.join(120)
    assert errors == []
    check_every_turn_once(path, ("Ann", "Bob"), N_SAVES)


def test_stale_writer_keeps_the_other_writers_turn(tmp_path):
    path = tmp_path / "memory.json"
    write_memory(path)
    a, b = open_store(path, "Ann"), open_store(path, "Ann")
    b.add_turn("from B", "ok", date=DATES[1])
    b.save_memory()
    a.add_turn("from A", "ok", date=DATES[1])
    a.save_memory()
    assert queries(load(path), "Ann") == ["Ann first", "from B", "from A"]
    # the stale store now holds (and reads) what it wrote, and a re-save duplicates nothing
    assert [t.query for t in a.memory.history[DATES[1]]] == ["from B", "from A"]
    assert len(a) == 3 and any("from B" in d.text for d in a.documents)
    fresh = open_store(path, "Ann")
    assert a.read("from B", 2) == fresh.read("from B", 2)
    a.save_memory()
    b.save_memory()
    assert queries(load(path), "Ann") == ["Ann first", "from B", "from A"]


def test_file_mode_is_kept_and_a_new_file_gets_the_umask_default(tmp_path):
    path = tmp_path / "memory.json"
    write_memory(path)
    os.chmod(path, 0o600)
    store = open_store(path, "Ann")
    store.add_turn("private", "ok", date=DATES[0])
    store.save_memory()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert "private" in queries(load(path), "Ann")
    new = tmp_path / "new.json"
    store.save_memory(new)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(new).st_mode) == 0o666 & ~umask
    assert list(load(new)) == ["Ann"]


def test_symlinked_file_stays_a_link_and_its_target_is_written(tmp_path):
    real = tmp_path / "data" / "memory.json"
    real.parent.mkdir()
    write_memory(real)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    store = open_store(link, "Ann")
    store.add_turn("via link", "ok", date=DATES[0])
    store.save_memory()
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert "via link" in queries(load(real), "Ann")
    assert (real.parent / "memory.json.lock").exists()  # the lock sits beside the real file
    assert not (tmp_path / "link.json.lock").exists()


def test_unreadable_file_on_disk_is_not_overwritten(tmp_path):
    path = tmp_path / "memory.json"
    write_memory(path)
    store = open_store(path, "Ann")
    path.write_text('{"Ann": {"history": ', encoding="utf-8")  # another writer broke it
    store.add_turn("lost?", "ok", date=DATES[0])
    with pytest.raises(MemoryBankFormatError, match=r"memory.json: not valid JSON"):
        store.save_memory()
    assert path.read_text(encoding="utf-8") == '{"Ann": {"history": '


def test_saving_into_a_single_other_user_file_is_refused(tmp_path):
    path = tmp_path / "memory.json"
    write_memory(path)
    store = open_store(path, "Ann")
    other = tmp_path / "bob.json"
    other.write_text(json.dumps({"name": "Bob", "history": {DATES[0]: []}}), encoding="utf-8")
    with pytest.raises(MemoryBankFormatError, match="holds the single user 'Bob' at its top level; "
                                                    "cannot save user 'Ann'"):
        store.save_memory(other)
    assert load(other) == {"name": "Bob", "history": {DATES[0]: []}}


def test_two_threads_persisting_one_index_folder(tmp_path, caplog):
    # both write index.faiss and manifest.json of the same user at once; before the folder lock
    # and unique temp names one failed on the shared index.faiss.tmp
    path = tmp_path / "memory.json"
    write_memory(path)
    start, errors = threading.Event(), []

    def run():
        try:
            start.wait(60)
            for _ in range(15):
                MemoryBankStore.open(path, "Ann", embedder=TinyEmbedder(), rebuild=True)
                MemoryBankStore.open(path, "Ann", embedder=TinyEmbedder())
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(2)]
    with caplog.at_level("WARNING", logger="mempursuit_memorybank.store"):
        for t in threads:
            t.start()
        start.set()
        for t in threads:
            t.join(120)
    assert errors == [] and caplog.records == []  # never a torn index/manifest pair
    assert MemoryBankStore.open(path, "Ann", embedder=TinyEmbedder()).status == "loaded"
    folder = MemoryBankStore.open(path, "Ann", embedder=TinyEmbedder()).index_dir
    assert sorted(p.name for p in folder.iterdir()) == ["index.faiss", "manifest.json"]
