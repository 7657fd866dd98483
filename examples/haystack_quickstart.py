"""MemPursuit in Haystack: a ranker component after the retriever, offline.

An ``InMemoryDocumentStore`` with the packaged all-MiniLM-L6-v2 (int8 ONNX) as Haystack
embedder components, no LLM. It compares the retriever's own top 2 with the 2 documents the
default read policy picks from the retriever's top 200.

    # in the root of a checkout of mempursuit (until the first release: README, Install)
    pip install -e ".[haystack]"
    python examples/haystack_quickstart.py

The swap (after a retriever asked for the pool, with its documents' embeddings)::

    pipeline.add_component("ranker", MemPursuitRanker(top_k=10))
    pipeline.connect("retriever.documents", "ranker.documents")
"""

import os

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # before importing haystack

from haystack import Document, Pipeline  # noqa: E402
from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever  # noqa: E402
from haystack.document_stores.in_memory import InMemoryDocumentStore  # noqa: E402

from mempursuit_haystack import (MemPursuitDocumentEmbedder, MemPursuitRanker,  # noqa: E402
                                 MemPursuitTextEmbedder)
from _sample import FACTS, QUESTION  # noqa: E402  # the sample memories (examples/_sample.py)


def pipeline(store, ranker=None):
    """Embed the query, retrieve; with a ranker: retrieve 200 and let it keep 2."""
    p = Pipeline()
    p.add_component("embedder", MemPursuitTextEmbedder())
    p.add_component("retriever", InMemoryEmbeddingRetriever(
        store, top_k=2 if ranker is None else 200, return_embedding=True))
    p.connect("embedder.embedding", "retriever.query_embedding")
    if ranker is not None:
        p.add_component("ranker", ranker)  # the one-line swap, and its connections
        p.connect("retriever.documents", "ranker.documents")
        p.connect("embedder.embedding", "ranker.query_embedding")
    return p


def main():
    store = InMemoryDocumentStore()
    store.write_documents(MemPursuitDocumentEmbedder().run(
        [Document(content=f) for f in FACTS])["documents"])
    print(QUESTION)
    for name, ranker in [("Haystack alone", None), ("MemPursuitRanker", MemPursuitRanker(top_k=2))]:
        p = pipeline(store, ranker)
        data = {"embedder": {"text": QUESTION}}
        if ranker is not None:
            data["ranker"] = {"query": QUESTION}
        out = p.run(data)
        print(f"\n{name}:")
        for doc in out["ranker" if ranker is not None else "retriever"]["documents"]:
            print(" ", doc.content)


if __name__ == "__main__":
    main()
