"""Bad input to ``mempursuit eval``: one stderr line naming the file / option / record and the
fix, exit status 2, and nothing half-written (no output folder, no cache shard).

The runs go through ``mempursuit_core.cli.main``. Where the error must come before any
embedding, the embedder is a guard that fails the test if it is ever asked to embed; the one
test that needs a real run uses the packaged MiniLM.
"""

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest

from mempursuit_core.cli import main as cli_main
from mempursuit_eval.cache import EmbeddingCache, text_key
from mempursuit_eval.datasets import load_locomo

from eval_samples import beam_root, lme_file, lme_record, locomo_file, sample


# --------------------------------------------------------------------------------------------
# running the CLI
# --------------------------------------------------------------------------------------------

class _Guard:
    """An embedder that fails the test if anything is embedded."""

    name = "guard"
    fingerprint = "guard-v1"
    dim = 4

    def encode(self, texts, **kw):
        raise AssertionError("the error must come before any embedding")


@pytest.fixture
def guard(monkeypatch):
    monkeypatch.setattr("mempursuit_core.embed.get_embedder", lambda *a, **k: _Guard())


def _argv(data, tmp_path, *extra, dataset="locomo", out=None, cache=None):
    return ["eval", "--dataset", dataset, "--data", str(data),
            "--cache-dir", str(cache if cache is not None else tmp_path / "cache"),
            "--out", str(out if out is not None else tmp_path / "run"),
            "--k", "2", "--pool", "4", "--bootstrap", "10", "--latency-sample", "0",
            "--no-plots", "--no-download", *extra]


def _one_line_error(capsys, argv, *needles):
    rc = cli_main(argv)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2, err
    assert "Traceback" not in err
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _nothing_written(tmp_path, out=None):
    out = out if out is not None else tmp_path / "run"
    assert not out.exists(), "no output folder after an input error"
    assert not list(out.parent.glob(f".{out.name}.part-*")), "no half-written output folder"
    assert not list(tmp_path.rglob("*.npz")), "no cache shard after an input error"
    assert not list(tmp_path.rglob(".part-*")), "no half-written cache shard"


# --------------------------------------------------------------------------------------------
# LoCoMo
# --------------------------------------------------------------------------------------------

def _del(keys):
    def mutate(data):
        obj = data
        for k in keys[:-1]:
            obj = obj[k]
        del obj[keys[-1]]
    return mutate


def _set(keys, value):
    def mutate(data):
        obj = data
        for k in keys[:-1]:
            obj = obj[k]
        obj[keys[-1]] = value
    return mutate


LOCOMO_CASES = {
    "missing sample_id": (_del([1, "sample_id"]),
                          ["conversation 1:", "'sample_id' is missing"]),
    "missing question": (_del([1, "qa", 1, "question"]),
                         ["conversation 1 (sample_id conv-2): qa[1]: 'question' is missing"]),
    "turn not an object": (_set([1, "conversation", "session_2", 1], "just text"),
                           ["conversation 1 (sample_id conv-2): session_2[1] is a string",
                            "expected an object"]),
    "qa not a list": (_set([1, "qa"], {"question": "x"}),
                      ["(sample_id conv-2): 'qa' is an object, expected a list"]),
    "qa item not an object": (_set([1, "qa", 0], "What?"),
                              ["(sample_id conv-2): qa[0] is a string", "expected an object"]),
    "conversation as a list": (_set([0, "conversation"], [{"speaker": "A", "text": "hi"}]),
                               ["conversation 0 (sample_id conv-1): 'conversation' is a list",
                                "expected an object with session_<n>"]),
    "bad category": (_set([1, "qa", 1, "category"], "temporal"),
                     ["(sample_id conv-2): qa[1]: 'category' is a string 'temporal'",
                      "expected an integer 1 (multi-hop)"]),
}


