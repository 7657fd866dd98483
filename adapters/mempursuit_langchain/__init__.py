"""MemPursuit for LangChain: :class:`MemPursuitCompressor`, a ``BaseDocumentCompressor`` for
``ContextualCompressionRetriever``; :class:`MemPursuitRetriever`, a retriever over any
``VectorStore`` that fetches ``P`` candidates and returns ``K``; and
:class:`MemPursuitEmbeddings`, the packaged offline embedder as LangChain ``Embeddings``.

Importing this package does not import LangChain; the names below do.
"""

from mempursuit_core.adapter import AdapterSpec, adapter_package

SPEC = AdapterSpec(
    name="langchain", framework="langchain_core", extra="langchain", label="LangChain",
    module="mempursuit_langchain.compressor",
    swap=("MemPursuitRetriever(vectorstore=store, k=10), or ContextualCompressionRetriever("
          "base_compressor=MemPursuitCompressor(k=10, vector_store=store), "
          "base_retriever=store.as_retriever(search_kwargs={'k': 200}))"),
    docs="docs/adapters/langchain.md",
    second_read=("the store's own filter on the title (InMemoryVectorStore, FAISS, Chroma), ANDed "
                 "with the retriever's filter"),
    summary=("LangChain: a document compressor and a VectorStore retriever that reorder P "
             "candidates"),
    exports={"MemPursuitCompressor": "compressor", "MemPursuitRetriever": "compressor",
             "MemPursuitEmbeddings": "embeddings"},
)

__all__, __getattr__, __dir__, register_adapters = adapter_package(globals(), SPEC)
