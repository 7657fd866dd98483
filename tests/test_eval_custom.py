"""Custom data files (``--dataset custom``) and ``mempursuit convert``."""

import gzip
import json
from pathlib import Path

import pytest

from mempursuit_core.cli import main as cli_main
from mempursuit_eval.datasets.custom import CustomDataError, load_custom, write_custom
from mempursuit_eval.datasets import (DEFAULT_EXCLUDED, DatasetNotFoundError, load_dataset,
                                      select_questions)

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
LOCOMO = DATA / "locomo" / "locomo10.json"
needs_locomo = pytest.mark.skipif(not LOCOMO.exists(), reason="benchmark data in ../shared/data")

SAMPLE = {
    "memories": [
        {"id": "m1", "text": "Alice moved to Paris in 2021.", "group": "alice", "session": "s1",
         "timestamp": "2021-03-01T10:00:00"},
        {"id": "m2", "text": "Alice adopted a cat named Miso.", "group": "alice", "session": "s2"},
        {"id": "m3", "text": "Bob plays the cello.", "group": "bob"},
        {"id": "m4", "text": "Bob's sister lives in Lyon.", "group": "bob"},
    ],
    "questions": [
        {"id": "q1", "question": "Where does Alice live?", "gold": ["m1"], "group": "alice",
         "category": "single-hop", "answer": "Paris"},
        {"id": "q2", "question": "What instrument does Bob play?", "gold": ["m3"], "group": "bob"},
        {"id": "q3", "question": "Anything about pets?", "gold": [], "group": "alice"},
    ],
}


def _write(tmp_path, obj, name="data.json"):
    p = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(p, "wt", encoding="utf-8") as f:
            json.dump(obj, f)
    elif name.endswith(".jsonl"):
        lines = [{"memory": m} for m in obj.get("memories", [])]
        lines += [{"question": q} for q in obj["questions"]]
        p.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    else:
        p.write_text(json.dumps(obj))
    return p


@pytest.mark.parametrize("name", ["data.json", "data.jsonl", "data.json.gz"])
def test_load_every_file_kind(tmp_path, name):
    ds = load_dataset("custom", _write(tmp_path, SAMPLE, name))
    assert ds.name == "custom" and len(ds.units) == 4 and ds.groups() == ["alice", "bob"]
    m1, m2, m3 = ds.units[:3]
    assert (m1.session_id, m1.timestamp, m1.source_ids) == ("s1", "2021-03-01T10:00:00", ("m1",))
    assert m3.session_id == "m3"  # no session: the memory is its own session
    q1, q2, q3 = ds.questions
    assert q1.gold_sessions == ("s1",) and q1.gold_turns == ("m1",) and q1.answer == "Paris"
    assert q2.gold_sessions == ("m3",) and q2.category == "default"
    assert q3.gold_sessions == () and q3.gold_turns == ()  # asked, not scored
    assert ds.categories == ["single-hop", "default"]
    assert [q.qid for q in select_questions(ds, ["single-hop"])] == ["q1"]


def test_default_group(tmp_path):
    obj = {"memories": [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}],
           "questions": [{"id": "q", "question": "x?", "gold": ["b"]}]}
    ds = load_custom(_write(tmp_path, obj))
    assert ds.groups() == ["default"] and ds.questions[0].group == "default"


def _bad(tmp_path, mutate, name="data.json"):
    obj = json.loads(json.dumps(SAMPLE))
    mutate(obj)
    path = _write(tmp_path, obj, name)
    with pytest.raises(CustomDataError) as info:
        load_custom(path)
    msg = str(info.value)
    assert "\n" not in msg and str(path) in msg
    return msg


def test_errors_name_file_record_and_field(tmp_path):
    msg = _bad(tmp_path, lambda o: o["questions"][1].update(gold=["m9"]))
    assert "question #1 (id 'q2')" in msg and "'gold'" in msg and "unknown memory id 'm9'" in msg
    msg = _bad(tmp_path, lambda o: o["questions"][1].update(gold=["m1"]))
    assert "question #1 (id 'q2')" in msg and "'m1' is in group 'alice'" in msg and "'bob'" in msg
    msg = _bad(tmp_path, lambda o: o["memories"][2].update(id="m1"))
    assert "memory #2 (id 'm1')" in msg and "duplicate id 'm1'" in msg
    msg = _bad(tmp_path, lambda o: o["questions"][2].update(id="q1"))
    assert "question #2 (id 'q1')" in msg and "duplicate" in msg
    msg = _bad(tmp_path, lambda o: o["memories"][1].update(text="  "))
    assert "memory #1 (id 'm2')" in msg and "field 'text' is empty" in msg
    msg = _bad(tmp_path, lambda o: o["memories"][0].update(text=42))
    assert "memory #0 (id 'm1')" in msg and "'text' is a number 42, expected a non-empty string" in msg
    msg = _bad(tmp_path, lambda o: o["questions"][0].update(gold="m1"))
    assert "question #0" in msg and "'gold' is a string 'm1', expected a list of strings" in msg
    msg = _bad(tmp_path, lambda o: o["questions"][0].pop("gold"))
    assert "question #0 (id 'q1')" in msg and "'gold' is missing (expected a list of strings" in msg
    msg = _bad(tmp_path, lambda o: o["memories"][3].pop("id"))
    assert "memory #3" in msg and "'id' is missing (expected a non-empty string" in msg
    msg = _bad(tmp_path, lambda o: o["memories"][0].update(timestamp="yesterday"))
    assert "'timestamp' is not an ISO-8601 time" in msg
    msg = _bad(tmp_path, lambda o: o["memories"][0].update(golds=1))
    assert "unknown field(s) ['golds']" in msg
    msg = _bad(tmp_path, lambda o: o.pop("memories"))
    assert "missing top-level field 'memories'" in msg and "--mem0-config" in msg
    msg = _bad(tmp_path, lambda o: o["memories"].__setitem__(0, "text"))
    assert "memory #0 is a string 'text', expected an object with 'id' and 'text'" in msg
    # jsonl: the line number too
    msg = _bad(tmp_path, lambda o: o["questions"][1].update(gold=["m9"]), "data.jsonl")
    assert "question #1 (id 'q2')" in msg
    msg = _bad(tmp_path, lambda o: o["memories"][1].update(text=""), "data.jsonl")
    assert "line 2, memory #1 (id 'm2')" in msg


