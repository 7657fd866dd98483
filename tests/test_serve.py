"""``mempursuit serve`` in process (Starlette's TestClient): the same order as the in-process
read, Cohere's shapes, the text cache, the deadline, the token, the limits and every bad input
answered in one line of JSON with its 4xx status (issue 65)."""

from __future__ import annotations

import base64
import json
import logging
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

pytest.importorskip("starlette", reason='needs pip install -e ".[serve]"')
pytest.importorskip("httpx", reason="Starlette's TestClient needs httpx")

from starlette.testclient import TestClient  # noqa: E402

from mempursuit_core import plugins  # noqa: E402
from mempursuit_core.adapter import (DEFAULT_POLICY, CandidatePool, ReadOptions,  # noqa: E402
                                     get_embedder, hookimpl, pool_signals)
from mempursuit_serve import ServeConfig, create_app  # noqa: E402
from mempursuit_serve.app import JsonFormatter  # noqa: E402
from mempursuit_serve.reader import EmbeddingCache, relevance_scores  # noqa: E402

TEXTS = ["Alice moved to Paris in 2019.", "Alice lives in Paris.", "Bob plays the violin.",
         "Paris is the capital of France.", "Alice's sister Carol lives in Lyon.",
         "Bob's violin teacher is from Vienna.", "Carol works as a nurse.",
         "Alice adopted a cat named Miso."]
QUERY = "Where does Alice's sister live and what does she do?"


def _ready(client: TestClient) -> None:
    for _ in range(600):  # bounded: 2 minutes at most
        if client.get("/ready").status_code == 200:
            return
        time.sleep(0.2)
    raise TimeoutError("the service never said ready")


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(ServeConfig(max_documents=500))) as c:
        _ready(c)
        yield c


def _pool(P=40, d=24, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(5, d))
    vectors = centres[rng.integers(0, 5, P)] + 0.3 * rng.normal(size=(P, d))
    query = centres[0] + centres[1] + 0.2 * rng.normal(size=d)
    texts = [f"memory {i} about topic {i % 5} and thing {i % 7}" for i in range(P)]
    return query, vectors, texts


def _in_process(query, vectors, texts, k, policy=DEFAULT_POLICY, options=None, titles=None,
                query_text="which topics?"):
    extra = {} if titles is None else {"titles": titles}
    pool = CandidatePool(list(range(len(texts))), query, vectors,
                         signals=pool_signals(texts, query_text, **extra))
    selector = ReadOptions(policy=policy, policy_options=options or {}).selector()
    return pool.select(selector, k).items


@pytest.mark.parametrize("policy,options", [(None, None), ("mempursuit", None), ("mmr", None),
                                            ("native", None),
                                            (DEFAULT_POLICY, {"gamma": 0.5})])
@pytest.mark.parametrize("path", ["/v1/rerank", "/v2/rerank"])
def test_the_same_order_as_the_in_process_read(client, path, policy, options):
    query, vectors, texts = _pool()
    body = {"query": "which topics?", "documents": texts, "top_n": 10,
            "query_vector": query.tolist(), "vectors": vectors.tolist()}
    if policy:
        body["policy"] = policy
    if options:
        body["policy_options"] = options
    r = client.post(path, json=body)
    assert r.status_code == 200, r.text
    got = [x["index"] for x in r.json()["results"]]
    assert got == _in_process(query, vectors, texts, 10, policy or DEFAULT_POLICY, options)
    meta = r.json()["meta"]
    assert meta["api_version"]["version"] == path[2]
    assert meta["mempursuit"]["embedded"] == 0 and not meta["mempursuit"]["deadline_exceeded"]


def _b64(a) -> str:
    return base64.b64encode(np.asarray(a, dtype="<f4").tobytes()).decode()


def test_base64_float32_vectors_give_the_same_order(client):
    query, vectors, texts = _pool(seed=5)
    query, vectors = query.astype(np.float32), vectors.astype(np.float32)
    body = {"query": "which topics?", "documents": texts, "top_n": 10,
            "query_vector": _b64(query), "vectors": _b64(vectors)}
    r = client.post("/v2/rerank", json=body)
    assert r.status_code == 200, r.text
    assert [x["index"] for x in r.json()["results"]] == _in_process(query, vectors, texts, 10)


