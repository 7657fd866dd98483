"""The read through the official Cohere Python SDK: point ``base_url`` at ``mempursuit serve``.

Nothing else changes in code that reranks with Cohere: ``co.rerank(model=..., query=...,
documents=..., top_n=...)`` returns the read policy's order. What a memory store already has
(the stored vectors, a policy) goes in through the SDK's ``additional_body_parameters``.

    # in the root of a checkout of mempursuit (until the first release: README, Install)
    pip install -e ".[serve]" cohere
    python examples/serve_cohere_sdk.py
"""

import cohere
import numpy as np

from mempursuit_core.adapter import get_embedder
from mempursuit_serve.local import LocalService
from _sample import FACTS, QUESTION  # the sample memories (examples/_sample.py)


def main():
    with LocalService("--token-env", "MEMPURSUIT_TOKEN",
                      env={"MEMPURSUIT_TOKEN": "local-secret"}) as service:
        # the swap: the same client, another base URL (the api key is the service's token)
        co = cohere.ClientV2(api_key="local-secret", base_url=service.url)
        response = co.rerank(model="mempursuit", query=QUESTION, documents=FACTS, top_n=2)
        print("texts only (the service embeds them):")
        for r in response.results:
            print(f"  {r.relevance_score:.2f}  {FACTS[r.index]}")

        # a store's own vectors (here: embedded once, as a memory store keeps them)
        vectors = get_embedder("minilm").encode([QUESTION] + FACTS)
        response = co.rerank(
            model="mempursuit", query=QUESTION, documents=FACTS, top_n=2,
            request_options={"additional_body_parameters": {
                "query_vector": vectors[0].tolist(),
                "vectors": np.asarray(vectors[1:]).tolist()}})
        print(f"with the stored vectors ({response.meta.mempursuit['embedded']} texts embedded):")
        for r in response.results:
            print(f"  {r.relevance_score:.2f}  {FACTS[r.index]}")


if __name__ == "__main__":
    main()
