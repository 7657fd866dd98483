"""MemPursuit for LangChain: :class:`MemPursuitCompressor`, a ``BaseDocumentCompressor`` for
``ContextualCompressionRetriever``, and :class:`MemPursuitRetriever`, a retriever over any
``VectorStore`` that fetches ``P`` candidates and returns ``K``.

Importing this package does not import LangChain; the names below do.
"""

from mempursuit_core.adapter import lazy_exports

__all__ = ["MemPursuitCompressor", "MemPursuitRetriever"]


__getattr__, __dir__ = lazy_exports(globals(), {name: "compressor" for name in __all__},
                                    needs={"*": "langchain_core"}, framework="LangChain",
                                    extra="langchain")