def test_titles_go_in_as_the_titles_signal(client):
    query, vectors, texts = _pool(seed=3)
    titles = [f"Topic {i % 5}" if i % 3 else None for i in range(len(texts))]
    body = {"query": "which topics?", "documents": texts, "top_n": 12, "titles": titles,
            "query_vector": query.tolist(), "vectors": vectors.tolist()}
    got = [x["index"] for x in client.post("/v1/rerank", json=body).json()["results"]]
    assert got == _in_process(query, vectors, texts, 12, titles=titles)
    # Cohere's document objects may carry the title instead
    docs = [{"text": t, **({"title": ti} if ti else {})} for t, ti in zip(texts, titles)]
    got2 = [x["index"] for x in client.post("/v1/rerank", json={**body, "titles": None,
                                                                "documents": docs}).json()["results"]]
    assert got2 == got


def test_without_vectors_the_packaged_model_embeds_and_the_cache_keeps_the_texts(client):
    embedder = get_embedder("minilm")
    both = embedder.encode([QUERY] + TEXTS)
    want = _in_process(both[0], both[1:], TEXTS, 4, query_text=QUERY)
    texts = TEXTS + ["a text only this test sends"]
    first = client.post("/v1/rerank", json={"query": QUERY, "documents": TEXTS, "top_n": 4})
    assert [x["index"] for x in first.json()["results"]] == want
    again = client.post("/v2/rerank", json={"query": QUERY, "documents": texts, "top_n": 4})
    facts = again.json()["meta"]["mempursuit"]
    assert facts["embedded"] == 1 and facts["cache_hits"] == len(TEXTS) + 1
    assert again.headers["X-Mempursuit-Embedded"] == "1"
    assert again.headers["X-Mempursuit-Cache-Hits"] == str(len(TEXTS) + 1)


def test_the_scores_fall_with_the_policy_s_order_and_top_n_cuts(client):
    r = client.post("/v1/rerank", json={"query": QUERY, "documents": TEXTS, "top_n": 3,
                                        "return_documents": True}).json()
    scores = [x["relevance_score"] for x in r["results"]]
    assert scores == relevance_scores(3) == [1.0, 0.5, 1 / 3]
    assert all(x["document"]["text"] == TEXTS[x["index"]] for x in r["results"])
    everything = client.post("/v1/rerank", json={"query": QUERY, "documents": TEXTS}).json()
    assert sorted(x["index"] for x in everything["results"]) == list(range(len(TEXTS)))
    assert client.post("/v1/rerank", json={"query": QUERY, "documents": TEXTS,
                                           "top_n": 99}).json()["results"] == everything["results"]
    assert client.post("/v1/rerank", json={"query": QUERY, "documents": []}).json()["results"] == []


def test_a_token_budget_keeps_the_longest_prefix_that_fits(client):
    from mempursuit_core.tokens import token_counter

    query, vectors, texts = _pool(seed=5)
    body = {"query": "which topics?", "documents": texts, "top_n": 20,
            "query_vector": query.tolist(), "vectors": vectors.tolist()}
    full = [x["index"] for x in client.post("/v1/rerank", json=body).json()["results"]]
    counts = token_counter().counts(texts)
    for budget in (1, 7, 30, 10_000):
        got = [x["index"] for x in client.post(
            "/v2/rerank", json={**body, "budget_tokens": budget}).json()["results"]]
        assert got == full[:len(got)]  # a prefix of the policy's order
        assert sum(counts[i] for i in got) <= budget  # never over
        if len(got) < len(full):  # the longest that fits
            assert sum(counts[i] for i in full[:len(got) + 1]) > budget


def test_the_tei_shape(client):
    r = client.post("/rerank", json={"query": QUERY, "texts": TEXTS, "return_text": True})
    assert r.status_code == 200
    out = r.json()
    assert sorted(x["index"] for x in out) == list(range(len(TEXTS)))
    assert [x["score"] for x in out] == relevance_scores(len(TEXTS))
    assert all(x["text"] == TEXTS[x["index"]] for x in out)


def _big_vectors(P, d=4):
    return {"query_vector": [1.0] * d, "vectors": [[1.0] * d] * P}


