"""LangChain's standard retriever tests (``langchain-tests``) on the MemPursuit retrievers.

``langchain_tests.integration_tests.RetrieversIntegrationTests`` is LangChain's conformance
suite for retrievers, used as LangChain documents it: subclassed, with the retriever's
constructor, its parameters and an example query; nothing of it overridden (its own
``test_no_overrides_DO_NOT_OVERRIDE`` checks that). Version: the one pinned in
``.ci/requirements-langchain.txt``. Run against

* :class:`MemPursuitRetriever` over an ``InMemoryVectorStore``, and
* a ``ContextualCompressionRetriever`` whose compressor is :class:`MemPursuitCompressor`,

each under the default policy (``strict=True``: a read the policy could not make raises instead
of quietly answering with the store's own order) and under ``policy="native"``. The store holds
twelve short notes embedded with the packaged MiniLM (int8 ONNX, offline).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import pytest

pytest.importorskip("langchain_core", reason='needs pip install -e ".[langchain]"')
pytest.importorskip("langchain_classic", reason='needs pip install -e ".[langchain]"')
pytest.importorskip("langchain_tests", reason="needs .ci/requirements-langchain.txt")

from langchain_classic.retrievers import ContextualCompressionRetriever  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore  # noqa: E402
from langchain_tests.integration_tests import RetrieversIntegrationTests  # noqa: E402

from mempursuit_langchain import MemPursuitCompressor, MemPursuitRetriever  # noqa: E402

NOTES = [
    "Alice adopted a grey cat named Miso last spring.",
    "Miso the cat sleeps on the radiator every afternoon.",
    "Alice's cat Miso is afraid of the vacuum cleaner.",
    "Bob is training for the Berlin marathon in September.",
    "Bob runs forty kilometres a week along the canal.",
    "The team moved the weekly meeting to Thursday mornings.",
    "Carol is learning Portuguese before her trip to Lisbon.",
    "Carol booked a flat near the river in Lisbon for June.",
    "The office coffee machine was replaced with an espresso maker.",
    "Dan keeps a vegetable garden with tomatoes and beans.",
    "Dan's tomatoes were ruined by a late frost in May.",
    "Eve plays the cello in a community orchestra.",
]
QUERY = "What do we know about Alice's cat?"


class MiniLM(Embeddings):
    """The packaged all-MiniLM-L6-v2 (int8 ONNX, mempursuit_core.embed) as LangChain Embeddings."""

    def __init__(self) -> None:
        from mempursuit_core.embed import get_embedder

        self.encoder = get_embedder("minilm", threads=1)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.encoder.encode(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.encoder.encode([text])[0].tolist()


@lru_cache(maxsize=1)
def notes_store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(MiniLM())
    store.add_documents([Document(page_content=n, metadata={"n": i}) for i, n in enumerate(NOTES)])
    return store


def compression_retriever(*, k: int = 4, policy: Any = None, strict: bool = True
                          ) -> BaseRetriever:
    """``ContextualCompressionRetriever(MemPursuitCompressor(k), the store's top 200)``."""
    store = notes_store()
    return ContextualCompressionRetriever(
        base_compressor=MemPursuitCompressor(k=k, policy=policy, strict=strict,
                                             vector_store=store),
        base_retriever=store.as_retriever(search_kwargs={"k": 200}))


class TestMemPursuitRetriever(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[MemPursuitRetriever]:
        return MemPursuitRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"vectorstore": notes_store(), "k": 2, "strict": True}

    @property
    def retriever_query_example(self) -> str:
        return QUERY


class TestMemPursuitRetrieverNative(TestMemPursuitRetriever):
    @property
    def retriever_constructor_params(self) -> dict:
        return {"vectorstore": notes_store(), "k": 2, "policy": "native"}


class TestCompressionRetriever(RetrieversIntegrationTests):
    """``ContextualCompressionRetriever`` hands ``invoke(query, k=n)`` to its base retriever
    only (the compressor never sees it), so a call returns ``min(n, compressor k)`` documents:
    the fixture's compressor keeps 4 (LangChain's default ``k``), above the suite's 1 and 3."""

    @property
    def retriever_constructor(self) -> Any:
        return compression_retriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"k": 4}

    @property
    def retriever_query_example(self) -> str:
        return QUERY


class TestCompressionRetrieverNative(TestCompressionRetriever):
    @property
    def retriever_constructor_params(self) -> dict:
        return {"k": 4, "policy": "native"}
