"""MemPursuit in LangChain: a document compressor and a vector-store retriever, offline.

An ``InMemoryVectorStore`` with the packaged all-MiniLM-L6-v2 (int8 ONNX) as LangChain
``Embeddings``, no LLM. It compares the store's own top 2 with the 2 documents the default read
policy picks from its top 200, both ways.

    # in the root of a checkout of mempursuit (until the first release: README, Install)
    pip install -e ".[langchain]"
    python examples/langchain_quickstart.py

The swaps::

    ContextualCompressionRetriever(base_compressor=MemPursuitCompressor(k=10, vector_store=store),
                                   base_retriever=store.as_retriever(search_kwargs={"k": 200}))
    MemPursuitRetriever(vectorstore=store, k=10)   # was store.as_retriever(search_kwargs={"k": 10})
"""

from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.vectorstores import InMemoryVectorStore

from mempursuit_langchain import MemPursuitCompressor, MemPursuitEmbeddings, MemPursuitRetriever
from _sample import FACTS, QUESTION  # the sample memories (examples/_sample.py)


def main():
    store = InMemoryVectorStore.from_texts(FACTS, MemPursuitEmbeddings())
    retrievers = {
        "LangChain alone": store.as_retriever(search_kwargs={"k": 2}),
        "compressor": ContextualCompressionRetriever(
            base_compressor=MemPursuitCompressor(k=2, vector_store=store),
            base_retriever=store.as_retriever(search_kwargs={"k": 200})),
        "retriever": MemPursuitRetriever(vectorstore=store, k=2),
    }
    print(QUESTION)
    for name, retriever in retrievers.items():
        print(f"\n{name}:")
        for doc in retriever.invoke(QUESTION):
            print(" ", doc.page_content)


if __name__ == "__main__":
    main()
