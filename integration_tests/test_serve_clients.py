"""Real clients of ``mempursuit serve`` (issue 65): the official ``cohere`` Python SDK pointed at
the service by ``base_url``, Haystack's own ``CohereRanker`` (cohere-haystack) configured by
``api_base_url``, and a Node.js client with plain ``fetch`` (when ``node`` is on PATH). Each gets
the order the in-process read gives; a wrong token and bad input come back as their 4xx."""

from __future__ import annotations

import gc
import json
import shutil
import subprocess
import warnings

import numpy as np
import pytest

pytest.importorskip("starlette", reason='needs pip install -e ".[serve]"')
cohere = pytest.importorskip("cohere", reason="needs pip install -r .ci/requirements-serve.txt")

from mempursuit_core.adapter import (DEFAULT_POLICY, CandidatePool, ReadOptions,  # noqa: E402
                                     get_embedder, pool_signals)
from mempursuit_serve.local import LocalService  # noqa: E402

pytestmark = pytest.mark.slow  # a service process, the model loaded twice (it and the test)

TOKEN = "integration-token"
QUERY = "Where does Alice's sister live and what does she do?"
TEXTS = ["Alice moved to Paris in 2019.", "Alice lives in Paris.", "Bob plays the violin.",
         "Paris is the capital of France.", "Alice's sister Carol lives in Lyon.",
         "Bob's violin teacher is from Vienna.", "Carol works as a nurse.",
         "Alice adopted a cat named Miso.", "Alice and Carol grew up in Nantes.",
         "Lyon is known for its food."]


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    env = {"MEMPURSUIT_IT_TOKEN": TOKEN, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    with LocalService("--token-env", "MEMPURSUIT_IT_TOKEN", env=env, log=log) as s:
        yield s


@pytest.fixture
def http():
    """The SDK's HTTP client, closed after the test (the SDK leaves its own open)."""
    import httpx

    with httpx.Client(timeout=60) as client:
        yield client


def _expected(k: int, policy: str = DEFAULT_POLICY, vectors=None) -> list[int]:
    """The in-process read's order for QUERY over TEXTS (the packaged model's vectors)."""
    if vectors is None:
        both = get_embedder("minilm").encode([QUERY] + TEXTS)
        vectors = both[0], both[1:]
    pool = CandidatePool(list(range(len(TEXTS))), vectors[0], vectors[1],
                         signals=pool_signals(TEXTS, QUERY))
    return pool.select(ReadOptions(policy=policy).selector(), k).items


def test_the_cohere_sdk_v2_and_v1_clients(service, http):
    co = cohere.ClientV2(api_key=TOKEN, base_url=service.url, httpx_client=http)
    r = co.rerank(model="mempursuit", query=QUERY, documents=TEXTS, top_n=4)
    assert [x.index for x in r.results] == _expected(4)
    assert [x.relevance_score for x in r.results] == sorted(
        (x.relevance_score for x in r.results), reverse=True)
    v1 = cohere.Client(api_key=TOKEN, base_url=service.url, httpx_client=http)
    r1 = v1.rerank(model="mempursuit", query=QUERY, documents=TEXTS, top_n=4,
                   return_documents=True)
    assert [x.index for x in r1.results] == _expected(4)
    assert [x.document.text for x in r1.results] == [TEXTS[i] for i in _expected(4)]


def test_the_sdk_sends_the_extension_fields(service, http):
    """Stored vectors and a policy go through the SDK's additional body parameters."""
    rng = np.random.default_rng(1)
    query, vectors = rng.normal(size=16), rng.normal(size=(len(TEXTS), 16))
    co = cohere.ClientV2(api_key=TOKEN, base_url=service.url, httpx_client=http)
    r = co.rerank(model="mempursuit", query=QUERY, documents=TEXTS, top_n=5, request_options={
        "additional_body_parameters": {"policy": "mmr", "query_vector": query.tolist(),
                                       "vectors": vectors.tolist()}})
    assert [x.index for x in r.results] == _expected(5, "mmr", (query, vectors))


def test_the_sdk_raises_its_own_errors_for_a_wrong_token_and_bad_input(service, http):
    with pytest.raises(cohere.errors.UnauthorizedError) as wrong:
        cohere.ClientV2(api_key="wrong", base_url=service.url, httpx_client=http).rerank(
            model="m", query=QUERY, documents=TEXTS)
    assert wrong.value.status_code == 401 and "bearer token" in wrong.value.body["message"]
    co = cohere.ClientV2(api_key=TOKEN, base_url=service.url, httpx_client=http)
    with pytest.raises(cohere.errors.UnprocessableEntityError) as bad:
        co.rerank(model="m", query=QUERY, documents=TEXTS,
                  request_options={"additional_body_parameters": {"policy": "nope"}})
    assert bad.value.status_code == 422 and "unknown selector 'nope'" in bad.value.body["message"]


def test_haystack_s_cohere_ranker_configured_by_url(service):
    haystack = pytest.importorskip("haystack", reason='needs pip install -e ".[haystack]"')
    ranker_module = pytest.importorskip("haystack_integrations.components.rankers.cohere",
                                        reason="needs pip install -r .ci/requirements-serve.txt")
    from haystack.utils import Secret

    ranker = ranker_module.CohereRanker(model="mempursuit", top_k=4,
                                        api_key=Secret.from_token(TOKEN),
                                        api_base_url=service.url)
    documents = [haystack.Document(content=t) for t in TEXTS]
    out = ranker.run(query=QUERY, documents=documents)["documents"]
    with warnings.catch_warnings():  # the ranker never closes its SDK client's connection
        warnings.simplefilter("ignore", ResourceWarning)
        del ranker
        gc.collect()
    assert [d.content for d in out] == [TEXTS[i] for i in _expected(4)]
    assert [d.score for d in out] == sorted((d.score for d in out), reverse=True)


NODE_CLIENT = r"""
const [url, token, body] = process.argv.slice(2);
const res = await fetch(url + "/v2/rerank", {
  method: "POST",
  headers: {"Content-Type": "application/json", "Authorization": "Bearer " + token},
  body,
});
const text = await res.text();
console.log(JSON.stringify({status: res.status, oneLine: !text.trim().includes("\n"),
                            body: JSON.parse(text)}));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not on PATH")
def test_a_node_client_with_plain_fetch(service, tmp_path):
    script = tmp_path / "client.mjs"
    script.write_text(NODE_CLIENT)

    def call(body, token=TOKEN):
        res = subprocess.run(["node", str(script), service.url, token, json.dumps(body)],
                             capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout)

    ok = call({"model": "mempursuit", "query": QUERY, "documents": TEXTS, "top_n": 4})
    assert ok["status"] == 200 and [x["index"] for x in ok["body"]["results"]] == _expected(4)
    bad = call({"query": "", "documents": TEXTS})
    assert bad["status"] == 422 and bad["oneLine"] and "query" in bad["body"]["message"]
    assert call({"query": QUERY, "documents": TEXTS}, token="wrong")["status"] == 401