@pytest.mark.parametrize("case", list(LOCOMO_CASES))
def test_locomo_bad_record_is_one_line_naming_file_and_field(case, tmp_path, capsys, guard):
    mutate, needles = LOCOMO_CASES[case]
    path = locomo_file(tmp_path, mutate)
    line = _one_line_error(capsys, _argv(path, tmp_path), str(path), *needles)
    assert "fix or remove that record" in line
    _nothing_written(tmp_path)


def test_locomo_evidence_given_as_one_string_is_one_id(tmp_path):
    path = locomo_file(tmp_path, _set([0, "qa", 1, "evidence"], "D2:1"))
    q = load_locomo(path).questions[1]
    assert q.gold_turns == ("conv-1/D2:1",) and q.unresolved_evidence == ()


# --------------------------------------------------------------------------------------------
# LongMemEval and BEAM
# --------------------------------------------------------------------------------------------

LME_CASES = {
    "missing question": (_del([1, "question"]),
                         ["record 1 (question_id q2): 'question' is missing"]),
    "missing question_id": (_del([0, "question_id"]), ["record 0: 'question_id' is missing"]),
    "turn not an object": (_set([1, "haystack_sessions", 0, 1], "Nice."),
                           ["record 1 (question_id q2): haystack_sessions[0][1] is a string"]),
    "session not a list": (_set([0, "haystack_sessions", 1], {"role": "user"}),
                           ["record 0 (question_id q1): haystack_sessions[1] is an object",
                            "expected a list of turns"]),
}


@pytest.mark.parametrize("case", list(LME_CASES))
def test_longmemeval_bad_record_is_one_line(case, tmp_path, capsys, guard):
    mutate, needles = LME_CASES[case]
    path = lme_file(tmp_path, mutate)
    _one_line_error(capsys, _argv(path, tmp_path, dataset="longmemeval"), str(path), *needles)
    _nothing_written(tmp_path)


BEAM_CASES = {
    "message without id": (_del([0, "turns", 0, 1, "id"]), None,
                           ["chat.json: batch 0: turns[0][1]: 'id' is missing"]),
    "turns not a list": (_set([0, "turns"], "hello"), None,
                         ["chat.json: batch 0: 'turns' is a string"]),
    "question missing": (None, _del(["information_extraction", 0, "question"]),
                         ["probing_questions.json: information_extraction[0]: "
                          "'question' is missing"]),
}


@pytest.mark.parametrize("case", list(BEAM_CASES))
def test_beam_bad_record_is_one_line(case, tmp_path, capsys, guard):
    chat, probing, needles = BEAM_CASES[case]
    root = beam_root(tmp_path, chat, probing)
    _one_line_error(capsys, _argv(root, tmp_path, dataset="beam"), str(root / "1"), *needles)
    _nothing_written(tmp_path)


# --------------------------------------------------------------------------------------------
# policy options: checked before any data is read
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, needles", [
    (["--policies", "mmr:foo=1"], ["policy 'mmr:foo=1'", "no option 'foo'", "accepts lam"]),
    (["--policies", "mempursuit:lam=0.5"],
     ["policy 'mempursuit:lam=0.5'", "no option 'lam'", "ridge", "tau", "patience"]),
    (["--policy-opt", "mmr.foo=1", "--policies", "mmr"], ["policy 'mmr'", "'foo'", "lam"]),
    (["--policies", "native:x=1"], ["policy 'native:x=1'", "takes no options"]),
    (["--policies", "centered-fusion:brige=3"],
     ["policy 'centered-fusion:brige=3'", "no option 'brige' (did you mean 'bridge'?)"]),
])
def test_unknown_policy_option_fails_before_the_data(argv, needles, tmp_path, capsys, guard):
    missing = tmp_path / "not-there.json"  # the policy error must come first
    _one_line_error(capsys, _argv(missing, tmp_path, *argv), *needles)
    _nothing_written(tmp_path)


# --------------------------------------------------------------------------------------------
# --out
# --------------------------------------------------------------------------------------------

