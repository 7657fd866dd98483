"""``mempursuit serve`` as a real process under uvicorn: two workers, one killed while clients
keep asking, the other keeps answering; every request answered or a clear connection error;
the log is JSON lines (issue 65)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import threading
import time

import pytest

pytest.importorskip("starlette", reason='needs pip install -e ".[serve]"')
pytest.importorskip("uvicorn", reason='needs pip install -e ".[serve]"')

from mempursuit_serve.local import LocalService  # noqa: E402

pytestmark = pytest.mark.slow  # a process with two workers, each loading the model

BODY = {"query": "where does Alice live", "top_n": 3,
        "documents": ["Alice lives in Paris", "Bob plays the violin", "Alice moved in 2019",
                      "Paris is in France", "Carol lives in Lyon"]}


def test_two_workers_one_killed_mid_run_the_other_keeps_answering(tmp_path):
    log = tmp_path / "serve.log"
    env = {"HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "MEM0_TELEMETRY": "False"}
    with LocalService("--threads", "1", workers=2, env=env, log=log) as service:
        workers = service.workers()
        assert len(workers) == 2, workers
        outcomes: list[str] = []
        stop = threading.Event()

        def client():
            while not stop.is_set():
                try:
                    status, body = service.post("/v1/rerank", BODY, timeout=30)
                    outcomes.append("ok" if status == 200 and len(body["results"]) == 3
                                    else f"status {status}")
                except (OSError, http.client.HTTPException) as exc:  # the killed worker's connection
                    outcomes.append(f"connection error: {type(exc).__name__}")

        threads = [threading.Thread(target=client) for _ in range(4)]
        for t in threads:
            t.start()
        for _ in range(300):  # bounded: until some answers came back
            if outcomes.count("ok") >= 10:
                break
            time.sleep(0.1)
        os.kill(workers[0], signal.SIGKILL)
        killed_at = len(outcomes)
        for _ in range(600):  # bounded: until the survivor answered 30 more
            if outcomes[killed_at:].count("ok") >= 30:
                break
            time.sleep(0.1)
        stop.set()
        for t in threads:
            t.join(60)
        after = outcomes[killed_at:]
        assert after.count("ok") >= 30, after[-10:]
        failures = [o for o in outcomes if o != "ok"]
        # only requests in flight on the killed worker may fail, and only as connection errors
        assert len(failures) <= len(threads), failures
        assert all(f.startswith("connection error") for f in failures), failures
        assert service.post("/v2/rerank", BODY)[0] == 200
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    requests = [line for line in lines if line.get("event") == "rerank"]
    assert requests and all({"ts", "level", "status", "ms", "request_id"} <= set(r)
                            for r in requests)


def test_a_body_that_stops_arriving_is_a_408_at_the_deadline():
    env = {"HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    with LocalService("--deadline", "0.5", "--no-warm-up", env=env) as service:
        with socket.create_connection(("127.0.0.1", service.port), timeout=30) as sock:
            sock.sendall(b"POST /v1/rerank HTTP/1.1\r\nHost: x\r\nContent-Type: "
                         b"application/json\r\nContent-Length: 1000\r\n\r\n{\"query\": ")
            reply = http.client.HTTPResponse(sock)
            reply.begin()
            assert reply.status == 408
            assert json.loads(reply.read())["status"] == 408
