"""The command line as a user meets it, in a child process: every known kind of bad input is one
line on stderr naming the problem and the fix, with exit status 2 (no traceback, no usage
block, no numpy warning), and Ctrl-C stops a long run at once, keeping what was cached.

Every case here fails before anything is embedded, except the Ctrl-C and embedder cases, which
embed through a local OpenAI-compatible server (``test_eval_openai_embed.Server``).
"""

import gzip
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from embed_server import Server, hash_vector
from eval_samples import beam_root, lme_record, sample

pytestmark = pytest.mark.slow  # each case runs the command line in a subprocess

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "MEMPURSUIT_PLUGINS": "", "OMP_NUM_THREADS": "1",
       "PYTHONWARNINGS": "default"}  # a warning would show up on stderr, and fail the one line


def _cli(*args, cwd=None, **kw):
    return subprocess.run([sys.executable, "-m", "mempursuit_core", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd or ROOT, env=ENV,
                          timeout=300, **kw)


def _one_line(res, *needles):
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2, res.stderr
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def _write(path: Path, obj) -> Path:
    path.write_text(json.dumps(obj))
    return path


def _eval(tmp_path, data, *extra, dataset="locomo"):
    return ["eval", "--dataset", dataset, "--data", data, "--cache-dir", tmp_path / "cache",
            "--k", "2", "--pool", "4", "--bootstrap", "10", "--latency-sample", "0",
            "--no-plots", "--no-download", "--quiet", *extra]


@pytest.fixture
def locomo(tmp_path):
    return _write(tmp_path / "locomo10.json", [sample("conv-1"), sample("conv-2")])


# --------------------------------------------------------------------------------------------
# options
# --------------------------------------------------------------------------------------------

OPTION_CASES = {
    "bootstrap 0": (["--bootstrap", "0"], ["--bootstrap must be an integer >= 1", "got 0"]),
    "bootstrap -5": (["--bootstrap", "-5"], ["--bootstrap must be an integer >= 1"]),
    "seed -1": (["--seed", "-1"], ["--seed must be an integer from 0 to 4294967295"]),
    "latency-sample -1": (["--latency-sample", "-1"],
                          ["--latency-sample must be an integer >= 0", "0 turns the timing off"]),
    "threads 0": (["--threads", "0"], ["--threads must be an integer >= 1",
                                       "leave it out to use all cores"]),
    "threads -2": (["--threads", "-2"], ["--threads must be an integer >= 1"]),
    "embed-threads 0": (["--embed-threads", "0"], ["--embed-threads must be an integer >= 1"]),
    "out empty": (["--out", ""], ["--out is empty", "--out runs/demo"]),
    "backend-opt bogus": (["--backend-opt", "bogus=1"],
                          ["--backend-opt bogus", "plain store has no option 'bogus'",
                           "accepts native, signals, k1, b"]),
    "mmr lam not a number": (["--policies", "mmr:lam=abc"],
                             ["policy 'mmr:lam=abc'", "'lam' must be a number", "mmr:lam=0.5"]),
    "qa-retries -1": (["--qa-retries", "-1"],
                      ["argument --qa-retries: expected an integer >= 0, got '-1'",
                       "0 = one attempt", "see 'mempursuit eval --help'"]),
    "qa-concurrency 0": (["--qa-concurrency", "0"],
                         ["argument --qa-concurrency: expected an integer >= 1, got '0'"]),
    "qa-timeout 0": (["--qa-timeout", "0"], ["argument --qa-timeout: expected a number > 0"]),
    "k not a number": (["--k", "ten"], ["argument --k: invalid int value: 'ten'",
                                        "see 'mempursuit eval --help'"]),
    "unknown flag": (["--bogus"], ["mempursuit eval: unrecognized arguments: --bogus",
                                   "see 'mempursuit eval --help'"]),
    "misspelt flag": (["--polices", "native"], ["unrecognized arguments: --polices native",
                                                "did you mean '--policies'?",
                                                "see 'mempursuit eval --help'"]),
    "limit 0": (["--limit", "0"], ["--limit must be an integer >= 1", "leave it out for all"]),
    "pool 0": (["--pool", "0"], ["--pool must be an integer >= 1"]),
    "budget-tokens 0": (["--budget-tokens", "500", "0"],
                        ["--budget-tokens takes a whole number of tokens >= 1", "got 0"]),
    "pool below k": (["--pool", "3", "--k", "2", "5"],
                     ["--pool 3 is below --k 5", "every difference from native would be zero",
                      "give --pool of at least 5"]),
    "unknown group": (["--groups", "conv-9"], ["unknown group(s) ['conv-9']", "conv-1, conv-2"]),
    "unknown framework": (["--framework", "nope"],
                          ["unknown framework 'nope'", "plain", "mem0", "memorybank"]),
}


@pytest.mark.parametrize("case", list(OPTION_CASES))
def test_bad_option_is_one_line_and_exit_2(case, tmp_path, locomo):
    extra, needles = OPTION_CASES[case]
    res = _cli(*_eval(tmp_path, locomo, "--out", tmp_path / "run", *extra), cwd=tmp_path)
    _one_line(res, *needles)
    assert not (tmp_path / "run").exists() and not (tmp_path / "runs").exists()


def test_out_where_no_folder_can_be_made(tmp_path, locomo):
    if not Path("/proc/self").is_dir():
        pytest.skip("needs /proc")
    res = _cli(*_eval(tmp_path, locomo, "--out", "/proc/mempursuit-run"))
    _one_line(res, "--out /proc/mempursuit-run", "no folder can be made in /proc",
              "pass --out with a new or existing folder")
    assert not list((tmp_path / "cache").rglob("*.npz"))


def test_sentence_transformers_model_that_is_not_there(tmp_path, locomo, capsys):
    """In process: torch is imported once for the whole run, not once per child."""
    pytest.importorskip("sentence_transformers", reason="the st: embedder needs torch")
    from mempursuit_core.cli import main

    argv = _eval(tmp_path, locomo, "--out", tmp_path / "run", "--embedder",
                 f"st:{tmp_path / 'no-model'}")
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert f"st:{tmp_path / 'no-model'}: cannot load this sentence-transformers model" in err
    assert "give a model folder that exists" in err


def test_adapters_listing_has_no_long_line():
    res = _cli("adapters")
    assert res.returncode == 0 and res.stdout.strip()
    assert max(map(len, res.stdout.splitlines())) <= 100, res.stdout


def test_subcommand_typo_is_one_line():
    res = _cli("evl")
    _one_line(res, "invalid choice: 'evl'", "'eval'", "see 'mempursuit --help'")


# --------------------------------------------------------------------------------------------
# data files
# --------------------------------------------------------------------------------------------

def _locomo_without(tmp_path, where):
    s = sample("conv-1")
    if where == "qa":
        del s["qa"]
    else:
        del s["conversation"]["session_1"][0]["text"]
    return _write(tmp_path / "locomo10.json", [s, sample("conv-2")])


def lme_file(tmp_path, records):
    return _write(tmp_path / "longmemeval_s.json", records)


def _truncated_gz(tmp_path):
    raw = gzip.compress(json.dumps([lme_record("q1"), lme_record("q2")]).encode())
    path = tmp_path / "longmemeval_s.json.gz"
    path.write_bytes(raw[: len(raw) // 2])
    return path


def _deep(tmp_path):
    path = tmp_path / "locomo10.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    return path


def _cut(tmp_path):
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps([sample("conv-1")])[:150])  # ends inside a string
    return path


def _jsonl_two_meta(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text('{"meta": {"name": "a"}}\n{"memory": {"id": "m1", "text": "Rex is a dog."}}\n'
                    '{"meta": {"name": "b"}}\n'
                    '{"question": {"id": "q1", "question": "Who is Rex?", "gold": ["m1"]}}\n')
    return path


def _beam_string_ids(tmp_path):
    def mutate(probing):
        probing["information_extraction"][0]["source_chat_ids"] = "0"
    return beam_root(tmp_path, None, mutate)


DATA_CASES = {
    "deeply nested JSON": ("locomo", _deep, ["locomo10.json", "nested too deeply"]),
    "truncated .json.gz": ("longmemeval", _truncated_gz,
                           ["longmemeval_s.json.gz", "gzip file is truncated or damaged",
                            "download it again"]),
    "JSON cut inside a string": ("locomo", _cut,
                                 ["locomo10.json", "not valid JSON at line 1 column",
                                  "Unterminated string starting at"]),
    "LongMemEval top level an object": (
        "longmemeval", lambda t: lme_file(t, {"q1": lme_record("q1")}),
        ["longmemeval_s.json", "the top level is an object", "put a single record in [ ]"]),
    "LongMemEval duplicate question_id": (
        "longmemeval", lambda t: lme_file(t, [lme_record("q1"), lme_record("q1")]),
        ["longmemeval_s.json: record 1", "question_id 'q1' repeats record 0"]),
    "LoCoMo conversation without qa": (
        "locomo", lambda t: _locomo_without(t, "qa"),
        ["locomo10.json: conversation 0 (sample_id conv-1): 'qa' is missing", "'qa': []"]),
    "LoCoMo turn without text": (
        "locomo", lambda t: _locomo_without(t, "text"),
        ["(sample_id conv-1): session_1[0]: 'text' is missing"]),
    "BEAM source_chat_ids a string": (
        "beam", _beam_string_ids,
        ["probing_questions.json: information_extraction[0]: 'source_chat_ids' is a string",
         "expected a list of message ids"]),
    "jsonl with two meta records": (
        "custom", _jsonl_two_meta,
        ["mine.jsonl: line 3: a second 'meta' record (the first is on line 1)",
         "merge them into one"]),
}


@pytest.mark.parametrize("case", list(DATA_CASES))
def test_bad_data_file_is_one_line_and_exit_2(case, tmp_path):
    dataset, make, needles = DATA_CASES[case]
    data = make(tmp_path)
    res = _cli(*_eval(tmp_path, data, "--out", tmp_path / "run", dataset=dataset))
    _one_line(res, *needles)
    assert not (tmp_path / "run").exists()
    assert not list((tmp_path / "cache").rglob("*.npz"))


# --------------------------------------------------------------------------------------------
# the embedder, and Ctrl-C
# --------------------------------------------------------------------------------------------

def _custom(tmp_path, n):
    mems = [{"id": f"m{i}", "text": f"memory number {i}"} for i in range(n)]
    qs = [{"id": "q1", "question": "which memory?", "gold": ["m1"]}]
    return _write(tmp_path / "mine.json", {"memories": mems, "questions": qs})


def _remote(tmp_path, server, data, *extra):
    return [*_eval(tmp_path, data, dataset="custom"), "--out", tmp_path / "run",
            "--embedder", "openai:test", "--embedder-url", server.url, *extra]


def test_embedder_overflow_is_its_own_line_without_a_numpy_warning(tmp_path):
    server = Server(vectors=lambda text: [1e300] * 8)
    try:
        res = _cli(*_remote(tmp_path, server, _custom(tmp_path, 3), "--embedder-retries", "0"))
    finally:
        server.close()
    line = _one_line(res, server.url, "value too large for float32")
    assert "RuntimeWarning" not in res.stderr and "overflow" not in line


_SWALLOWED = """
import argparse, os, signal, sys, threading
from mempursuit_core import cli

cli._GRACE_S = float(sys.argv[1])
signal.signal(signal.SIGINT, cli._CtrlC(argparse.Namespace(command="eval", no_cache=False)))


class Finalizer:
    def __del__(self):  # Python prints a KeyboardInterrupt raised here and drops it
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):
            pass


Finalizer()
print("dropped", flush=True)
if sys.argv[2] == "again":
    os.kill(os.getpid(), signal.SIGINT)
threading.Event().wait()  # a run that would never look again
"""


@pytest.mark.parametrize("grace, again", [(0.5, "no"), (3600, "again")])
def test_a_ctrl_c_that_python_drops_still_ends_the_run(grace, again):
    """A ``KeyboardInterrupt`` raised in a finalizer is printed and dropped by Python, and the run
    goes on waiting: the command line ends it anyway, after its grace or at a second Ctrl-C, with
    the one line and status 130."""
    try:  # a hang guard, not a timing
        res = subprocess.run([sys.executable, "-c", _SWALLOWED, str(grace), again], cwd=ROOT,
                             env=ENV, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        pytest.fail("a dropped Ctrl-C left the run waiting")
    assert res.stdout == "dropped\n" and "KeyboardInterrupt" in res.stderr, res.stderr
    assert res.returncode == 130, res.stderr
    assert res.stderr.strip().splitlines()[-1] == (
        "mempursuit eval: interrupted (the texts embedded so far are cached: run the same command "
        "again to embed only the rest)")


def test_ctrl_c_stops_at_once_and_keeps_what_was_embedded(tmp_path):
    """SIGINT while the rest of 200 requests are queued: the run ends with one line and status
    130 without waiting for the queue, the answered batches are in the cache, and the same
    command then asks the server only for the texts still missing.

    Deterministic: the server answers the first two memories and holds every later one until
    the test lets it go, so the interrupt always lands mid-run with exactly two batches kept."""
    n, free = 200, 2
    gate = threading.Event()  # set only after the run has ended
    answered: list[str] = []
    held = threading.Semaphore(0)  # one release per memory request the server holds

    def gated(text):
        if text.startswith("memory number"):
            with lock:
                first_ones = len(answered) < free
                if first_ones:
                    answered.append(text)
            if not first_ones:
                held.release()
                gate.wait()
        return hash_vector(text)

    lock = threading.Lock()
    data = _custom(tmp_path, n)
    server = Server(vectors=gated)
    proc = None
    try:
        argv = _remote(tmp_path, server, data, "--embedder-batch", "1",
                       "--embedder-concurrency", "2")
        # Ctrl-C's default disposition, as a command in a terminal has it: a suite run as a
        # background job (``nohup pytest &``) passes SIGINT on ignored
        proc = subprocess.Popen([sys.executable, "-m", "mempursuit_core", *map(str, argv)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                cwd=ROOT, env=ENV,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        # both workers now wait on the server: the two answered batches are all there will be
        for _ in range(2):  # hang guards, not timings
            assert held.acquire(timeout=300), "the run never asked for a third memory"
        def written():  # whole shards: a ".part-*.npz" is one still being written
            return [f for f in (tmp_path / "cache").rglob("*.npz")
                    if not f.name.startswith(".part-")]
        deadline = time.monotonic() + 300
        while len(written()) < free and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        assert len(written()) >= free
        proc.send_signal(signal.SIGINT)
        try:  # the held requests never finish: only an exit that does not wait for them ends it
            out, err = proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("the run did not stop after Ctrl-C (it waits for requests in flight); "
                        f"its stderr:\n{proc.communicate()[1]}")
        assert proc.returncode == 130, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "interrupted" in lines[0] and "Traceback" not in err, err
        assert not (tmp_path / "run").exists() and not list(tmp_path.glob(".run.part-*"))
        first = len(server.texts())
        assert first < n

        gate.set()  # the same command again, now served at once: only what is missing
        res = _cli(*argv)
        assert res.returncode == 0, res.stderr
        asked = server.texts()[first:]
        texts = {f"memory number {i}" for i in range(n)}
        assert set(asked) <= texts | {"which memory?", "dimension probe"}
        assert set(asked) & texts == texts - set(answered) and len(answered) == free
    finally:
        gate.set()
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.communicate()
        server.close()
