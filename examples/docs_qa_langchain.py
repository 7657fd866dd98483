"""Doc QA with LangChain and MemPursuit: a two-file question over a small handbook, offline.

``examples/data/handbook/`` is a fictional company's handbook, 13 short Markdown files, one
LangChain ``Document`` per paragraph (``source`` metadata, as LangChain's loaders set it), in an
``InMemoryVectorStore`` with the packaged all-MiniLM-L6-v2 (int8 ONNX) as ``Embeddings``
through ``MemPursuitEmbeddings``; no LLM, no download; it runs in seconds.

The question needs two files: three of them say that the Travel Desk books trips over 500
euros, and only ``travel-desk.md`` (which they name) gives the phone extension. LangChain's own
top 3 are that rule (``expense-claims.md``), hotel costs and benefits: no extension. The
default read policy, choosing 3 of the store's top 200, keeps the rule and ``travel-desk.md``: the
documents' file names are their titles, and once the rule's chunk is picked, the file it
names (the Travel Desk) is raised (the default's ``bridge``).
It prints, for each retriever, the file and text of its 3 documents
and whether the answer's extension (4410) is among them::

    LangChain alone (k=3): extension 4410 found: False
    MemPursuitRetriever (top 200 -> 3): extension 4410 found: True
    compressor (top 200 -> 3): extension 4410 found: True

Run it::

    # in the root of a checkout of mempursuit (until the first release: README, Install)
    pip install -e ".[langchain]"
    python examples/docs_qa_langchain.py

The swaps::

    MemPursuitRetriever(vectorstore=store, k=3)   # was store.as_retriever(search_kwargs={"k": 3})
    ContextualCompressionRetriever(
        base_compressor=MemPursuitCompressor(k=3, vector_store=store, whole_store=True),
        base_retriever=store.as_retriever(search_kwargs={"k": 200}))

(the compressor cannot see the base retriever's filter: ``whole_store=True`` says the store
holds one corpus; a store shared by users takes ``filter=``, the base retriever's own)
"""

from pathlib import Path

from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

from mempursuit_langchain import MemPursuitCompressor, MemPursuitEmbeddings, MemPursuitRetriever
from _sample import HANDBOOK_QUESTION as QUESTION, handbook_paragraphs  # examples/_sample.py

K = 3


def load_handbook() -> list[Document]:
    """One Document per paragraph of the handbook, with its file as ``source``."""
    return [Document(page_content=para, metadata={"source": str(path)})
            for path, para in handbook_paragraphs()]


def main() -> None:
    store = InMemoryVectorStore(MemPursuitEmbeddings())
    store.add_documents(load_handbook())
    retrievers = {
        f"LangChain alone (k={K})": store.as_retriever(search_kwargs={"k": K}),
        f"MemPursuitRetriever (top 200 -> {K})": MemPursuitRetriever(vectorstore=store, k=K),
        f"compressor (top 200 -> {K})": ContextualCompressionRetriever(
            base_compressor=MemPursuitCompressor(k=K, vector_store=store, whole_store=True),
            base_retriever=store.as_retriever(search_kwargs={"k": 200})),
    }
    print(QUESTION)
    for name, retriever in retrievers.items():
        docs = retriever.invoke(QUESTION)
        print(f"\n{name}: extension 4410 found: {any('4410' in d.page_content for d in docs)}")
        for d in docs:
            print(f"  [{Path(d.metadata['source']).name}] {d.page_content}")


if __name__ == "__main__":
    main()