def test_out_naming_an_existing_file_fails_before_any_work(tmp_path, capsys, guard):
    path = locomo_file(tmp_path)
    out = tmp_path / "results.txt"
    out.write_text("keep me\n")
    _one_line_error(capsys, _argv(path, tmp_path, out=out), f"--out {out}", "existing file")
    assert out.read_text() == "keep me\n"
    assert not list(tmp_path.rglob("*.npz"))


def test_out_under_a_file_fails_before_any_work(tmp_path, capsys, guard):
    path = locomo_file(tmp_path)
    blocker = tmp_path / "runs"
    blocker.write_text("")
    out = blocker / "eval-1"
    _one_line_error(capsys, _argv(path, tmp_path, out=out), f"--out {out}", "is a file")
    assert blocker.read_text() == ""
    assert not list(tmp_path.rglob("*.npz"))


def test_failure_while_writing_leaves_no_output_folder(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime", reason="needs the [embed] extra")
    import mempursuit_eval.report as report

    def broken(*a, **k):
        raise RuntimeError("disk went away")

    monkeypatch.setattr(report, "markdown_report", broken)
    path = locomo_file(tmp_path)
    with pytest.raises(RuntimeError, match="disk went away"):
        cli_main(_argv(path, tmp_path, "--quiet", "--embed-threads", "1"))
    out = tmp_path / "run"
    assert not out.exists()
    assert not list(tmp_path.glob(".run.part-*"))


# --------------------------------------------------------------------------------------------
# the cache
# --------------------------------------------------------------------------------------------

def test_read_only_cache_fails_before_embedding(tmp_path, capsys, guard, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o555)
    real = tempfile.mkstemp

    def mkstemp(*a, dir=None, **k):  # read-only even for root, who ignores the mode bits
        if dir is not None and Path(dir).resolve().is_relative_to(cache.resolve()):
            raise PermissionError(13, "Permission denied", str(dir))
        return real(*a, dir=dir, **k)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    try:
        path = locomo_file(tmp_path)
        _one_line_error(capsys, _argv(path, tmp_path, cache=cache), str(cache),
                        "not writable", "--cache-dir", "--no-cache")
    finally:
        cache.chmod(0o755)
    _nothing_written(tmp_path)


@pytest.mark.parametrize("where", ["is the file", "under the file"])
def test_cache_path_that_is_or_lies_under_a_file(where, tmp_path, capsys, guard):
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    cache = blocker if where == "is the file" else blocker / "cache"
    path = locomo_file(tmp_path)
    _one_line_error(capsys, _argv(path, tmp_path, cache=cache), str(cache), "is a file",
                    "--cache-dir")
    assert blocker.is_file() and blocker.read_text() == ""
    _nothing_written(tmp_path)


def test_truncated_cache_shard_names_the_shard(tmp_path, capsys, guard):
    from mempursuit_eval.cache import CacheError

    cache = tmp_path / "cache"
    shards = EmbeddingCache(cache, _Guard.fingerprint)
    keys = [text_key(t) for t in ("a", "b", "c")]
    shards.add(keys, np.eye(3, 4, dtype=np.float32))
    (shard,) = shards.dir.glob("*.npz")
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])  # truncated
    with pytest.raises(CacheError, match=shard.name):
        EmbeddingCache(cache, _Guard.fingerprint)
    path = locomo_file(tmp_path)
    _one_line_error(capsys, _argv(path, tmp_path, cache=cache), str(shard), "corrupt",
                    "delete that file")
    assert sorted(p.name for p in shards.dir.iterdir()) == [shard.name]  # nothing new written
    assert not (tmp_path / "run").exists()


def test_format_errors_are_value_errors():
    from mempursuit_eval.cache import CacheError
    from mempursuit_eval.datasets import DatasetFormatError

    # The CLI turns ValueError into exit status 2; the Python API can catch the specific kinds.
    assert issubclass(DatasetFormatError, ValueError) and issubclass(CacheError, ValueError)
