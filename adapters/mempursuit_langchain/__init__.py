"""MemPursuit for LangChain: :class:`MemPursuitCompressor`, a ``BaseDocumentCompressor`` for
``ContextualCompressionRetriever``; :class:`MemPursuitRetriever`, a retriever over any
``VectorStore`` that fetches ``P`` candidates and returns ``K``; and
:class:`MemPursuitEmbeddings`, the packaged offline embedder as LangChain ``Embeddings``.

Importing this package does not import LangChain; the names below do.
"""

from mempursuit_core.adapter import lazy_exports

__all__ = ["MemPursuitCompressor", "MemPursuitEmbeddings", "MemPursuitRetriever"]


__getattr__, __dir__ = lazy_exports(globals(), {"MemPursuitCompressor": "compressor",
                                                "MemPursuitRetriever": "compressor",
                                                "MemPursuitEmbeddings": "embeddings"},
                                    needs={"*": "langchain_core"}, framework="LangChain",
                                    extra="langchain")