BAD = [  # (what, body bytes, status, a fragment of the message)
    ("malformed JSON", b'{"query": "q", "documents": [', 400, "not valid JSON"),
    ("not UTF-8", b'\xff\xfe{"query"', 400, "not valid JSON"),
    ("a list body", b'["q"]', 422, "JSON object"),
    ("nested too deep", b"[" * 100_000 + b"]" * 100_000, 400, "not valid JSON"),
    ("10,000 documents", json.dumps({"query": "q", "documents": ["d"] * 10_000}).encode(), 413,
     "at most 500"),
    ("mixed vector sizes", json.dumps({"query": "q", "documents": ["a", "b"],
                                       "query_vector": [1, 0], "vectors": [[1, 0], [1, 0, 0]]}
                                      ).encode(), 422, "same size"),
    ("NaN vectors", b'{"query": "q", "documents": ["a", "b"], "query_vector": [1, 0], '
                    b'"vectors": [[1, 0], [NaN, 0]]}', 422, "finite"),
    ("an integer beyond float64", json.dumps({"query": "q", "documents": ["a"],
                                              "query_vector": [1, 0], "vectors": [[10 ** 400, 0]]}
                                             ).encode(), 422, "finite"),
    ("infinite query vector", b'{"query": "q", "documents": ["a"], "query_vector": [1, Infinity],'
                              b' "vectors": [[1, 0]]}', 422, "finite"),
    ("null in a vector", json.dumps({"query": "q", "documents": ["a"], "query_vector": [1, 0],
                                     "vectors": [[None, 0]]}).encode(), 422, "numbers only"),
    ("a string in a vector", json.dumps({"query": "q", "documents": ["a"], "query_vector": [1, 0],
                                         "vectors": [["1", 0]]}).encode(), 422, "a string"),
    ("a boolean in the query vector", json.dumps({"query": "q", "documents": ["a"],
                                                  "query_vector": [True, 0], "vectors": [[1, 0]]}
                                                 ).encode(), 422, "a boolean"),
    ("a zero query vector", json.dumps({"query": "q", "documents": ["a", "b"],
                                        "query_vector": [0, 0], "vectors": [[1, 0], [0, 1]]}
                                       ).encode(), 422, "zero norm"),
    ("base64 that is not", json.dumps({"query": "q", "documents": ["a"], "query_vector": "%%",
                                       "vectors": "AACAPw=="}).encode(), 422, "not base64"),
    ("base64 of another size", json.dumps({"query": "q", "documents": ["a", "b"],
                                           "query_vector": "AACAPwAAAAA=",
                                           "vectors": "AACAPwAAAAAAAIA/"}).encode(), 422,
     "same size"),
    ("base64 NaN", json.dumps({"query": "q", "documents": ["a"], "query_vector": "AACAPw==",
                               "vectors": "AADAfw=="}).encode(), 422, "finite"),
    ("base64 with a list", json.dumps({"query": "q", "documents": ["a"], "query_vector": [1.0],
                                       "vectors": "AACAPw=="}).encode(), 422, "both"),
    ("vectors without the query's", json.dumps({"query": "q", "documents": ["a"],
                                                "vectors": [[1, 0]]}).encode(), 422, "together"),
    ("one vector short", json.dumps({"query": "q", "documents": ["a", "b"], **_big_vectors(1)}
                                    ).encode(), 422, "2 vectors"),
    ("empty query", json.dumps({"query": "", "documents": ["a"]}).encode(), 422, "query"),
    ("blank query", json.dumps({"query": "  ", "documents": ["a"]}).encode(), 422, "query"),
    ("no documents field", json.dumps({"query": "q"}).encode(), 422, "documents"),
    ("a document that is a number", json.dumps({"query": "q", "documents": [3]}).encode(), 422,
     "documents[0]"),
    ("unknown policy", json.dumps({"query": "q", "documents": ["a"], "policy": "pursuit-center"}
                                  ).encode(), 422, "unknown selector 'pursuit-center'"),
    ("an option the policy refuses", json.dumps({"query": "q", "documents": ["a"],
                                                 "policy": "mmr", "policy_options": {"nope": 1}}
                                                ).encode(), 422, "policy 'mmr'"),
    ("top_n 0", json.dumps({"query": "q", "documents": ["a"], "top_n": 0}).encode(), 422, "top_n"),
    ("titles of another length", json.dumps({"query": "q", "documents": ["a", "b"],
                                             "titles": ["x"]}).encode(), 422, "titles"),
    ("a budget of 0 tokens", json.dumps({"query": "q", "documents": ["a"], "budget_tokens": 0}
                                        ).encode(), 422, "budget_tokens"),
    ("a budget that is text", json.dumps({"query": "q", "documents": ["a"],
                                          "budget_tokens": "500"}).encode(), 422,
     "budget_tokens"),
]


