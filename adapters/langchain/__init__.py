"""MemPursuit for LangChain: :class:`MemPursuitCompressor`, a ``BaseDocumentCompressor`` for
``ContextualCompressionRetriever``, and :class:`MemPursuitRetriever`, a retriever over any
``VectorStore`` that fetches ``P`` candidates and returns ``K``.

Importing this package does not import LangChain; the names below do.
"""

__all__ = ["MemPursuitCompressor", "MemPursuitRetriever"]


def __getattr__(name):
    if name in __all__:
        from . import compressor

        return getattr(compressor, name)
    raise AttributeError(f"module 'mempursuit_langchain' has no attribute {name!r}")
