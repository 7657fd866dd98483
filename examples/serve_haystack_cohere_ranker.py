"""The read in a Haystack pipeline through Haystack's own ``CohereRanker``, configured by URL.

A config-only swap: ``CohereRanker(api_base_url=<mempursuit serve>)`` instead of Cohere's
service; the pipeline, the documents and the ranker's outputs stay as they were (the scores are
``1 / (1 + rank)`` in the read policy's order, docs/serve.md).

    # in the root of a checkout of mempursuit (until the first release: README, Install)
    pip install -e ".[serve,haystack]" cohere-haystack
    python examples/serve_haystack_cohere_ranker.py
"""

from haystack import Document
from haystack.utils import Secret
from haystack_integrations.components.rankers.cohere import CohereRanker

from mempursuit_serve.local import LocalService
from _sample import FACTS, QUESTION  # the sample memories (examples/_sample.py)


def main():
    with LocalService() as service:
        ranker = CohereRanker(model="mempursuit", top_k=2, api_key=Secret.from_token("unused"),
                              api_base_url=service.url)
        ranked = ranker.run(query=QUESTION, documents=[Document(content=f) for f in FACTS])
        for doc in ranked["documents"]:
            print(f"  {doc.score:.2f}  {doc.content}")


if __name__ == "__main__":
    main()
