"""Registers the LangChain adapter (imports cleanly without LangChain)."""

from mempursuit_core.adapter import AdapterSpec, hookimpl

SPEC = AdapterSpec(
    name="langchain",
    module="mempursuit_langchain.compressor",
    framework="langchain_core",
    extra="langchain",
    swap=("MemPursuitRetriever(vectorstore=store, k=10), or ContextualCompressionRetriever("
          "base_compressor=MemPursuitCompressor(k=10, vector_store=store), "
          "base_retriever=store.as_retriever(search_kwargs={'k': 200}))"),
    docs="docs/adapters/langchain.md",
    second_read=("the store's own filter on the title (InMemoryVectorStore, FAISS, Chroma), ANDed "
                 "with the retriever's filter"),
    summary="LangChain: a document compressor and a VectorStore retriever that reorder P candidates",
)


@hookimpl
def register_adapters(register):
    register(SPEC)
