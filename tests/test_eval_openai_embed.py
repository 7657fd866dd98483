"""``--embedder openai:MODEL`` against a real HTTP server on 127.0.0.1 (http.server in a thread)."""

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from mempursuit_core.cli import main as cli_main
from mempursuit_eval.openai_embed import (EmbeddingRequestError, OpenAIEmbedder,
                                          RemoteCachedEmbedder, embeddings_url, make_embedder)

from embed_server import DIM, Server, hash_vector


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()


def _emb(server, **kw):
    kw.setdefault("backoff", 0.01)
    kw.setdefault("batch_size", 2)
    return OpenAIEmbedder("test-model", server.url, **kw)


TEXTS = [f"text number {i}" for i in range(7)]


def test_url_rule():
    assert embeddings_url("http://h:1") == "http://h:1/v1/embeddings"
    assert embeddings_url("http://h:1/") == "http://h:1/v1/embeddings"
    assert embeddings_url("http://h:1/v1") == "http://h:1/v1/embeddings"
    assert embeddings_url("http://h:1/v1/embeddings") == "http://h:1/v1/embeddings"
    with pytest.raises(EmbeddingRequestError, match="needs --embedder-url"):
        embeddings_url(None)
    with pytest.raises(EmbeddingRequestError, match="http:// or https://"):
        embeddings_url("localhost:8000")