@pytest.mark.parametrize("what,body,status,fragment", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_one_line_of_json_with_its_4xx(client, what, body, status, fragment):
    r = client.post("/v1/rerank", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == status, r.text
    assert "\n" not in r.text.strip() and "Traceback" not in r.text
    out = r.json()
    assert out["status"] == status and fragment in out["message"], out


def test_unknown_paths_and_methods_are_json_too(client):
    for r, status in ((client.get("/v3/rerank"), 404), (client.get("/v1/rerank"), 405)):
        assert r.status_code == status and r.json()["status"] == status


def test_the_body_limit():
    with TestClient(create_app(ServeConfig(max_body_bytes=1000, warm_up=False))) as c:
        r = c.post("/v1/rerank", json={"query": "q", "documents": ["x" * 2000]})
        assert r.status_code == 413 and "at most 1000" in r.json()["message"]
        ok = c.post("/v1/rerank", json={"query": "q", "documents": ["x"], **_big_vectors(1)})
        assert ok.status_code == 200


def test_without_an_embedder_texts_only_requests_get_a_503_and_vectors_still_work():
    with TestClient(create_app(ServeConfig(embedder="st:", warm_up=False))) as c:
        r = c.post("/v1/rerank", json={"query": "q", "documents": ["a"]})
        assert r.status_code == 503 and "send query_vector and vectors" in r.json()["message"]
        assert c.post("/v1/rerank", json={"query": "q", "documents": ["a", "b"],
                                          **_big_vectors(2)}).status_code == 200


def test_the_bearer_token(monkeypatch):
    with pytest.raises(ValueError, match="MEMPURSUIT_TEST_TOKEN.*unset"):
        create_app(ServeConfig(token_env="MEMPURSUIT_TEST_TOKEN"))
    monkeypatch.setenv("MEMPURSUIT_TEST_TOKEN", "s3cret")
    body = {"query": "q", "documents": ["a", "b"], **_big_vectors(2)}
    with TestClient(create_app(ServeConfig(token_env="MEMPURSUIT_TEST_TOKEN",
                                           warm_up=False))) as c:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"},
                        {"Authorization": "Basic s3cret"}):
            r = c.post("/v1/rerank", json=body, headers=headers)
            assert r.status_code == 401 and r.headers["WWW-Authenticate"] == "Bearer"
            assert r.json()["status"] == 401 and "\n" not in r.text
        assert c.get("/v1/policies").status_code == 401
        ok = c.post("/v2/rerank", json=body, headers={"Authorization": "Bearer s3cret"})
        assert ok.status_code == 200
        assert c.get("/health").status_code == 200  # probes and scrapes need no token
        assert c.get("/metrics").status_code == 200


class _Waiting:
    """A policy that waits for the test to let it go (past any deadline)."""

    name = "test-waiting"
    description = "waits"
    nested = True
    go = threading.Event()

    def select(self, query, candidates, k, **kwargs):
        self.go.wait(30)
        from mempursuit_core.adapter import NativeSelector

        return NativeSelector().select(query, candidates, k, **kwargs)


class _WaitingPlugin:
    @hookimpl
    def register_selectors(self, register):
        register(_Waiting.name, _Waiting, _Waiting.description)


def test_past_the_deadline_the_input_order_comes_back_flagged():
    plugin = _WaitingPlugin()
    plugins.pm.register(plugin, name="serve-waiting-plugin")
    _Waiting.go.clear()
    try:
        with TestClient(create_app(ServeConfig(deadline_s=0.2, warm_up=False))) as c:
            body = {"query": "q", "documents": ["a", "b", "c", "d"], "top_n": 3,
                    "policy": _Waiting.name, **_big_vectors(4)}
            r = c.post("/v1/rerank", json=body)
            _Waiting.go.set()
            assert r.status_code == 200
            assert [x["index"] for x in r.json()["results"]] == [0, 1, 2]
            assert r.json()["meta"]["mempursuit"]["deadline_exceeded"] is True
            assert r.headers["X-Mempursuit-Deadline-Exceeded"] == "true"
            assert "mempursuit_deadline_exceeded_total 1" in c.get("/metrics").text
    finally:
        _Waiting.go.set()
        plugins.pm.unregister(plugin)


def test_health_ready_policies_and_metrics(client):
    assert client.get("/health").json() == {"status": "ok"}
    assert client.get("/ready").json() == {"status": "ready", "embedder": True}
    listed = client.get("/v1/policies").json()
    assert listed["default"] == DEFAULT_POLICY and "mempursuit" in listed["policies"]
    client.post("/v1/rerank", content=b"{")
    text = client.get("/metrics").text
    assert text.endswith("\n")
    lines = [l for l in text.splitlines() if l and not l.startswith("#")]
    samples = dict(l.rsplit(" ", 1) for l in lines)
    assert float(samples['mempursuit_requests_total{path="/v1/rerank",status="400"}']) >= 1
    assert float(samples['mempursuit_request_seconds_bucket{le="+Inf"}']) == float(
        samples["mempursuit_request_seconds_count"])
    for name in ("mempursuit_documents_total", "mempursuit_embedded_texts_total",
                 "mempursuit_cache_hits_total", "mempursuit_cache_entries", "mempursuit_ready"):
        assert name in samples, name


def test_each_request_is_one_structured_log_record(client, caplog):
    with caplog.at_level(logging.INFO, logger="mempursuit.serve"):
        r = client.post("/v1/rerank", json={"query": QUERY, "documents": TEXTS[:3], "top_n": 2},
                        headers={"X-Request-Id": "req-42"})
    assert r.headers["X-Request-Id"] == "req-42" and r.json()["id"] == "req-42"
    record = next(rec for rec in caplog.records if getattr(rec, "fields", {}).get(
        "request_id") == "req-42")
    line = json.loads(JsonFormatter().format(record))
    assert line["event"] == "rerank" and line["level"] == "info"
    assert {"status": 200, "documents": 3, "top_n": 2, "path": "/v1/rerank"}.items() <= line.items()
    assert {"ts", "ms", "policy", "embedded", "cache_hits", "deadline_exceeded"} <= set(line)


def test_the_embedding_cache_is_bounded():
    cache = EmbeddingCache(2)
    cache.put_many(["a", "b"], np.eye(2))
    assert cache.get_many(["a"])[0] is not None  # "a" used last: "b" goes first
    cache.put_many(["c"], np.ones((1, 2)))
    assert len(cache) == 2 and cache.get_many(["b"]) == [None]
    assert EmbeddingCache(0).put_many(["a"], np.eye(1)) is None and len(EmbeddingCache(0)) == 0


def test_the_settings_travel_to_the_workers_through_the_environment():
    config = ServeConfig(max_documents=7, deadline_s=1.5, policy="mmr", token_env="X")
    assert ServeConfig.from_env(config.to_env()) == config
    with pytest.raises(ValueError, match="max_documents"):
        ServeConfig(max_documents=0)


def test_the_command_is_registered_through_the_plugin_host():
    res = subprocess.run([sys.executable, "-m", "mempursuit_core", "serve", "--help"],
                         capture_output=True, text=True)
    assert res.returncode == 0 and "--token-env" in res.stdout and "--deadline" in res.stdout
    bad = subprocess.run([sys.executable, "-m", "mempursuit_core", "serve", "--token-env",
                          "MEMPURSUIT_SURELY_UNSET"], capture_output=True, text=True,
                         env={"PATH": "", "HF_HUB_OFFLINE": "1"})
    assert bad.returncode == 2 and "MEMPURSUIT_SURELY_UNSET" in bad.stderr
