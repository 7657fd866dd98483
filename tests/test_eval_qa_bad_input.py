"""The QA path against a real local HTTP server that misbehaves: down, slow (timeout), not JSON,
not the chat-completion shape, not HTTP, an empty answer, HTTP errors. Each is counted by kind,
never a crash, and every good reply is kept (SQLite cache and the JSON-lines reply log)."""

import json
import socket
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from mempursuit_eval.qa import ChatCache, ChatClient, QAError


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        srv = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][-1]["content"]
        with srv.lock:
            srv.requests += 1
            mode = srv.script.pop(0) if srv.script else srv.default
        if mode == "slow":
            time.sleep(1.5)
            mode = "ok"
        if mode == "notjson":
            return self._raw(200, b"<html>gateway says hi</html>")
        if mode == "shape":
            return self._raw(200, json.dumps({"error": {"message": "overloaded"}}).encode())
        if mode == "nothttp":
            self.wfile.write(b"garbage that is not an HTTP status line\r\n\r\n")
            self.close_connection = True
            return
        if mode == "500":
            return self._raw(500, b'{"error": "boom"}')
        if mode == "400":
            return self._raw(400, b'{"error": "bad"}')
        content = "" if mode == "empty" else (
            "Thinking.\nANSWER: " + prompt.split("Question: ")[-1][:20]
            if "Work through Steps 1-7" in prompt else f"reply to {prompt}")
        self._raw(200, json.dumps({"choices": [{"message": {"role": "assistant",
                                                            "content": content}}]}).encode())

    def _raw(self, code, data):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.lock = threading.Lock()
    srv.requests, srv.script, srv.default = 0, [], "ok"
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(5)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens there once closed


@pytest.mark.parametrize("mode,kind", [("notjson", "malformed"), ("shape", "malformed"),
                                       ("nothttp", "malformed"), ("empty", "empty"),
                                       ("500", "http"), ("400", "http"), ("slow", "timeout")])
def test_each_kind_is_named(server, mode, kind):
    server.default = mode
    client = ChatClient(server.url, "tiny", max_retries=0, timeout=0.5)
    with pytest.raises(QAError) as exc:
        client.chat("x")
    assert exc.value.kind == kind


def test_down_endpoint_is_counted_and_later_requests_fail_fast(tmp_path):
    client = ChatClient(f"http://127.0.0.1:{_closed_port()}/v1", "tiny", max_retries=1,
                        backoff=0.01, timeout=2, concurrency=1, down_after=2)
    out = client.map([f"p{i}" for i in range(5)], tolerate=True)
    assert out == [None] * 5 and client.failures == {"down": 5}
    assert client.calls == 0


def test_mixed_failures_are_counted_and_good_replies_kept(server, tmp_path):
    log = tmp_path / "replies.jsonl"
    cache = ChatCache(tmp_path / "qa.sqlite", log=log)
    client = ChatClient(server.url, "tiny", cache=cache, max_retries=0, timeout=0.5,
                        concurrency=1)
    server.script = ["ok", "notjson", "empty", "500", "slow", "ok", "shape"]
    prompts = [f"p{i}" for i in range(7)]
    out = client.map(prompts, tolerate=True)
    assert out[0] == "reply to p0" and out[5] == "reply to p5"
    assert [o is None for o in out] == [False, True, True, True, True, False, True]
    assert client.failures == {"malformed": 2, "empty": 1, "http": 1, "timeout": 1}
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [x["reply"] for x in lines] == ["reply to p0", "reply to p5"]
    assert {x["model"] for x in lines} == {"tiny"} and lines[0]["key"] == client._key(
        [{"role": "user", "content": "p0"}])
    cache.close()
    # a rerun on ANOTHER machine: only the committed log, a fresh SQLite; a cut last line
    log.write_text(log.read_text() + '{"key": "abc", "repl', encoding="utf-8")
    fresh = ChatCache(tmp_path / "other" / "qa.sqlite", log=log)
    assert fresh.loaded == 2 and fresh.bad_log_lines == 1
    again = ChatClient(server.url, "tiny", cache=fresh, max_retries=0, timeout=0.5)
    before = server.requests
    out2 = again.map(prompts, tolerate=True)
    assert server.requests == before + 5  # only the 5 failed ones are asked again
    assert again.cache_hits == 2 and all(o is not None for o in out2)
    assert len(log.read_text().splitlines()) == 2 + 1 + 5  # good replies appended, none twice


def test_import_of_an_sqlite_cache(tmp_path):
    src = tmp_path / "qa-cache.sqlite"
    con = sqlite3.connect(src)
    con.execute("CREATE TABLE chat (key TEXT PRIMARY KEY, reply TEXT)")
    con.executemany("INSERT INTO chat VALUES (?, ?)", [("k1", "one"), ("k2", ""), ("k3", "three")])
    con.commit()
    con.close()
    log = tmp_path / "qa_cache" / "tiny.jsonl"
    cache = ChatCache(None, log=log)
    assert cache.import_sqlite(src, "tiny") == 2  # the empty reply is not a good one
    assert cache.import_sqlite(src, "tiny") == 0  # nothing twice
    assert cache.get("k3") == "three" and cache.get("k2") is None
    assert [json.loads(x)["key"] for x in log.read_text().splitlines()] == ["k1", "k3"]
    with pytest.raises(FileNotFoundError):
        cache.import_sqlite(tmp_path / "missing.sqlite")


def test_run_eval_survives_a_misbehaving_endpoint(server, tmp_path):
    pytest.importorskip("onnxruntime", reason="needs the [embed] extra")
    from mempursuit_eval import run_eval

    fixture = Path(__file__).resolve().parent / "fixtures" / "dialogue.json"
    kw = dict(dataset="locomo", data=str(fixture), units="summaries", k=(2,),
              policies=("native", "mempursuit"), limit=3, progress=False, plots=False,
              latency_sample=0, bootstrap=50, answerer_url=server.url, model="tiny",
              qa_concurrency=1, qa_retries=0, qa_timeout=0.5, qa_judge=False,
              qa_reply_log=str(tmp_path / "log.jsonl"))
    server.script = ["notjson", "empty"]
    s = run_eval(out=str(tmp_path / "run"), cache_dir=str(tmp_path / "c1"), **kw)
    q = s["qa"]
    assert q["failures"]["answer"] == {"malformed": 1, "empty": 1} and q["failed_answers"] >= 2
    assert q["judged_by_llm"] is False and q["judged"] == 0
    assert s["results"]["native"]["2"]["overall"].get("qa_accuracy") is None
    loc = s["official"]["locomo_qa"]["results"]
    assert sum(loc[p]["2"]["overall"]["failed"] for p in loc) == q["failed_answers"]
    md = (tmp_path / "run" / "summary.md").read_text()
    assert "1 empty, 1 malformed" in md and "Official LoCoMo QA scores" in md
    # resume elsewhere (a new cache folder): the log serves every good reply
    before = server.requests
    s2 = run_eval(out=str(tmp_path / "run2"), cache_dir=str(tmp_path / "c2"), **kw)
    assert server.requests - before == sum(q["failures"]["answer"].values())  # unique prompts
    assert s2["qa"]["failed_answers"] == 0 and s2["qa"]["reply_log"]["read"] > 0