def test_normal_path_and_cache(server, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_KEY", "sekret")
    emb = RemoteCachedEmbedder(_emb(server, key_env="MY_KEY", concurrency=3), tmp_path)
    out = emb.encode(TEXTS)
    assert out.dtype == np.float32 and out.shape == (7, DIM)
    assert np.array_equal(out, np.asarray([hash_vector(t) for t in TEXTS], dtype=np.float32))
    assert len(server.requests) == 4  # batches of 2
    assert {r["auth"] for r in server.requests} == {"Bearer sekret"}
    assert {r["body"]["model"] for r in server.requests} == {"test-model"}
    assert sorted(server.texts()) == sorted(TEXTS)
    # a second run (new process state, same cache dir) makes zero requests
    again = RemoteCachedEmbedder(_emb(server, key_env="MY_KEY"), tmp_path)
    assert np.array_equal(again.encode(TEXTS), out) and again.dim == DIM
    assert len(server.requests) == 4 and again.hits == 7 and again.misses == 0


def test_no_key_no_authorization_header(server):
    _emb(server, key_env="SURELY_UNSET_VAR_123").encode(["a"])
    _emb(server).encode(["b"])
    assert [r["auth"] for r in server.requests] == [None, None]


def test_401_names_url_and_env_var(server, tmp_path, monkeypatch):
    monkeypatch.delenv("MY_KEY", raising=False)
    server.plan = [401]
    with pytest.raises(EmbeddingRequestError) as info:
        _emb(server, key_env="MY_KEY").encode(["a"])
    msg = str(info.value)
    assert "\n" not in msg and server.url + "/v1/embeddings" in msg and "HTTP 401" in msg
    assert "$MY_KEY is not set" in msg
    monkeypatch.setenv("MY_KEY", "wrong")
    server.plan = [401]
    with pytest.raises(EmbeddingRequestError, match=r"check the API key in \$MY_KEY"):
        _emb(server, key_env="MY_KEY").encode(["a"])
    assert len(server.requests) == 2  # no retry on 401


def test_429_then_success_honours_retry_after(server):
    server.plan = [429]
    emb = _emb(server, concurrency=1)
    t = time.perf_counter()
    out = emb.encode(["a", "b"])
    assert time.perf_counter() - t >= 0.9  # Retry-After: 1 (not the 0.01 s backoff)
    assert emb.retried == 1 and emb.requests == 2 and len(server.requests) == 2
    assert np.array_equal(out[1], np.float32(hash_vector("b")))


def test_500_persistent_then_rerun_only_missing(server, tmp_path):
    emb = RemoteCachedEmbedder(_emb(server, concurrency=1, retries=2), tmp_path)
    # batch 1 ok, batch 2 fails 3 times (1 + 2 retries)
    server.plan = [None, 500, 500, 500]
    with pytest.raises(EmbeddingRequestError) as info:
        emb.encode(TEXTS[:4])
    msg = str(info.value)
    assert "\n" not in msg and "HTTP 500" in msg and "after 3 attempt(s)" in msg
    assert server.url in msg
    assert len(server.requests) == 4
    # the server is fixed: a rerun asks only for what is missing
    server.requests.clear()
    rerun = RemoteCachedEmbedder(_emb(server, concurrency=1), tmp_path)
    out = rerun.encode(TEXTS[:4])
    assert sorted(server.texts()) == sorted(TEXTS[2:4])
    assert np.array_equal(out, np.asarray([hash_vector(t) for t in TEXTS[:4]], np.float32))


def test_wrong_dimension(server, tmp_path):
    server.plan = [None, ("dim", DIM + 3)]
    emb = RemoteCachedEmbedder(_emb(server, concurrency=1), tmp_path)
    with pytest.raises(EmbeddingRequestError, match=rf"got {DIM + 3}-dimensional vectors, "
                                                    rf"expected {DIM} \(the first answer\)"):
        emb.encode(TEXTS[:4])
    with pytest.raises(EmbeddingRequestError, match=r"expected 5 \(--embedder-dim\)"):
        _emb(server, expected_dim=5).encode(["z"])
    server.requests.clear()
    out = RemoteCachedEmbedder(_emb(server), tmp_path).encode(TEXTS[:4])
    assert sorted(server.texts()) == sorted(TEXTS[2:4]) and out.shape == (4, DIM)


def test_timeout_retried_then_clear_error(server, tmp_path):
    server.plan = [("sleep", 1.0)]
    emb = _emb(server, timeout=0.3, concurrency=1)
    assert emb.encode(["a"]).shape == (1, DIM) and emb.retried == 1  # timed out once, then ok
    server.plan = [("sleep", 1.0)] * 2
    with pytest.raises(EmbeddingRequestError, match=r"timed out after 0.3 s after 2 attempt\(s\)"):
        _emb(server, timeout=0.3, retries=1).encode(["b"])


def test_unreachable_server_is_one_line():
    with pytest.raises(EmbeddingRequestError, match=r"cannot connect .* after 2 attempt\(s\)"):
        OpenAIEmbedder("m", "http://127.0.0.1:9", retries=1, backoff=0.01).encode(["a"])


def test_make_embedder_and_help(capsys):
    assert isinstance(make_embedder("openai:m", url="http://x"), OpenAIEmbedder)
    with pytest.raises(ValueError, match="--embedder-url only apply to --embedder openai:MODEL"):
        make_embedder("minilm", url="http://x")
    with pytest.raises(ValueError, match="openai:MODEL"):
        make_embedder("nonsense")
    with pytest.raises(SystemExit):
        cli_main(["eval", "--help"])
    text = capsys.readouterr().out
    assert "st:NAME_OR_DIR" in text and "openai:MODEL" in text and "minilm" in text
    assert "--embedder-url" in text and "--mem0-config" in text
    help_line = text.split("--embedder EMBEDDER")[1].split("--embed-threads")[0]
    assert "..." not in help_line


# ------------------------------------------------------------------ through `mempursuit eval`

LOCOMO = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo" / "locomo10.json"


def _small_locomo(tmp_path) -> Path:
    """conv-26's first three sessions and the questions whose evidence lies there."""
    from mempursuit_eval.datasets.custom import write_custom
    from mempursuit_eval.datasets import load_dataset

    ds = load_dataset("locomo", LOCOMO)
    keep = {f"conv-26/S{i}" for i in (1, 2, 3)}
    units = [u for u in ds.units if u.session_id in keep]
    qs = [q for q in ds.questions if q.group == "conv-26" and q.gold_sessions
          and set(q.gold_sessions) <= keep and q.category != "adversarial"]
    ds.units, ds.questions = units, qs
    return write_custom(ds, tmp_path / "small.json")


@pytest.mark.slow  # a real benchmark file or model
@pytest.mark.skipif(not LOCOMO.exists(), reason="benchmark data in ../shared/data")
def test_served_minilm_reproduces_minilm_exactly(tmp_path, monkeypatch, capsys):
    pytest.importorskip("onnxruntime")
    from mempursuit_core.embed import get_embedder

    minilm = get_embedder("minilm", threads=1)
    lock = threading.Lock()

    def serve(text):
        with lock:
            return minilm.encode([text])[0].tolist()

    srv = Server(serve)
    try:
        data = _small_locomo(tmp_path)
        common = ["eval", "--dataset", "custom", "--data", str(data), "--k", "10", "20",
                  "--pool", "50", "--quiet", "--no-plots", "--bootstrap", "200",
                  "--latency-sample", "0", "--embed-threads", "1"]
        assert cli_main(common + ["--embedder", "minilm", "--cache-dir", str(tmp_path / "c1"),
                                  "--out", str(tmp_path / "a")]) == 0
        monkeypatch.setenv("EMB_KEY", "k")
        remote = common + ["--embedder", "openai:all-MiniLM-L6-v2", "--embedder-url",
                           srv.url + "/v1", "--embedder-key-env", "EMB_KEY",
                           "--embedder-batch", "16", "--embedder-dim", "384",
                           "--cache-dir", str(tmp_path / "c2")]
        assert cli_main(remote + ["--out", str(tmp_path / "b")]) == 0
        n = len(srv.requests)
        assert n > 0
        assert cli_main(remote + ["--out", str(tmp_path / "c")]) == 0
        assert len(srv.requests) == n  # the second run is served by the cache alone
        capsys.readouterr()
    finally:
        srv.close()
    a, b, c = (json.loads((tmp_path / x / "summary.json").read_text()) for x in "abc")
    assert a["n_scored"] >= 10
    assert a["results"] == b["results"] == c["results"]
    assert a["paired"] == b["paired"]
    assert b["embedder"] == "openai:all-MiniLM-L6-v2"


def test_cli_error_is_one_line(server, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    data = tmp_path / "d.json"
    data.write_text(json.dumps({"memories": [{"id": "m", "text": "a memory"}],
                                "questions": [{"id": "q", "question": "what?", "gold": ["m"]}]}))
    server.plan = [401] * 10
    rc = cli_main(["eval", "--dataset", "custom", "--data", str(data), "--quiet", "--no-plots",
                   "--cache-dir", str(tmp_path / "c"), "--out", str(tmp_path / "run"),
                   "--embedder", "openai:m", "--embedder-url", server.url,
                   "--embedder-key-env", "NO_SUCH_KEY_VAR"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert "HTTP 401" in err and "$NO_SUCH_KEY_VAR is not set" in err and server.url in err
    rc = cli_main(["eval", "--dataset", "custom", "--data", str(data), "--quiet",
                   "--embedder", "openai:m", "--no-cache", "--out", str(tmp_path / "r2")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "needs --embedder-url" in err
