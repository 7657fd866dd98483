"""The read as a rerank service: ``mempursuit serve``, asked with the standard library only.

Starts ``mempursuit serve`` on a free loopback port (as ``mempursuit serve --port 8080`` would
run it for you), posts Cohere's ``/v1/rerank`` request with ``urllib`` and prints the input
order's top 2 beside the default read policy's. Any HTTP client in any language works the same
way (docs/serve.md; Node.js: examples/serve_node_fetch.mjs).

    # in the root of a checkout of mempursuit (until the first release: README, Install)
    pip install -e ".[serve]"
    python examples/serve_quickstart.py
"""

import json
import urllib.request

from mempursuit_serve.local import LocalService
from _sample import FACTS, QUESTION  # the sample memories (examples/_sample.py)


def rerank(url: str, body: dict) -> dict:
    request = urllib.request.Request(url + "/v1/rerank", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def main():
    with LocalService() as service:
        # the framework's pool, in its own order (here: the facts as listed)
        answer = rerank(service.url, {"query": QUESTION, "documents": FACTS, "top_n": 2})
        print("input order's top 2:")
        for text in FACTS[:2]:
            print("  -", text)
        print(f"the read's top 2 ({answer['meta']['mempursuit']['policy']}):")
        for result in answer["results"]:
            print(f"  - {FACTS[result['index']]}  (relevance_score {result['relevance_score']:.2f})")
        again = rerank(service.url, {"query": QUESTION, "documents": FACTS, "top_n": 2})
        facts = again["meta"]["mempursuit"]
        print(f"asked again: {facts['embedded']} texts embedded, {facts['cache_hits']} from the cache")


if __name__ == "__main__":
    main()