def test_unreadable_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(CustomDataError, match="bad.json: not valid JSON at line 1 column 2"):
        load_custom(bad)
    lines = tmp_path / "bad.jsonl"
    lines.write_text('{"memory": {"id": "a", "text": "x"}}\n{"answer": 1}\n')
    with pytest.raises(CustomDataError, match=r"bad.jsonl: line 2: expected one of"):
        load_custom(lines)
    with pytest.raises(DatasetNotFoundError, match="does not exist"):
        load_dataset("custom", tmp_path / "missing.json")
    with pytest.raises(CustomDataError, match="needs --data FILE"):
        load_dataset("custom")
    with pytest.raises(CustomDataError, match="--units sessions does not apply"):
        load_dataset("custom", _write(tmp_path, SAMPLE), units="sessions")


def test_cli_bad_file_is_one_line(tmp_path, capsys):
    obj = json.loads(json.dumps(SAMPLE))
    obj["questions"][0]["gold"] = ["nope"]
    path = _write(tmp_path, obj)
    rc = cli_main(["eval", "--dataset", "custom", "--data", str(path), "--no-cache", "--quiet",
                   "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert err.startswith("mempursuit eval: ") and "unknown memory id 'nope'" in err


def test_run_on_custom_data(tmp_path):
    pytest.importorskip("onnxruntime")
    from mempursuit_eval import run_eval

    summary = run_eval(dataset="custom", data=str(_write(tmp_path, SAMPLE)), k=(1, 2),
                       policies=("native",), pool=10, no_cache=True, progress=False, plots=False,
                       latency_sample=0, bootstrap=10, out=str(tmp_path / "run"))
    assert summary["dataset"] == "custom" and summary["n_questions"] == 3
    assert summary["n_scored"] == 2
    assert summary["results"]["native"]["2"]["overall"]["session_recall"] == 100.0


# ------------------------------------------------------------------ the converter

class HashingEmbedder:
    """Hashed bag of words (+ bigrams), L2-normalised: deterministic and fast."""

    name = "hashing-test"
    fingerprint = "hashing-test-v1"
    dim = 256

    def encode(self, texts, *, batch_size=64):
        import hashlib

        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            words = t.lower().split()
            for w in words + [a + " " + b for a, b in zip(words, words[1:])]:
                h = int.from_bytes(hashlib.md5(w.encode()).digest()[:4], "little")
                out[i, h % self.dim] += 1.0 if h & (1 << 20) else -1.0
            out[i, len(t) % self.dim] += 0.5
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out


@pytest.fixture(scope="module")
def locomo():
    return load_dataset("locomo", LOCOMO)


@needs_locomo
@pytest.mark.parametrize("name", ["loc.json", "loc.jsonl.gz"])
def test_locomo_round_trip(locomo, tmp_path, name):
    path = write_custom(locomo, tmp_path / name, default_excluded=DEFAULT_EXCLUDED["locomo"])
    back = load_dataset("custom", path)
    assert back.units == locomo.units
    assert back.questions == locomo.questions
    assert back.categories == locomo.categories
    assert [q.qid for q in select_questions(back)] == [q.qid for q in select_questions(locomo)]


@needs_locomo
def test_locomo_observations_round_trip(tmp_path):
    ds = load_dataset("locomo", LOCOMO, units="observations")
    back = load_dataset("custom", write_custom(ds, tmp_path / "obs.json"))
    assert back.units == ds.units and back.questions == ds.questions


@needs_locomo
def test_convert_command_and_identical_numbers(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    from mempursuit_core import DEFAULT_POLICY
    from mempursuit_eval import run_eval

    out = tmp_path / "locomo.jsonl.gz"
    rc = cli_main(["convert", "--dataset", "locomo", "--data", str(LOCOMO), "--out", str(out)])
    assert rc == 0 and "5882 memories, 1986 questions in 10 group(s)" in capsys.readouterr().out
    assert cli_main(["convert", "--dataset", "locomo", "--data", str(LOCOMO),
                     "--out", str(tmp_path / "x.txt")]) == 2
    assert "must end in .json" in capsys.readouterr().err

    # Both paths use the same embedder: a cheap deterministic one keeps the test quick (the
    # equality under test does not depend on which embedder it is).
    emb = HashingEmbedder()
    common = dict(groups=["conv-26", "conv-30"], k=(10, 20),
                  policies=("native", DEFAULT_POLICY), pool=100, embedder=emb,
                  cache_dir=str(tmp_path / "cache"), progress=False, plots=False,
                  latency_sample=0, bootstrap=200)
    a = run_eval(dataset="locomo", data=str(LOCOMO), **common)
    b = run_eval(dataset="custom", data=str(out), **common)
    assert a["n_questions"] == b["n_questions"] == 233
    assert a["results"] == b["results"]
    assert a["paired"] == b["paired"]
