"""End-to-end QA client against a real local HTTP server speaking the OpenAI chat format."""

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from mempursuit_eval.qa import (
    ChatCache,
    ChatClient,
    QAError,
    build_answer_prompt,
    build_judge_prompt,
    format_memories,
    parse_answer,
    parse_judgement,
    read_judgement,
    split_answer,
)


def _tiny_model(prompt: str) -> str:
    """A deterministic stand-in 'LLM': answers with the first memory, judges by word overlap."""
    if "Work through Steps 1-7" in prompt:
        mem = re.search(r"^- (?:\[[^\]]*\] )?(.*)$", prompt, re.M)
        return "I scanned the memories.\nANSWER: " + (mem.group(1) if mem else "unknown")
    if "label an answer" in prompt:
        gold = re.search(r"^Gold answer: (.*)$", prompt, re.M).group(1).lower()
        gen = re.search(r"^Generated answer: (.*)$", prompt, re.M).group(1).lower()
        words = [w for w in re.findall(r"\w+", gold) if len(w) > 3]
        ok = any(w in gen for w in words)
        return f'Overlap check. {{"label": "{"CORRECT" if ok else "WRONG"}"}}'
    return "hello"


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        srv = self.server
        with srv.lock:
            srv.requests += 1
            n = srv.requests
            srv.inflight += 1
            srv.max_inflight = max(srv.max_inflight, srv.inflight)
            srv.auth.append(self.headers.get("Authorization"))
        try:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            time.sleep(srv.delay)
        finally:  # before the reply: once it is sent the client may send its next request
            with srv.lock:
                srv.inflight -= 1
        if self.path != "/v1/chat/completions":
            return self._send(404, {"error": "not found"})
        if n <= srv.fail_first:
            return self._send(500, {"error": "try again"})
        if srv.status != 200:
            return self._send(srv.status, {"error": "bad request"})
        prompt = body["messages"][-1]["content"]
        srv.models.append(body["model"])
        self._send(200, {"id": "x", "object": "chat.completion", "model": body["model"],
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant",
                                                  "content": _tiny_model(prompt)}}]})

    def _send(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.lock = threading.Lock()
    srv.requests = srv.inflight = srv.max_inflight = 0
    srv.fail_first, srv.status, srv.delay = 0, 200, 0.0
    srv.auth, srv.models = [], []
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(5)


def test_retries_then_caches(server, tmp_path):
    server.fail_first = 2
    cache = ChatCache(tmp_path / "qa.sqlite")
    client = ChatClient(server.url, "tiny", cache=cache, backoff=0.01, max_retries=3)
    assert client.chat("say hi") == "hello"
    assert server.requests == 3 and client.calls == 1
    assert client.chat("say hi") == "hello"
    assert server.requests == 3 and client.cache_hits == 1
    cache.close()
    # a new client on the same cache file (a re-run) costs nothing
    again = ChatClient(server.url, "tiny", cache=ChatCache(tmp_path / "qa.sqlite"))
    assert again.chat("say hi") == "hello" and server.requests == 3
    # another model is another cache key
    other = ChatClient(server.url, "tiny-2", cache=ChatCache(tmp_path / "qa.sqlite"))
    other.chat("say hi")
    assert server.requests == 4 and server.models[-1] == "tiny-2"


def test_errors_are_clear(server):
    server.status = 400
    client = ChatClient(server.url, "tiny", backoff=0.01, max_retries=3)
    with pytest.raises(QAError, match="HTTP 400"):
        client.chat("x")
    assert server.requests == 1  # a bad request is not retried
    server.status, server.fail_first = 200, 100
    with pytest.raises(QAError, match="giving up after 2 attempts"):
        ChatClient(server.url, "tiny", backoff=0.01, max_retries=1).chat("y")
    closed = ChatClient("http://127.0.0.1:9/v1", "tiny", backoff=0.01, max_retries=1, timeout=2)
    with pytest.raises(QAError, match="giving up"):
        closed.chat("z")
    with pytest.raises(ValueError):
        ChatClient("", "tiny")


def test_bounded_concurrency_and_auth(server, monkeypatch):
    server.delay = 0.05
    monkeypatch.setenv("MEMPURSUIT_TEST_KEY", "sk-test")
    client = ChatClient(server.url + "/chat/completions", "tiny", concurrency=3,
                        api_key_env="MEMPURSUIT_TEST_KEY")
    prompts = [f"q{i}" for i in range(12)] + ["q0", "q1"]
    done = []
    out = client.map(prompts, progress=done.append)
    assert out == ["hello"] * 14
    assert server.requests == 12 and sum(done) == 12  # duplicates sent once
    assert 2 <= server.max_inflight <= 3
    assert set(server.auth) == {"Bearer sk-test"}
    monkeypatch.delenv("MEMPURSUIT_TEST_KEY")
    server.auth.clear()
    ChatClient(server.url, "tiny", api_key_env="MEMPURSUIT_TEST_KEY").chat("no key")
    assert server.auth == [None]


def test_prompts_follow_the_paper():
    mems = [("2023-05-08T13:56:00", "Caroline: went to a support group"),
            ("2023-01-02T00:00:00", "Melanie: painted a sunrise"), (None, "undated note")]
    block = format_memories(mems)
    assert block.index("painted a sunrise") < block.index("support group") < block.index("undated")
    assert "- [8 May 2023, 1:56 pm] Caroline" in block and "- [2 January 2023] Melanie" in block
    p = build_answer_prompt("What did Caroline do?", mems, reference_date="2023-10-22T09:55:00")
    assert "These conversations took place around 22 October 2023, 9:55 am" in p
    assert p.rstrip().endswith('give your final answer after "ANSWER:".')
    assert "Question: What did Caroline do?" in p and "## Step 7: COMMIT AND ANSWER" in p
    assert "around 2023." in build_answer_prompt("q", [])
    j = build_judge_prompt("Q?", "Paris; France", "it was paris", category="open-domain")
    assert "Gold answer: Paris\n" in j and "Generated answer: it was paris" in j
    assert 'json format with the key as "label"' in j
    assert "Gold answer: Paris; France" in build_judge_prompt("Q?", "Paris; France", "x")
    assert "## Evidence" in build_judge_prompt("Q?", "a", "b", evidence_context="D1:3 ...")
    assert parse_answer("thinking...\nANSWER: 7 May 2023") == "7 May 2023"
    assert parse_answer("no marker") == "no marker"
    assert parse_judgement('reason. {"label": "CORRECT"}') is True
    assert parse_judgement('{"label":"WRONG"}') is False
    assert parse_judgement("The answer is WRONG") is False
    assert parse_judgement("maybe") is None


def test_replies_of_small_models_are_read_or_counted():
    """Shapes that SmolLM2-135M / Qwen2.5-1.5B wrote through llama.cpp's server."""
    assert split_answer("Step 1 ... Step 7.\n**ANSWER:** Gothenburg") == ("Gothenburg", True)
    assert split_answer("reasoning\nFinal answer: 7 May 2023") == ("7 May 2023", True)
    assert split_answer("answer: a cat") == ("a cat", True)
    # cut off by max_tokens before the marker: the whole reply, flagged
    assert split_answer("1. 2023-04-19: Priya: Tortoises are") == ("1. 2023-04-19: Priya: Tortoises are", False)
    assert split_answer("") == ("", False)
    assert read_judgement('The answer matches.\n```json\n{"label": "CORRECT"}\n```') == (True, "json")
    assert read_judgement("{'label': 'wrong'}") == (False, "json")
    assert read_judgement('{"label": "CORRECT"} ... {"label": "WRONG"}') == (False, "json")  # the last
    assert read_judgement("This answer was CORRECT, as it matches") == (True, "word")
    # both words (the prompt forbids it) or neither: unparsed, never guessed
    assert read_judgement("The correct answer is: 1. Pickle\nCORRECT\nWRONG") == (None, "ambiguous")
    assert read_judgement("The correct answer is: 2.") == (None, "none")
    assert read_judgement("") == (None, "none")


def test_run_eval_with_qa(server, tmp_path):
    pytest.importorskip("onnxruntime", reason='needs the [embed] extra')
    from mempursuit_eval import run_eval

    # The project's LoCoMo-format fixture: the QA mechanics need no benchmark file.
    fixture = Path(__file__).resolve().parent / "fixtures" / "dialogue.json"
    kw = dict(dataset="locomo", data=str(fixture), units="summaries",
              k=(2, 4), policies=("native", "mempursuit"), limit=4, cache_dir=str(tmp_path),
              progress=False, plots=False, latency_sample=0, bootstrap=100,
              answerer_url=server.url, model="tiny", qa_k=(2,), qa_concurrency=2)
    s = run_eval(out=str(tmp_path / "run"), **kw)
    acc = s["results"]["mempursuit"]["2"]["overall"]["qa_accuracy"]
    assert 0.0 <= acc <= 100.0 and s["results"]["mempursuit"]["2"]["overall"]["n_qa"] == 4
    assert s["results"]["native"]["4"]["overall"].get("qa_accuracy") is None  # not asked at K=4
    assert s["paired"]["mempursuit"]["2"]["overall"]["qa_accuracy"]["test"] == "mcnemar-exact"
    assert s["qa"]["model"] == "tiny" and s["qa"]["calls"] == server.requests
    assert s["qa"]["unparsed_judgements"] == 0 and s["qa"]["verdicts"]["json"] == 8
    md = (tmp_path / "run" / "summary.md").read_text()
    assert "unparsed verdicts: 0 of 8" in md and "| McNemar p | session coverage % |" in md
    rec = json.loads((tmp_path / "run" / "questions.jsonl").read_text().splitlines()[0])
    assert set(rec["qa"]) == {"native", "mempursuit"} and "answer" in rec["qa"]["native"]["2"]
    first = server.requests
    s2 = run_eval(**kw)  # a re-run: every answer and verdict comes from the cache
    assert server.requests == first and s2["qa"]["calls"] == 0
    assert s2["results"]["mempursuit"]["2"]["overall"]["qa_accuracy"] == acc
